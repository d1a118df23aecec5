// CSE: merges nodes that compute the same thing: equal kind, inputs,
// attributes and result types. Constants merge when their payloads are
// bitwise equal (compared by content, not by name). Placeholders never merge.
#include <bit>
#include <cstring>
#include <unordered_map>

#include "PassUtils.h"
#include "ember/Pass.h"

namespace ember {
namespace {

uint64_t hashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

/// A bucket key for a constant's payload, word by word in four independent
/// chains. Not Tensor::hash: that one is byte-serial (its value keys
/// quantization profiles) and several times slower on the weights; a bucket
/// only needs a key, sameComputation compares the bytes.
uint64_t payloadKey(const Tensor& payload) {
  constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ull;
  const auto* bytes = static_cast<const unsigned char*>(payload.data());
  const size_t size = bytes ? payload.sizeInBytes() : 0;
  uint64_t chains[4] = {1, 2, 3, 4};
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int c = 0; c < 4; ++c) {
      uint64_t word;
      std::memcpy(&word, bytes + i + 8 * c, 8);
      chains[c] = std::rotl(chains[c] ^ word, 29) * kMultiplier;
    }
  uint64_t h = hashCombine(uint64_t(payload.type().kind), size);
  for (; i < size; ++i) h = hashCombine(h, bytes[i]);
  for (uint64_t c : chains) h = hashCombine(h, c);
  for (int64_t d : payload.type().dims) h = hashCombine(h, uint64_t(d));
  return h;
}

uint64_t nodeHash(const Node& node) {
  uint64_t h = hashCombine(0, uint64_t(node.kind()));
  if (node.isConstant()) return hashCombine(h, payloadKey(node.payload()));
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
