// Memory-aware scheduling of a graph before IRGen (after Glow's
// child-memory-size scheduler): a depth-first walk from the outputs that
// evaluates the operand whose subgraph needs the most memory first, so that
// large subgraphs finish, and free their temporaries, before small results
// are held live across them.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ember/IR.h"

namespace ember {

namespace {

uint64_t resultBytes(const Node* n) {
  if (n->info().category == OpCategory::Storage) return 0;  // not an activation
  uint64_t bytes = 0;
  for (const Type& t : n->resultTypes()) bytes += t.sizeInBytes();
  return bytes;
}

}  // namespace

std::vector<Node*> memoryAwareOrder(const Function& function) {
  std::vector<Node*> topo = function.topologicalOrder();
  // Peak memory to compute each node's subgraph, estimated bottom-up: its own
  // result plus the largest operand subgraph (a tree approximation of the DAG).
  std::unordered_map<const Node*, uint64_t> need;
  for (const Node* n : topo) {
    uint64_t operands = 0, peak = 0;
    for (const NodeValue& in : n->inputs()) {
      peak = std::max(peak, operands + need[in.node]);
      operands += resultBytes(in.node);
    }
    need[n] = std::max(peak, operands + resultBytes(n));
  }

  std::vector<Node*> order;
  order.reserve(topo.size());
  std::unordered_set<const Node*> done;
  // Iterative DFS: (node, sorted operands, next operand index).
  struct Frame {
    Node* node;
    std::vector<Node*> operands;
    size_t next = 0;
  };
  auto makeFrame = [&](Node* n) {
    Frame f{n, {}, 0};
    for (const NodeValue& in : n->inputs()) f.operands.push_back(in.node);
    std::stable_sort(f.operands.begin(), f.operands.end(),
                     [&](const Node* a, const Node* b) { return need[a] > need[b]; });
    return f;
  };
  auto visit = [&](Node* root) {
    if (done.count(root)) return;
    std::vector<Frame> stack{makeFrame(root)};
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.operands.size()) {
        Node* in = top.operands[top.next++];
        if (!done.count(in)) stack.push_back(makeFrame(in));
        continue;
      }
      if (done.insert(top.node).second) order.push_back(top.node);
      stack.pop_back();
    }
  };
  for (const auto& [name, v] : function.outputs()) visit(v.node);
  for (Node* n : topo) visit(n);  // anything not feeding an output, in original order
  return order;
}

}  // namespace ember
