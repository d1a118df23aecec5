// Finds the f32 subgraphs that the quantizer replaces with one integer-only
// transformer op (docs/quantization.md 5): LayerNorm and GELU as PyTorch's
// ONNX exporter decomposes them, and a Softmax behind an additive -inf mask.
// Matching reads the graph's structure, reduction axes, constant values and
// single uses, never coincidences of shapes.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/Graph.h"

namespace ember {

struct TransformerPattern {
  enum class Kind { LayerNorm, Gelu, MaskedSoftmax };
  /// A pattern of `kind` reading `input`, the rest filled in by its matcher.
  static TransformerPattern of(Kind kind, NodeValue input) {
    TransformerPattern p;
    p.kind = kind;
    p.input = input;
    return p;
  }
  Kind kind = Kind::LayerNorm;
  NodeValue input;           ///< the one f32 tensor the subgraph reads (x, or the scores)
  Node* last = nullptr;      ///< its result is the pattern's result
  std::vector<Node*> nodes;  ///< every node of the subgraph, `last` included
  // LayerNorm: normalised over [axis, rank); gamma and beta have one value per
  // normalised element (ones and zeros when the decomposition has no affine).
  int64_t axis = -1;
  double epsilon = 0;
  std::vector<float> gamma, beta;
  // MaskedSoftmax: keep[i] is false where the additive mask is -inf (or
  // <= -1e4), laid out as maskDims, which broadcast to the scores.
  std::vector<bool> keep;
  Dims maskDims;
  std::string describe() const;
};

/// Every decomposed LayerNorm, GELU (erf and tanh forms) and masked Softmax of
/// `f`. The intermediate nodes of a pattern have no use outside it and are no
/// output of the function.
std::vector<TransformerPattern> findTransformerPatterns(
    const Function& f, const std::unordered_map<const Node*, std::vector<Use>>& uses,
    const std::unordered_set<const Node*>& outputs);

}  // namespace ember
