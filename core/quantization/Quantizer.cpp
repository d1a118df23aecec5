// Conversion of an f32 graph to the int8 primitives of Ops.def with a
// calibration profile (docs/quantization.md, "Conversion"). Each node is
// replaced by its quantized form when the backend supports it; otherwise it
// stays float, fed by Dequantize and feeding Quantize. Model outputs stay f32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "TransformerPatterns.h"
#include "WeightQuantization.h"
#include "ember/Kernels.h"
#include "ember/OpAttrs.h"
#include "ember/Pass.h"
#include "ember/QuantMath.h"
#include "ember/Quantization.h"

namespace ember {
namespace {

std::string typesStr(const std::vector<Type>& types) {
  std::string s;
  for (const Type& t : types) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

quant::QuantRange rangeOf(ElemKind kind) {
  return kind == ElemKind::UInt8Q ? quant::uint8Range() : quant::int8Range();
}

Attributes withOutput(Attributes attrs, const TensorQuantization& q) {
  attrs.set("kind", std::string(elemKindName(q.kind)));
  attrs.set("scale", double(q.scale));
  attrs.set("offset", int64_t(q.offset));
  return attrs;
}

/// A ReLU or clip fused into the requantization of the node before it.
struct Activation {
  Node* node = nullptr;
  double min = -INFINITY, max = INFINITY;
};

/// Symmetric int8 weights, one scale per output channel (or one for all).
struct Weights {
  std::vector<int8_t> values;  ///< same layout as the f32 input
  std::vector<float> scales;   ///< per channel
  float maxScale = 1;
};

/// `w` is channel-major: channel c owns w[c * per, (c + 1) * per).
Weights quantizeWeights(std::span<const float> w, int64_t channels, bool perChannel, QuantSchema schema) {
  const int64_t per = channels ? int64_t(w.size()) / channels : 0;
  std::vector<float> absMax(size_t(channels), 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    // Infinities and NaN do not count (the comparisons are false for them).
    // Eight running maxima, not one: a single one is a chain of dependent
    // compares; the maximum does not depend on the order.
    constexpr int64_t kChains = 8;
    float m[kChains] = {};
    auto fold = [](float& running, float x) {
      const float a = std::fabs(x);
      running = a <= std::numeric_limits<float>::max() && a > running ? a : running;
    };
    const float* in = w.data() + c * per;
    int64_t i = 0;
    for (; i + kChains <= per; i += kChains)
      for (int64_t k = 0; k < kChains; ++k) fold(m[k], in[i + k]);
    for (; i < per; ++i) fold(m[0], in[i]);
    absMax[size_t(c)] = *std::max_element(m, m + kChains);
  }
  float tensorMax = channels ? *std::max_element(absMax.begin(), absMax.end()) : 0.0f;
  auto scaleOf = [&](float m) {
    double s = double(m) / 127.0;
    if (schema == QuantSchema::SymmetricPower2) s = std::exp2(std::ceil(std::log2(s)));
    return float(s);
  };
  Weights out;
  out.maxScale = tensorMax > 0 ? scaleOf(tensorMax) : 1.0f;
  out.scales.resize(size_t(channels));
  out.values.resize(w.size());
  for (int64_t c = 0; c < channels; ++c) {
    float m = perChannel ? absMax[size_t(c)] : tensorMax;
    // An all-zero channel borrows the tensor's scale so that its bias keeps precision.
    float s = m > 0 ? scaleOf(m) : out.maxScale;
    out.scales[size_t(c)] = s;
    const float* in = w.data() + c * per;
    int8_t* values = out.values.data() + c * per;
    for (int64_t i = 0; i < per; ++i) values[i] = quant::quantizeWeight(in[i], s);
  }
  return out;
}

/// f32 payload of a constant (f32 constants only).
std::span<const float> floats(const Node* constant) {
  const Tensor& t = constant->payload();
  return std::span<const float>(t.as<float>(), size_t(t.type().numElements()));
}

bool isF32Constant(NodeValue v) { return v.node->isConstant() && v.type().kind == ElemKind::F32; }

/// Reference evaluation of the Tabulable high-level activations (Ops.def),
/// in double, for lookup tables; a primitive is evaluated by its kernel.
std::optional<double> evalHighLevel(const Node& node, double x) {
  switch (node.kind()) {
    case OpKind::HardSwish:
      return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case OpKind::HardSigmoid: {
      const HardSigmoidAttrs hard = node.attrs<HardSigmoidAttrs>();
      return std::clamp(hard.alpha * x + hard.beta, 0.0, 1.0);
    }
    case OpKind::LeakyRelu:
      return x < 0 ? node.attrs<LeakyReluAttrs>().alpha * x : x;
    case OpKind::Elu:
      return x < 0 ? node.attrs<EluAttrs>().alpha * (std::exp(x) - 1) : x;
    case OpKind::Selu: {
      const SeluAttrs selu = node.attrs<SeluAttrs>();
      return selu.gamma * (x > 0 ? x : selu.alpha * (std::exp(x) - 1));
    }
    case OpKind::Softplus:
      return std::log1p(std::exp(x));
    case OpKind::Gelu:
      if (node.attrs<GeluAttrs>().approximate == GeluApproximate::Tanh)
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default:
      return std::nullopt;
  }
}

/// What a linear node quantizes: f32 weights [K, N] (empty when the rhs is
/// not a constant), bias [N], and the node whose result the quantized form
/// replaces (the linear node, or its folded bias Add).
struct LinearParts {
  std::vector<float> weights;
  std::vector<float> bias;
  Node* replaced = nullptr;
};

/// `node` of one f32 element x in its operand `variable` (its other operands
/// are constants): the Ops.def formula of a high-level activation, or the
/// primitive's own kernel. A failure is kept in `error` (and gives 0).
double evalElement(const Node& node, size_t variable, float x, Error& error) {
  if (auto y = evalHighLevel(node, x)) return *y;
  std::vector<Tensor> holders;
  std::vector<ConstTensorRef> ins;
  std::vector<Type> types;
  holders.reserve(node.numInputs());
  for (size_t i = 0; i < node.numInputs(); ++i) {
    if (i == variable) {
      holders.emplace_back(Type(ElemKind::F32, {}));
      holders.back().as<float>()[0] = x;
    } else {
      holders.push_back(node.input(i).node->payload());
    }
  }
  for (const Tensor& t : holders) {
    ins.push_back(t.ref());
    types.push_back(t.type());
  }
  auto resultTypes = inferResultTypes(node.kind(), types, node.attrs());
  if (!resultTypes) {
    error = resultTypes.error();
    return 0;
  }
  Tensor y((*resultTypes)[0]);
  std::vector<TensorRef> outs = {y.ref()};
  if (Error e = runKernel(node.kind(), node.attrs(), ins, outs)) {
    error = e;
    return 0;
  }
  return double(y.as<float>()[0]);
}

class Quantizer {
 public:
  Quantizer(Function& function, const QuantizationProfile& profile, const Backend& backend,
            QuantizationReport& report)
      : f_(function), profile_(profile), backend_(backend), report_(report) {}

  Error run();

 private:
  using Key = std::pair<const Node*, unsigned>;
  /// "" when converted, otherwise why the node stays float.
  using Outcome = Expected<std::string>;

  Expected<const TensorQuantization*> params(NodeValue v) const {
    auto it = profile_.tensors.find(tensorName(v));
    if (it == profile_.tensors.end())
      return makeError("the quantization profile has no tensor '", tensorName(v), "'");
    return &it->second;
  }

  Expected<NodeValue> quantized(NodeValue v);
  NodeValue constant(const std::string& name, Tensor t) {
    return f_.createConstant(name, std::move(t))->result();
  }
  std::string unsupported(const Node* q) const {
    NodeInfo info = NodeInfo::of(*q);
    return "backend '" + backend_.name() + "' does not support " + std::string(opName(q->kind())) + "(" +
           typesStr(info.inputTypes) + ") -> " + typesStr(info.resultTypes);
  }
  /// Adopts `q` as the quantized form of `replaced` (named after `primary`).
  Error commit(Node* primary, Node* replaced, Node* q);
  std::optional<Activation> fusableActivation(Node* node) const;

  Outcome convert(Node* node);
  Outcome convertConv(Node* node);
  Outcome convertLinear(Node* node);
  void matMulWeightsAndBias(Node* node, int64_t n, LinearParts& parts) const;
  Expected<NodeValue> linearRhs(NodeValue b, const std::vector<float>& weights, int64_t n,
                                const std::string& name, std::vector<float>& scales);
  Outcome convertAdd(Node* node);
  Outcome convertLookup(Node* node);
  Outcome convertMaxPool(Node* node);
  Outcome convertAvgPool(Node* node);
  Outcome convertDataMovement(Node* node);
  Outcome convertConcat(Node* node);
  // Integer-only transformer ops (TransformerPatterns.h, QuantMath.h).
  Outcome convertPattern(const TransformerPattern& p);
  Outcome convertSoftmax(Node* last, NodeValue scores, int64_t axis, const Tensor& keep);
  Outcome convertLayerNorm(Node* last, NodeValue x, int64_t axis, double epsilon, NodeValue gamma,
                           NodeValue beta);
  Outcome convertGelu(Node* last, NodeValue x);
  /// Checks that the backend supports `q`, then makes it the quantized form of `last`.
  Outcome adopt(Node* last, Node* q);
  /// adopt() for a node whose activation `act` (when there is one) `q` absorbs:
  /// `q` replaces `replaced` (the activation) and the activation is handled.
  Outcome adoptFused(Node* node, Node* replaced, Node* q, const std::optional<Activation>& act);
  /// Creates a quantized node; an Error is a bug in the conversion.
  Expected<Node*> create(OpKind kind, const std::string& name, std::vector<NodeValue> inputs,
                         Attributes attrs) {
    return f_.create(kind, name, std::move(inputs), std::move(attrs));
  }

  Function& f_;
  const QuantizationProfile& profile_;
  const Backend& backend_;
  QuantizationReport& report_;
  std::map<Key, NodeValue> twin_;  ///< f32 value -> its quantized form
  std::unordered_map<const Node*, std::vector<Use>> uses_;
  std::unordered_set<const Node*> outputs_, handled_;
  std::vector<TransformerPattern> patterns_;
  std::unordered_map<const Node*, size_t> patternOf_;  ///< node -> its pattern, until the pattern is tried
};

Expected<NodeValue> Quantizer::quantized(NodeValue v) {
  if (auto it = twin_.find({v.node, v.resNo}); it != twin_.end()) return it->second;
  if (v.type().kind != ElemKind::F32)
    return makeError("tensor '", tensorName(v), "' is ", v.type().str(), ", not f32");
  NodeValue q;
  if (v.node->isConstant()) {
    // Constants are quantized from their own range.
    std::span<const float> values = floats(v.node);
    float lo = 0, hi = 0;
    for (float x : values)
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    TensorQuantization p = chooseQuantization(lo, hi, profile_.schema);
    Tensor t(Type(p.kind, v.type().dims, p.scale, p.offset));
    quant::QuantRange r = rangeOf(p.kind);
    for (size_t i = 0; i < values.size(); ++i)
      t.as<int8_t>()[i] = int8_t(quant::quantizeValue(values[i], p.scale, p.offset, r.lo, r.hi));
    q = constant(v.node->name() + ".quantized", std::move(t));
  } else {
    EMBER_ASSIGN_OR_RETURN(const TensorQuantization* p, params(v));
    Attributes attrs = withOutput({}, *p);
    EMBER_ASSIGN_OR_RETURN(Node * node, create(OpKind::Quantize, tensorName(v) + ".quantize", {v}, attrs));
    q = node->result();
  }
  twin_[{v.node, v.resNo}] = q;
  return q;
}

Error Quantizer::commit(Node* primary, Node* replaced, Node* q) {
  std::string name = primary->name();
  primary->setName(name + ".f32");
  q->setName(name);
  EMBER_ASSIGN_OR_RETURN(Node * dq, create(OpKind::Dequantize, name + ".dequantize", {q->result()}, {}));
  f_.replaceAllUsesWith(replaced->result(), dq->result());
  twin_[{replaced, 0}] = q->result();
  twin_[{dq, 0}] = q->result();
  handled_.insert(replaced);
  ++report_.quantizedNodes;
  return Error::success();
}

std::optional<Activation> Quantizer::fusableActivation(Node* node) const {
  auto it = uses_.find(node);
  if (outputs_.count(node) || it == uses_.end() || it->second.size() != 1) return std::nullopt;
  Node* user = it->second[0].user;
  if (user->resultType().kind != ElemKind::F32) return std::nullopt;
  if (user->kind() == OpKind::Relu) return Activation{user, 0.0, INFINITY};
  if (user->kind() == OpKind::Clip) {
    const ClipAttrs clip = user->attrs<ClipAttrs>();
    return Activation{user, clip.min, clip.max};
  }
  return std::nullopt;
}

Attributes withActivation(Attributes attrs, const std::optional<Activation>& act) {
  if (!act) return attrs;
  if (act->min > -INFINITY) attrs.set("clip_min", act->min);
  if (act->max < INFINITY) attrs.set("clip_max", act->max);
  return attrs;
}

Quantizer::Outcome Quantizer::convertConv(Node* node) {
  NodeValue input = node->input(0), filter = node->input(1), bias = node->input(2);
  if (!isF32Constant(filter) || !isF32Constant(bias)) return std::string("filter or bias is not a constant");
  std::optional<Activation> act = fusableActivation(node);
  Node* replaced = act ? act->node : node;
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(replaced->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(input));
  const Dims& fd = filter.type().dims;
  Weights w = quantizeWeights(floats(filter.node), fd[0], profile_.perChannel, profile_.schema);
  Tensor qf(Type(ElemKind::Int8Q, fd, w.maxScale, 0));
  std::copy(w.values.begin(), w.values.end(), qf.as<int8_t>());
  const float inScale = qin.type().scale;
  std::span<const float> b = floats(bias.node);
  Tensor qb(Type(ElemKind::Int32Q, {fd[0]}, inScale * w.maxScale, 0));
  for (int64_t o = 0; o < fd[0]; ++o)
    qb.as<int32_t>()[o] = quant::quantizeBias(b[size_t(o)], inScale, w.scales[size_t(o)]);
  Tensor scales(Type(ElemKind::F32, {fd[0]}));
  std::copy(w.scales.begin(), w.scales.end(), scales.as<float>());
  const ConvAttrs conv = node->attrs<ConvAttrs>();
  Attributes attrs{
      {"strides", conv.strides}, {"pads", conv.pads}, {"dilations", conv.dilations}, {"group", conv.group}};
  const std::string& name = node->name();
  EMBER_ASSIGN_OR_RETURN(Node * q, create(OpKind::QuantizedConv, name + ".q",
                                          {qin, constant(name + ".filter_q", std::move(qf)),
                                           constant(name + ".bias_q", std::move(qb)),
                                           constant(name + ".filter_scales", std::move(scales))},
                                          withActivation(withOutput(attrs, *out), act)));
  return adoptFused(node, replaced, q, act);
}

/// Gemm's folded f32 weights alpha * op(B) as [K, N] and bias beta * C as
/// [N], or why it has no integer form.
std::string gemmWeightsAndBias(const Node* node, int64_t n, LinearParts& parts) {
  NodeValue a = node->input(0), b = node->input(1), c = node->input(2);
  const GemmAttrs gemm = node->attrs<GemmAttrs>();
  if (gemm.transA != 0) return "Gemm with trans_a has no integer form";
  if (!isF32Constant(b) || !isF32Constant(c)) return "Gemm's B or C is not a constant";
  if (c.type().numElements() != n && c.type().numElements() != 1) return "Gemm's C is not a row vector";
  if (c.type().numElements() == n && c.type().rank() > 1 && c.type().dims.back() != n)
    return "Gemm's C is not a row vector";
  const int64_t k = a.type().dims.back();
  const bool transB = gemm.transB != 0;
  const double alpha = gemm.alpha, beta = gemm.beta;
  std::span<const float> bv = floats(b.node), cv = floats(c.node);
  parts.weights.resize(size_t(k * n));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      parts.weights[size_t(p * n + j)] =
          float(alpha * double(transB ? bv[size_t(j * k + p)] : bv[size_t(p * n + j)]));
  for (int64_t j = 0; j < n; ++j)
    parts.bias[size_t(j)] = float(beta * double(cv[cv.size() == 1 ? 0 : size_t(j)]));
  return "";
}

/// MatMul's constant [K, N] rhs as weights, and a following Add of a
/// constant row bias folded into the bias (then `parts.replaced`).
void Quantizer::matMulWeightsAndBias(Node* node, int64_t n, LinearParts& parts) const {
  NodeValue b = node->input(1);
  if (isF32Constant(b) && b.type().rank() == 2)
    parts.weights.assign(floats(b.node).begin(), floats(b.node).end());
  // A following Add of a constant row bias folds into the accumulator.
  auto it = uses_.find(node);
  if (outputs_.count(node) || it == uses_.end() || it->second.size() != 1 ||
      it->second[0].user->kind() != OpKind::Add)
    return;
  Node* add = it->second[0].user;
  NodeValue other = add->input(1 - it->second[0].operand);
  // A row vector broadcasts along the last axis; an [n, 1] column with
  // as many elements would not, whatever the output's shape.
  bool rowBias = isF32Constant(other) && other.type().numElements() == n && other.type().rank() > 0 &&
                 other.type().dims.back() == n && add->resultType() == node->resultType();
  // An Add that begins a transformer pattern (an attention mask before its
  // Softmax) is the pattern's; and an infinite "bias" is a mask, which int32
  // cannot hold.
  if (!rowBias || patternOf_.count(add)) return;
  std::span<const float> bias = floats(other.node);
  if (!std::all_of(bias.begin(), bias.end(), [](float x) { return std::isfinite(x); })) return;
  parts.bias.assign(bias.begin(), bias.end());
  parts.replaced = add;
}

/// QuantizedMatMul's rhs: the constant weights quantized per column (their
/// scales into `scales`), or b itself quantized (one scale).
Expected<NodeValue> Quantizer::linearRhs(NodeValue b, const std::vector<float>& weights, int64_t n,
                                         const std::string& name, std::vector<float>& scales) {
  if (weights.empty()) {
    EMBER_ASSIGN_OR_RETURN(NodeValue rhs, quantized(b));
    std::fill(scales.begin(), scales.end(), rhs.type().scale);
    return rhs;
  }
  const int64_t k = int64_t(weights.size()) / n;
  std::vector<float> columns(weights.size());  // [N, K]: channel-major for quantizeWeights
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) columns[size_t(j * k + p)] = weights[size_t(p * n + j)];
  Weights w = quantizeWeights(columns, n, profile_.perChannel, profile_.schema);
  Tensor qw(Type(ElemKind::Int8Q, {k, n}, w.maxScale, 0));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) qw.as<int8_t>()[p * n + j] = w.values[size_t(j * k + p)];
  scales = w.scales;
  return constant(name + ".weights_q", std::move(qw));
}

/// Gemm(a, const B, const C) and MatMul(a, b) (+ a following Add of a
/// constant row bias) become QuantizedMatMul, with per-column weight scales
/// when B is a constant.
Quantizer::Outcome Quantizer::convertLinear(Node* node) {
  NodeValue a = node->input(0), b = node->input(1);
  const int64_t n = node->resultType().dims.back();
  LinearParts parts{{}, std::vector<float>(size_t(n), 0.0f), node};
  if (node->kind() == OpKind::Gemm) {
    if (std::string why = gemmWeightsAndBias(node, n, parts); !why.empty()) return why;
  } else {
    matMulWeightsAndBias(node, n, parts);
  }
  Node* replaced = parts.replaced;
  std::optional<Activation> act = fusableActivation(replaced);
  if (act) replaced = act->node;
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(replaced->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qa, quantized(a));
  const float inScale = qa.type().scale;
  const std::string& name = node->name();
  std::vector<float> scales(static_cast<size_t>(n));
  EMBER_ASSIGN_OR_RETURN(NodeValue rhs, linearRhs(b, parts.weights, n, name, scales));
  Tensor qb(Type(ElemKind::Int32Q, {n}, inScale * scales[0], 0));
  for (int64_t j = 0; j < n; ++j)
    qb.as<int32_t>()[j] = quant::quantizeBias(parts.bias[size_t(j)], inScale, scales[size_t(j)]);
  Tensor st(Type(ElemKind::F32, {n}));
  std::copy(scales.begin(), scales.end(), st.as<float>());
  EMBER_ASSIGN_OR_RETURN(Node * q, create(OpKind::QuantizedMatMul, name + ".q",
                                          {qa, rhs, constant(name + ".bias_q", std::move(qb)),
                                           constant(name + ".rhs_scales", std::move(st))},
                                          withActivation(withOutput({}, *out), act)));
  if (q->resultType().dims != replaced->resultType().dims) {
    f_.erase(q);
    return std::string("the quantized form's shape differs from the node's");
  }
  if (!backend_.supports(NodeInfo::of(*q))) {
    std::string why = unsupported(q);
    f_.erase(q);
    return why;
  }
  EMBER_RETURN_IF_ERROR(commit(node, replaced, q));
  if (replaced != node) {
    // The bias Add (and activation) are absorbed.
    auto it = uses_.find(node);
    if (it != uses_.end() && it->second.size() == 1) handled_.insert(it->second[0].user);
  }
  return std::string();
}

Quantizer::Outcome Quantizer::convertAdd(Node* node) {
  std::optional<Activation> act = fusableActivation(node);
  Node* replaced = act ? act->node : node;
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(replaced->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qa, quantized(node->input(0)));
  EMBER_ASSIGN_OR_RETURN(NodeValue qb, quantized(node->input(1)));
  EMBER_ASSIGN_OR_RETURN(Node * q, create(OpKind::QuantizedAdd, node->name() + ".q", {qa, qb},
                                          withActivation(withOutput({}, *out), act)));
  return adoptFused(node, replaced, q, act);
}

/// A unary function of one tensor (an activation, or a binary op with a
/// one-element constant) becomes a 256-entry table.
Quantizer::Outcome Quantizer::convertLookup(Node* node) {
  size_t variable = 0;
  if (node->numInputs() == 2) {
    bool lhsScalar = isF32Constant(node->input(0)) && node->input(0).type().numElements() == 1;
    bool rhsScalar = isF32Constant(node->input(1)) && node->input(1).type().numElements() == 1;
    if (!lhsScalar && !rhsScalar) return std::string("both operands are tensors: no integer form");
    variable = rhsScalar ? 0 : 1;
  }
  if (node->input(variable).type().dims != node->resultType().dims)
    return std::string("the constant operand broadcasts the tensor: no table form");
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(node->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(node->input(variable)));
  const Type& inType = qin.type();

  // f(x): the node's own kernel on one element (primitives) or its Ops.def formula.
  Error evalError;
  auto f = [&](float x) -> double { return evalElement(*node, variable, x, evalError); };
  int32_t table[256];
  quant::buildLookupTable(f, inType.scale, inType.offset, rangeOf(inType.kind), out->scale, out->offset,
                          rangeOf(out->kind), table);
  if (evalError) return std::string("cannot evaluate the function for a table: ") + evalError.message();
  Tensor t(Type(out->kind, {256}, out->scale, out->offset));
  for (int i = 0; i < 256; ++i) {
    if (out->kind == ElemKind::UInt8Q)
      t.as<uint8_t>()[i] = uint8_t(table[i]);
    else
      t.as<int8_t>()[i] = int8_t(table[i]);
  }
  const std::string& name = node->name();
  EMBER_ASSIGN_OR_RETURN(
      Node * q, create(OpKind::Lookup, name + ".q", {qin, constant(name + ".table", std::move(t))}, {}));
  return adopt(node, q);
}

Quantizer::Outcome Quantizer::convertMaxPool(Node* node) {
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(node->input(0)));
  EMBER_ASSIGN_OR_RETURN(Node * q, create(OpKind::MaxPool, node->name() + ".q", {qin}, node->attrs()));
  return adopt(node, q);
}

/// AvgPool, and ReduceMean over the spatial axes of NHWC (global pooling).
Quantizer::Outcome Quantizer::convertAvgPool(Node* node) {
  Attributes attrs;
  const Type& in = node->input(0).type();
  bool reshape = false;
  if (node->kind() == OpKind::AvgPool) {
    attrs = node->attrs();
  } else {
    const ReduceMeanAttrs reduce = node->attrs<ReduceMeanAttrs>();
    if (in.rank() != 4 || reduce.axes != std::vector<int64_t>{1, 2})
      return std::string("ReduceMean over other than the spatial axes stays float");
    attrs = Attributes{{"kernel", std::vector<int64_t>{in.dims[1], in.dims[2]}},
                       {"strides", std::vector<int64_t>{1, 1}},
                       {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                       {"ceil_mode", int64_t(0)},
                       {"count_include_pad", int64_t(0)}};
    reshape = reduce.keepdims == 0;
  }
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(node->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(node->input(0)));
  EMBER_ASSIGN_OR_RETURN(
      Node * q, create(OpKind::QuantizedAvgPool, node->name() + ".q", {qin}, withOutput(attrs, *out)));
  if (!backend_.supports(NodeInfo::of(*q))) {
    std::string why = unsupported(q);
    f_.erase(q);
    return why;
  }
  Node* last = q;
  if (reshape) {
    EMBER_ASSIGN_OR_RETURN(last, create(OpKind::Reshape, node->name() + ".reshape", {q->result()},
                                        Attributes{{"shape", node->resultType().dims}}));
  }
  std::string name = node->name();
  EMBER_RETURN_IF_ERROR(commit(node, node, last));
  if (reshape) q->setName(name + ".pool");
  return std::string();
}

/// Moves of an already quantized tensor keep its quantization.
Quantizer::Outcome Quantizer::convertDataMovement(Node* node) {
  auto it = twin_.find({node->input(0).node, node->input(0).resNo});
  if (it == twin_.end()) return std::string("its input is float (data movement follows its input)");
  EMBER_ASSIGN_OR_RETURN(Node * q, create(node->kind(), node->name() + ".q", {it->second}, node->attrs()));
  return adopt(node, q);
}

/// Concat rescales every input to the output's quantization first.
Quantizer::Outcome Quantizer::convertConcat(Node* node) {
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(node->result()));
  std::vector<NodeValue> inputs;
  for (size_t i = 0; i < node->numInputs(); ++i) {
    EMBER_ASSIGN_OR_RETURN(NodeValue qi, quantized(node->input(i)));
    const Type& t = qi.type();
    if (t.kind != out->kind || t.scale != out->scale || t.offset != out->offset) {
      EMBER_ASSIGN_OR_RETURN(Node * r,
                             create(OpKind::Requantize, node->name() + ".rescale" + std::to_string(i), {qi},
                                    withOutput({}, *out)));
      qi = r->result();
    }
    inputs.push_back(qi);
  }
  EMBER_ASSIGN_OR_RETURN(Node * q, create(OpKind::Concat, node->name() + ".q", inputs, node->attrs()));
  return adopt(node, q);
}

Quantizer::Outcome Quantizer::adopt(Node* last, Node* q) { return adoptFused(last, last, q, std::nullopt); }

Quantizer::Outcome Quantizer::adoptFused(Node* node, Node* replaced, Node* q,
                                         const std::optional<Activation>& act) {
  if (!backend_.supports(NodeInfo::of(*q))) {
    std::string why = unsupported(q);
    f_.erase(q);
    return why;
  }
  EMBER_RETURN_IF_ERROR(commit(node, replaced, q));
  if (act) handled_.insert(act->node);
  return std::string();
}

Quantizer::Outcome Quantizer::convertSoftmax(Node* last, NodeValue scores, int64_t axis, const Tensor& keep) {
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(last->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(scores));
  const std::string& name = last->name();
  EMBER_ASSIGN_OR_RETURN(Node * q,
                         create(OpKind::QuantizedSoftmax, name + ".q", {qin, constant(name + ".mask", keep)},
                                withOutput(Attributes{{"axis", axis}}, *out)));
  return adopt(last, q);
}

Quantizer::Outcome Quantizer::convertLayerNorm(Node* last, NodeValue x, int64_t axis, double epsilon,
                                               NodeValue gamma, NodeValue beta) {
  // What the integer form cannot take stays float, with the reason.
  const Dims& dims = x.type().dims;
  int64_t count = 1;
  for (size_t i = size_t(axis < 0 ? axis + int64_t(dims.size()) : axis); i < dims.size(); ++i)
    count *= dims[i];
  if (count > quant::kLayerNormMaxCount)
    return "normalizes " + std::to_string(count) + " elements, more than the integer form's " +
           std::to_string(quant::kLayerNormMaxCount);
  if (!(epsilon >= 0) || !std::isfinite(epsilon)) return std::string("epsilon is negative or not finite");
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(last->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(x));
  EMBER_ASSIGN_OR_RETURN(Node * q,
                         create(OpKind::QuantizedLayerNorm, last->name() + ".q", {qin, gamma, beta},
                                withOutput(Attributes{{"epsilon", epsilon}, {"axis", axis}}, *out)));
  return adopt(last, q);
}

Quantizer::Outcome Quantizer::convertGelu(Node* last, NodeValue x) {
  EMBER_ASSIGN_OR_RETURN(const TensorQuantization* out, params(last->result()));
  EMBER_ASSIGN_OR_RETURN(NodeValue qin, quantized(x));
  EMBER_ASSIGN_OR_RETURN(Node * q,
                         create(OpKind::QuantizedGelu, last->name() + ".q", {qin}, withOutput({}, *out)));
  return adopt(last, q);
}

/// A matched subgraph becomes one integer op; its other nodes die with it.
Quantizer::Outcome Quantizer::convertPattern(const TransformerPattern& p) {
  const std::string& name = p.last->name();
  Outcome outcome = std::string();
  switch (p.kind) {
    case TransformerPattern::Kind::LayerNorm: {
      const Dims& dims = p.input.type().dims;
      const Dims normalized(dims.begin() + p.axis, dims.end());
      Tensor gamma(Type(ElemKind::F32, normalized)), beta(Type(ElemKind::F32, normalized));
      std::copy(p.gamma.begin(), p.gamma.end(), gamma.as<float>());
      std::copy(p.beta.begin(), p.beta.end(), beta.as<float>());
      outcome =
          convertLayerNorm(p.last, p.input, p.axis, p.epsilon, constant(name + ".gamma", std::move(gamma)),
                           constant(name + ".beta", std::move(beta)));
      break;
    }
    case TransformerPattern::Kind::Gelu:
      outcome = convertGelu(p.last, p.input);
      break;
    case TransformerPattern::Kind::MaskedSoftmax: {
      Tensor keep(Type(ElemKind::Bool, p.maskDims));
      for (size_t i = 0; i < p.keep.size(); ++i) keep.as<bool>()[i] = p.keep[i];
      outcome = convertSoftmax(p.last, p.input, p.axis, keep);
      break;
    }
  }
  if (outcome && outcome->empty()) handled_.insert(p.nodes.begin(), p.nodes.end());
  return outcome;
}

Quantizer::Outcome Quantizer::convert(Node* node) {
  if (node->numResults() != 1) return std::string("no integer form (several results)");
  switch (node->kind()) {
    case OpKind::Conv:
      return convertConv(node);
    case OpKind::Gemm:
    case OpKind::MatMul:
      return convertLinear(node);
    case OpKind::Add:
      if (!node->input(0).node->isConstant() && !node->input(1).node->isConstant()) return convertAdd(node);
      if (auto r = convertLookup(node); !r || r->empty()) return r;
      return convertAdd(node);
    case OpKind::MaxPool:
      return convertMaxPool(node);
    case OpKind::AvgPool:
    case OpKind::ReduceMean:
      return convertAvgPool(node);
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Tile:
    case OpKind::Broadcast:
      return convertDataMovement(node);
    case OpKind::Concat:
      return convertConcat(node);
    case OpKind::Softmax: {
      Tensor keepAll(Type(ElemKind::Bool, {}));
      keepAll.as<bool>()[0] = true;
      return convertSoftmax(node, node->input(0), node->attrs<SoftmaxAttrs>().axis, keepAll);
    }
    case OpKind::LayerNorm: {
      if (!isF32Constant(node->input(1)) || !isF32Constant(node->input(2)))
        return std::string("LayerNorm's scale or bias is not a constant");
      const LayerNormAttrs norm = node->attrs<LayerNormAttrs>();
      return convertLayerNorm(node, node->input(0), norm.axis, norm.epsilon, node->input(1), node->input(2));
    }
    case OpKind::Gelu:
      // i-GELU; a backend without it gets the lookup table.
      if (auto r = convertGelu(node, node->input(0)); !r || r->empty()) return r;
      return convertLookup(node);
    default:
      if (node->info().has(Tabulable)) return convertLookup(node);
      return std::string("no integer form (stays float by design)");
  }
}

Error Quantizer::run() {
  std::string hash = graphHash(f_);
  if (hash != profile_.graphHash)
    return makeError("the quantization profile was calibrated on a different graph (profile graph_hash ",
                     profile_.graphHash, ", this model ", hash,
                     "); re-run 'ember quantize' on this model with the same --dim values");
  // Every f32 tensor must have an entry, so that a stale or edited profile
  // fails here, naming the tensor, rather than quantizing half the graph.
  std::vector<Node*> order = f_.topologicalOrder();
  for (Node* node : order) {
    if (node->isConstant()) continue;
    for (unsigned r = 0; r < node->numResults(); ++r)
      if (node->resultType(r).kind == ElemKind::F32 &&
          !profile_.tensors.count(tensorName(NodeValue(node, r))))
        return makeError("the quantization profile has no tensor '", tensorName(NodeValue(node, r)), "' (",
                         node->info().name, ")");
  }

  Type probe(ElemKind::F32, {1});
  Type probeQ(ElemKind::Int8Q, {1}, 1.0f, 0);
  bool canConvert = backend_.supports(NodeInfo{OpKind::Quantize, {probe}, {probeQ}, {false}, {}}) &&
                    backend_.supports(NodeInfo{OpKind::Dequantize, {probeQ}, {probe}, {false}, {}});
  uses_ = f_.computeUses();
  for (const auto& [name, v] : f_.outputs()) outputs_.insert(v.node);
  patterns_ = findTransformerPatterns(f_, uses_, outputs_);
  for (size_t i = 0; i < patterns_.size(); ++i)
    for (const Node* n : patterns_[i].nodes) patternOf_[n] = i;
  for (Node* node : order) {
    if (node->info().category == OpCategory::Storage || handled_.count(node)) continue;
    if (node->numResults() == 0 || node->resultType().kind != ElemKind::F32) continue;
    if (auto it = patternOf_.find(node); canConvert && it != patternOf_.end()) {
      // The first node of a pattern converts all of it; when that fails, its
      // nodes are converted one by one as any other.
      const TransformerPattern& p = patterns_[it->second];
      for (const Node* n : p.nodes) patternOf_.erase(n);
      // A pattern an earlier conversion took a node of is gone; its other
      // nodes convert one by one.
      if (std::none_of(p.nodes.begin(), p.nodes.end(), [&](Node* n) { return handled_.count(n); })) {
        Outcome outcome = convertPattern(p);
        if (!outcome)
          return outcome.error().withContext("quantizing the " + p.describe() + " ending at '" +
                                             p.last->name() + "'");
        if (outcome->empty()) continue;
      }
    }
    Outcome outcome = canConvert
                          ? convert(node)
                          : Outcome("backend '" + backend_.name() + "' does not support Quantize/Dequantize");
    if (!outcome) return outcome.error().withContext("quantizing node '" + node->name() + "'");
    if (!outcome->empty()) report_.floatNodes.push_back({node->name(), node->info().name, *outcome});
  }
  PassManager pm;
  pm.add(createDeadCodeEliminationPass());
  EMBER_RETURN_IF_ERROR(pm.run(f_));
  return f_.verify().withContext("after quantization");
}

}  // namespace

Error quantizeFunction(Function& function, const QuantizationProfile& profile, const Backend& backend,
                       QuantizationReport* report) {
  QuantizationReport local;
  Quantizer quantizer(function, profile, backend, report ? *report : local);
  return quantizer.run();
}

}  // namespace ember
