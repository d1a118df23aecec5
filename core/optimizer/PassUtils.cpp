#include "PassUtils.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>

namespace ember::optimizer {

std::unordered_set<const Node*> outputNodes(const Function& function) {
  std::unordered_set<const Node*> result;
  for (const auto& [name, value] : function.outputs()) result.insert(value.node);
  return result;
}

void eraseIfDead(Function& function, const std::vector<Node*>& roots) {
  auto uses = function.computeUses();
  const auto outputs = outputNodes(function);
  std::unordered_set<const Node*> erased;
  std::vector<Node*> worklist(roots.rbegin(), roots.rend());
  while (!worklist.empty()) {
    Node* node = worklist.back();
    worklist.pop_back();
    if (!node || erased.count(node) || node->isPlaceholder() || outputs.count(node)) continue;
    auto it = uses.find(node);
    if (it != uses.end() && !it->second.empty()) continue;
    std::vector<Node*> inputs;
    for (const NodeValue& input : node->inputs()) {
      // Drop this node's uses of its inputs so that they may become dead.
      auto& inputUses = uses[input.node];
      std::erase_if(inputUses, [&](const Use& use) { return use.user == node; });
      if (std::find(inputs.begin(), inputs.end(), input.node) == inputs.end()) inputs.push_back(input.node);
    }
    uses.erase(node);
    function.erase(node);
    erased.insert(node);
    for (Node* input : inputs) worklist.push_back(input);
  }
}

void replaceNode(Function& function, Node* node, const std::vector<NodeValue>& replacements) {
  assert(replacements.size() == node->numResults());
  for (unsigned i = 0; i < replacements.size(); ++i)
    function.replaceAllUsesWith(node->result(i), replacements[i]);
  eraseIfDead(function, {node});
}

bool isIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

bool isPermutation(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(rank) || seen[size_t(p)]) return false;
    seen[size_t(p)] = true;
  }
  return true;
}

std::vector<int64_t> inversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return inverse;
}

Tensor permuteTensor(const Tensor& input, const std::vector<int64_t>& perm) {
  const Type& inType = input.type();
  assert(isPermutation(perm, inType.rank()));
  Dims outDims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) outDims[i] = inType.dims[size_t(perm[i])];
  Tensor output(inType.withDims(outDims));
  const size_t elem = elemSize(inType.kind);
  const int64_t count = inType.numElements();
  const Dims inStrides = inType.strides();
  const size_t rank = perm.size();
  // Walk the output in row-major order, tracking the matching input offset.
  std::vector<int64_t> index(rank, 0);
  const auto* src = static_cast<const std::byte*>(input.data());
  auto* dst = static_cast<std::byte*>(output.data());
  for (int64_t o = 0; o < count; ++o) {
    int64_t inOffset = 0;
    for (size_t i = 0; i < rank; ++i) inOffset += index[i] * inStrides[size_t(perm[i])];
    std::memcpy(dst + size_t(o) * elem, src + size_t(inOffset) * elem, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < outDims[i]) break;
      index[i] = 0;
    }
  }
  return output;
}

Tensor scalarTensor(ElemKind kind, double value) {
  Tensor t(Type(kind, {}));
  t.setElementFromDouble(0, value);
  return t;
}

}  // namespace ember::optimizer
