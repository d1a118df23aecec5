// CSE: merges nodes that compute the same thing: equal kind, inputs,
// attributes and result types. Constants merge when their payloads are
// bitwise equal (compared by content, not by name). Placeholders never merge.
#include <unordered_map>

#include "PassUtils.h"
#include "ember/Pass.h"

namespace ember {
namespace {

uint64_t hashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

uint64_t nodeHash(const Node& node) {
  uint64_t h = hashCombine(0, uint64_t(node.kind()));
  if (node.isConstant()) return hashCombine(h, node.payload().hash());
  for (const NodeValue& input : node.inputs()) {
    h = hashCombine(h, std::hash<const void*>()(input.node));
    h = hashCombine(h, input.resNo);
  }
  h = hashCombine(h, node.attrs().hash());
  for (const Type& type : node.resultTypes()) {
    h = hashCombine(h, uint64_t(type.kind));
    for (int64_t d : type.dims) h = hashCombine(h, uint64_t(d));
  }
  return h;
}

bool sameComputation(const Node& a, const Node& b) {
  if (a.kind() != b.kind()) return false;
  if (a.isConstant()) return a.payload().bitwiseEqual(b.payload());
  return a.inputs() == b.inputs() && a.attrs() == b.attrs() && a.resultTypes() == b.resultTypes();
}

class CommonSubexpressionElimination : public FunctionPass {
 public:
  std::string name() const override { return "cse"; }

  Expected<bool> run(Function& function) override {
    // In topological order a node's inputs are already canonical when it is
    // visited, so one sweep merges whole duplicated chains.
    std::unordered_map<uint64_t, std::vector<Node*>> seen;
    bool changed = false;
    for (Node* node : function.topologicalOrder()) {
      if (node->isPlaceholder()) continue;
      auto& bucket = seen[nodeHash(*node)];
      Node* original = nullptr;
      for (Node* candidate : bucket)
        if (sameComputation(*candidate, *node)) {
          original = candidate;
          break;
        }
      if (!original) {
        bucket.push_back(node);
        continue;
      }
      for (unsigned i = 0; i < node->numResults(); ++i)
        function.replaceAllUsesWith(node->result(i), original->result(i));
      function.erase(node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<FunctionPass> createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace ember
