// Helpers shared by the graph passes (private to core/optimizer).
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace ember::optimizer {

/// Nodes whose results are function outputs (they are live whatever their uses).
std::unordered_set<const Node*> outputNodes(const Function& function);

/// Erases `roots` if they are dead (no uses, not an output, not a
/// Placeholder), then every input that becomes dead in turn.
void eraseIfDead(Function& function, const std::vector<Node*>& roots);

/// Replaces every use of `node`'s results by `replacements` (one per result),
/// erases it, and erases the inputs that became dead.
void replaceNode(Function& function, Node* node, const std::vector<NodeValue>& replacements);

bool isIdentityPermutation(const std::vector<int64_t>& perm);
/// Whether `perm` is a permutation of 0..rank-1.
bool isPermutation(const std::vector<int64_t>& perm, size_t rank);
std::vector<int64_t> inversePermutation(const std::vector<int64_t>& perm);

/// out.dims[i] = in.dims[perm[i]], moving raw elements (any element kind).
Tensor permuteTensor(const Tensor& input, const std::vector<int64_t>& perm);

/// A rank-0 tensor of `kind` holding `value` (quantization parameters default).
Tensor scalarTensor(ElemKind kind, double value);

}  // namespace ember::optimizer
