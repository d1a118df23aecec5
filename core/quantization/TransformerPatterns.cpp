// Structural matching of the decomposed LayerNorm and GELU that PyTorch's ONNX
// exporter emits, and of Softmax behind an additive -inf mask
// (TransformerPatterns.h).
#include "TransformerPatterns.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "ember/OpAttrs.h"

namespace ember {
namespace {

using Uses = std::unordered_map<const Node*, std::vector<Use>>;

class Matcher {
 public:
  Matcher(const Uses& uses, const std::unordered_set<const Node*>& outputs)
      : uses_(uses), outputs_(outputs) {}

  std::optional<TransformerPattern> layerNorm(Node* mean) const;
  std::optional<TransformerPattern> geluErf(Node* erf) const;
  std::optional<TransformerPattern> geluTanh(Node* tanh) const;
  std::optional<TransformerPattern> maskedSoftmax(Node* softmax) const;

 private:
  /// The one user of `node` when it has exactly one use and is no output.
  Node* onlyUser(const Node* node) const {
    auto it = uses_.find(node);
    if (outputs_.count(node) || it == uses_.end() || it->second.size() != 1) return nullptr;
    return it->second[0].user;
  }
  /// The onward steps of GELU once `onePlus` = 1 + erf(...) or 1 + tanh(...)
  /// is found: x * onePlus * 0.5 in any of the exporter's three groupings.
  Node* geluTail(Node* onePlus, NodeValue x, std::vector<Node*>& nodes) const;
  /// A LayerNorm pattern's optional affine after its Div: Mul by a constant
  /// gamma, then Add of a constant beta (gamma 1 and beta 0 when absent).
  void absorbAffine(TransformerPattern& p) const;

  const Uses& uses_;
  const std::unordered_set<const Node*>& outputs_;
};

std::optional<double> scalarConstant(NodeValue v) {
  if (!v.node->isConstant() || v.type().kind != ElemKind::F32 || v.type().numElements() != 1)
    return std::nullopt;
  return double(v.node->payload().as<float>()[0]);
}

bool isScalar(NodeValue v, double expected) {
  std::optional<double> c = scalarConstant(v);
  return c && std::fabs(*c - expected) <= 1e-4 * std::fabs(expected);
}

/// For a binary node with `known` as one operand, the other operand.
std::optional<NodeValue> otherOperand(const Node* binary, NodeValue known) {
  if (binary->numInputs() != 2) return std::nullopt;
  if (binary->input(0) == known) return binary->input(1);
  if (binary->input(1) == known) return binary->input(0);
  return std::nullopt;
}

/// `binary` is kind(v, c) (or kind(c, v) when commutative) with scalar c == expected.
bool isBinaryWithScalar(const Node* binary, OpKind kind, NodeValue v, double expected) {
  if (!binary || binary->kind() != kind) return false;
  if (binary->input(0) == v && isScalar(binary->input(1), expected)) return true;
  return binary->info().traits & OpTrait::Commutative && binary->input(1) == v &&
         isScalar(binary->input(0), expected);
}

/// Half of v: Mul(v, 0.5) or Div(v, 2).
bool isHalfOf(const Node* node, NodeValue v) {
  return isBinaryWithScalar(node, OpKind::Mul, v, 0.5) || isBinaryWithScalar(node, OpKind::Div, v, 2.0);
}

std::vector<int64_t> normalizedAxes(std::vector<int64_t> axes, size_t rank) {
  for (int64_t& a : axes)
    if (a < 0) a += int64_t(rank);
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// The sorted, non-negative axes of `node` when it is a ReduceMean that keeps
/// its dims over an input of `rank`; otherwise nullopt.
std::optional<std::vector<int64_t>> keepDimsMeanAxes(const Node* node, size_t rank) {
  if (!node || node->kind() != OpKind::ReduceMean) return std::nullopt;
  const ReduceMeanAttrs reduce = node->attrs<ReduceMeanAttrs>();
  if (reduce.keepdims != 1) return std::nullopt;
  return normalizedAxes(reduce.axes, rank);
}

/// The values of f32 constant `c` per element of dims[axis, rank) when `c`
/// broadcasts to `dims` without expanding it and is constant along the axes
/// before `axis`; otherwise nullopt.
std::optional<std::vector<float>> perNormalizedElement(NodeValue c, const Dims& dims, size_t axis) {
  if (!c.node->isConstant() || c.type().kind != ElemKind::F32) return std::nullopt;
  const Dims& cd = c.type().dims;
  if (cd.size() > dims.size()) return std::nullopt;
  const size_t lead = dims.size() - cd.size();
  Dims strides(dims.size(), 0);
  int64_t stride = 1;
  for (size_t i = cd.size(); i-- > 0;) {
    const size_t axisOfDims = lead + i;
    if (cd[i] != 1 && cd[i] != dims[axisOfDims]) return std::nullopt;
    if (cd[i] != 1 && axisOfDims < axis) return std::nullopt;  // varies across rows
    strides[axisOfDims] = cd[i] == 1 ? 0 : stride;
    stride *= cd[i];
  }
  int64_t count = 1;
  for (size_t a = axis; a < dims.size(); ++a) count *= dims[a];
  std::vector<float> values(static_cast<size_t>(count));
  const float* data = c.node->payload().as<float>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t a = dims.size(); a-- > axis;) {
      offset += (rest % dims[a]) * strides[a];
      rest /= dims[a];
    }
    values[size_t(i)] = data[offset];
  }
  return values;
}

/// ReduceMean(x) -> Sub(x, mean) -> Pow(., 2) -> ReduceMean -> Add(eps) -> Sqrt
/// -> Div(sub, sqrt) [-> Mul(gamma)] [-> Add(beta)], over trailing axes.
std::optional<TransformerPattern> Matcher::layerNorm(Node* mean) const {
  if (mean->kind() != OpKind::ReduceMean) return std::nullopt;
  const NodeValue x = mean->input(0);
  const size_t rank = x.type().rank();
  if (x.type().kind != ElemKind::F32 || x.node->isConstant() || rank == 0) return std::nullopt;
  const std::optional<std::vector<int64_t>> meanAxes = keepDimsMeanAxes(mean, rank);
  if (!meanAxes) return std::nullopt;
  const std::vector<int64_t>& axes = *meanAxes;
  if (axes.empty() || axes.back() != int64_t(rank) - 1) return std::nullopt;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return std::nullopt;  // not the trailing block [axis, rank)
  TransformerPattern p = TransformerPattern::of(TransformerPattern::Kind::LayerNorm, x);
  p.axis = axes.front();
  Node* sub = onlyUser(mean);
  if (!sub || sub->kind() != OpKind::Sub || sub->input(0) != x || sub->input(1) != NodeValue(mean))
    return std::nullopt;
  auto subUses = uses_.find(sub);
  if (outputs_.count(sub) || subUses == uses_.end() || subUses->second.size() != 2) return std::nullopt;
  Node *pow = nullptr, *div = nullptr;
  for (const Use& u : subUses->second) {
    if (u.user->kind() == OpKind::Pow && u.operand == 0 && isScalar(u.user->input(1), 2.0)) pow = u.user;
    if (u.user->kind() == OpKind::Div && u.operand == 0) div = u.user;
  }
  if (!pow || !div) return std::nullopt;
  Node* variance = onlyUser(pow);
  if (keepDimsMeanAxes(variance, rank) != axes) return std::nullopt;
  Node* addEps = onlyUser(variance);
  if (!addEps || addEps->kind() != OpKind::Add) return std::nullopt;
  std::optional<NodeValue> eps = otherOperand(addEps, NodeValue(variance));
  std::optional<double> epsilon = eps ? scalarConstant(*eps) : std::nullopt;
  if (!epsilon || !(*epsilon >= 0)) return std::nullopt;
  p.epsilon = *epsilon;
  Node* sqrt = onlyUser(addEps);
  if (!sqrt || sqrt->kind() != OpKind::Sqrt || onlyUser(sqrt) != div || div->input(1) != NodeValue(sqrt))
    return std::nullopt;
  p.nodes = {mean, sub, pow, variance, addEps, sqrt, div};
  p.last = div;
  absorbAffine(p);
  if (p.last->resultType().dims != x.type().dims) return std::nullopt;
  return p;
}

void Matcher::absorbAffine(TransformerPattern& p) const {
  const Dims& dims = p.input.type().dims;
  int64_t n = 1;
  for (size_t a = size_t(p.axis); a < dims.size(); ++a) n *= dims[a];
  p.gamma.assign(size_t(n), 1.0f);
  p.beta.assign(size_t(n), 0.0f);
  // The optional affine: Mul by a constant gamma, then Add of a constant beta.
  if (Node* mul = onlyUser(p.last); mul && mul->kind() == OpKind::Mul && mul->resultType().dims == dims) {
    if (auto other = otherOperand(mul, NodeValue(p.last)))
      if (auto gamma = perNormalizedElement(*other, dims, size_t(p.axis))) {
        p.gamma = std::move(*gamma);
        p.nodes.push_back(mul);
        p.last = mul;
      }
  }
  if (Node* add = onlyUser(p.last); add && add->kind() == OpKind::Add && add->resultType().dims == dims) {
    if (auto other = otherOperand(add, NodeValue(p.last)))
      if (auto beta = perNormalizedElement(*other, dims, size_t(p.axis))) {
        p.beta = std::move(*beta);
        p.nodes.push_back(add);
        p.last = add;
      }
  }
}

Node* Matcher::geluTail(Node* onePlus, NodeValue x, std::vector<Node*>& nodes) const {
  Node* u = onlyUser(onePlus);
  if (!u || u->kind() != OpKind::Mul) return nullptr;
  std::optional<NodeValue> other = otherOperand(u, NodeValue(onePlus));
  if (!other) return nullptr;
  if (*other == x) {  // (x * (1 + f)) * 0.5
    Node* v = onlyUser(u);
    if (!isHalfOf(v, NodeValue(u))) return nullptr;
    nodes.insert(nodes.end(), {onePlus, u, v});
    return v;
  }
  if (isHalfOf(other->node, x) && onlyUser(other->node) == u) {  // (x * 0.5) * (1 + f)
    nodes.insert(nodes.end(), {onePlus, other->node, u});
    return u;
  }
  if (isHalfOf(u, NodeValue(onePlus))) {  // x * ((1 + f) * 0.5)
    Node* v = onlyUser(u);
    if (!v || v->kind() != OpKind::Mul || otherOperand(v, NodeValue(u)) != std::optional<NodeValue>(x))
      return nullptr;
    nodes.insert(nodes.end(), {onePlus, u, v});
    return v;
  }
  return nullptr;
}

/// x * 0.5 * (1 + erf(x / sqrt2)).
std::optional<TransformerPattern> Matcher::geluErf(Node* erf) const {
  if (erf->kind() != OpKind::Erf) return std::nullopt;
  Node* scaled = erf->input(0).node;
  if (onlyUser(scaled) != erf || scaled->numInputs() != 2) return std::nullopt;
  NodeValue x;
  if (scaled->kind() == OpKind::Div && isScalar(scaled->input(1), std::numbers::sqrt2)) {
    x = scaled->input(0);
  } else if (scaled->kind() == OpKind::Mul) {
    for (size_t i = 0; i < 2; ++i)
      if (isScalar(scaled->input(1 - i), 1 / std::numbers::sqrt2)) x = scaled->input(i);
  }
  if (!x || x.node->isConstant() || x.type().kind != ElemKind::F32) return std::nullopt;
  Node* onePlus = onlyUser(erf);
  if (!isBinaryWithScalar(onePlus, OpKind::Add, NodeValue(erf), 1.0)) return std::nullopt;
  TransformerPattern p = TransformerPattern::of(TransformerPattern::Kind::Gelu, x);
  p.nodes = {scaled, erf};
  p.last = geluTail(onePlus, x, p.nodes);
  if (!p.last || p.last->resultType().dims != x.type().dims) return std::nullopt;
  return p;
}

/// x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
std::optional<TransformerPattern> Matcher::geluTanh(Node* tanh) const {
  if (tanh->kind() != OpKind::Tanh) return std::nullopt;
  Node* arg = tanh->input(0).node;
  if (onlyUser(arg) != tanh || arg->kind() != OpKind::Mul) return std::nullopt;
  const double sqrt2OverPi = std::sqrt(2 / std::numbers::pi);
  Node* inner = nullptr;
  for (size_t i = 0; i < 2; ++i)
    if (isScalar(arg->input(1 - i), sqrt2OverPi)) inner = arg->input(i).node;
  if (!inner || inner->kind() != OpKind::Add || onlyUser(inner) != arg) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const NodeValue x = inner->input(i);
    Node* term = inner->input(1 - i).node;
    if (x.node->isConstant() || x.type().kind != ElemKind::F32 || onlyUser(term) != inner ||
        term->kind() != OpKind::Mul)
      continue;
    Node* cube = nullptr;
    for (size_t j = 0; j < 2; ++j)
      if (isScalar(term->input(1 - j), 0.044715)) cube = term->input(j).node;
    if (!cube || onlyUser(cube) != term) continue;
    std::vector<Node*> nodes;
    if (isBinaryWithScalar(cube, OpKind::Pow, x, 3.0)) {
      nodes = {cube};
    } else if (cube->kind() == OpKind::Mul) {  // (x * x) * x
      auto square = otherOperand(cube, x);
      if (!square || square->node->kind() != OpKind::Mul || square->node->input(0) != x ||
          square->node->input(1) != x || onlyUser(square->node) != cube)
        continue;
      nodes = {square->node, cube};
    } else {
      continue;
    }
    Node* onePlus = onlyUser(tanh);
    if (!isBinaryWithScalar(onePlus, OpKind::Add, NodeValue(tanh), 1.0)) return std::nullopt;
    TransformerPattern p = TransformerPattern::of(TransformerPattern::Kind::Gelu, x);
    p.nodes = nodes;
    p.nodes.insert(p.nodes.end(), {term, inner, arg, tanh});
    p.last = geluTail(onePlus, x, p.nodes);
    if (!p.last || p.last->resultType().dims != x.type().dims) return std::nullopt;
    return p;
  }
  return std::nullopt;
}

/// Softmax(Add(scores, mask)) with a constant mask of 0 and -inf (or <= -1e4)
/// that broadcasts to the scores: the masked positions get probability 0.
std::optional<TransformerPattern> Matcher::maskedSoftmax(Node* softmax) const {
  if (softmax->kind() != OpKind::Softmax) return std::nullopt;
  Node* add = softmax->input(0).node;
  if (add->kind() != OpKind::Add || onlyUser(add) != softmax) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const NodeValue mask = add->input(i), scores = add->input(1 - i);
    if (!mask.node->isConstant() || mask.type().kind != ElemKind::F32 || scores.node->isConstant() ||
        scores.type().kind != ElemKind::F32 || add->resultType().dims != scores.type().dims)
      continue;
    const float* values = mask.node->payload().as<float>();
    const int64_t n = mask.type().numElements();
    TransformerPattern p = TransformerPattern::of(TransformerPattern::Kind::MaskedSoftmax, scores);
    p.keep.resize(size_t(n));
    bool valid = true, anyMasked = false;
    for (int64_t k = 0; k < n && valid; ++k) {
      const bool masked = values[k] <= -1e4f;  // -inf included
      valid = masked || values[k] == 0.0f;
      anyMasked = anyMasked || masked;
      p.keep[size_t(k)] = !masked;
    }
    if (!valid || !anyMasked) continue;
    p.maskDims = mask.type().dims;
    p.nodes = {add, softmax};
    p.last = softmax;
    p.axis = softmax->attrs<SoftmaxAttrs>().axis;
    return p;
  }
  return std::nullopt;
}

}  // namespace

std::string TransformerPattern::describe() const {
  switch (kind) {
    case Kind::LayerNorm:
      return "LayerNorm decomposition";
    case Kind::Gelu:
      return "GELU decomposition";
    case Kind::MaskedSoftmax:
      return "masked Softmax";
  }
  return "";
}

std::vector<TransformerPattern> findTransformerPatterns(const Function& f, const Uses& uses,
                                                        const std::unordered_set<const Node*>& outputs) {
  Matcher match(uses, outputs);
  std::vector<TransformerPattern> patterns;
  std::unordered_set<const Node*> taken;
  for (Node* node : f.topologicalOrder()) {
    if (taken.count(node)) continue;
    std::optional<TransformerPattern> p;
    switch (node->kind()) {
      case OpKind::ReduceMean:
        p = match.layerNorm(node);
        break;
      case OpKind::Erf:
        p = match.geluErf(node);
        break;
      case OpKind::Tanh:
        p = match.geluTanh(node);
        break;
      case OpKind::Softmax:
        p = match.maskedSoftmax(node);
        break;
      default:
        break;
    }
    if (!p) continue;
    if (std::any_of(p->nodes.begin(), p->nodes.end(), [&](Node* n) { return taken.count(n) > 0; })) continue;
    taken.insert(p->nodes.begin(), p->nodes.end());
    patterns.push_back(std::move(*p));
  }
  return patterns;
}

}  // namespace ember
