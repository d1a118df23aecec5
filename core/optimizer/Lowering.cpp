// Lowering: replaces each high-level node that backend.shouldLower accepts by
// primitives, following the semantics in Ops.def. Scalars are rank-0
// Constants of the node's element kind, and parameter arithmetic (BatchNorm's
// scale / sqrt(var + eps)) is built from primitives too, so that constant
// folding evaluates it. New nodes are named "<node>.<step>" so that errors and
// reports still point at the source node.
#include <cmath>
#include <numbers>

#include "../graph/EinsumEquation.h"
#include "PassUtils.h"
#include "ember/Backend.h"
#include "ember/OpAttrs.h"
#include "ember/Pass.h"

namespace ember {
namespace {

/// Creates the primitives of one lowering. The first failure is kept and
/// every later call becomes a no-op, so a lowering reads as straight-line
/// code and checks for an error once at the end.
class Builder {
 public:
  Builder(Function& function, const Node& node)
      : function_(function), base_(node.name()), kind_(node.resultType().kind) {}

  ElemKind kind() const { return kind_; }
  const Error& error() const { return error_; }

  NodeValue op(OpKind kind, const std::string& step, std::vector<NodeValue> inputs, Attributes attrs = {}) {
    if (error_) return {};
    for (const NodeValue& input : inputs)
      if (!input) return {};
    Expected<Node*> node = function_.create(kind, base_ + "." + step, std::move(inputs), std::move(attrs));
    if (!node) {
      error_ = node.error();
      return {};
    }
    created_.push_back(*node);
    return (*node)->result();
  }

  /// A rank-0 Constant of the node's element kind.
  NodeValue scalar(double value, const std::string& step = "const") {
    if (error_) return {};
    Node* node = function_.createConstant(base_ + "." + step, optimizer::scalarTensor(kind_, value));
    created_.push_back(node);
    return node->result();
  }

  void fail(std::string message) {
    if (!error_) error_ = Error::make(std::move(message));
  }

  /// Erases everything this builder created (after a failure).
  void abandon() {
    optimizer::eraseIfDead(function_, std::vector<Node*>(created_.rbegin(), created_.rend()));
  }

  NodeValue add(NodeValue a, NodeValue b, const std::string& step = "add") {
    return op(OpKind::Add, step, {a, b});
  }
  NodeValue sub(NodeValue a, NodeValue b, const std::string& step = "sub") {
    return op(OpKind::Sub, step, {a, b});
  }
  NodeValue mul(NodeValue a, NodeValue b, const std::string& step = "mul") {
    return op(OpKind::Mul, step, {a, b});
  }
  NodeValue div(NodeValue a, NodeValue b, const std::string& step = "div") {
    return op(OpKind::Div, step, {a, b});
  }
  NodeValue unary(OpKind kind, NodeValue a, const std::string& step) { return op(kind, step, {a}); }
  NodeValue reduce(OpKind kind, NodeValue a, const std::vector<int64_t>& axes, bool keepDims,
                   const std::string& step) {
    return op(kind, step, {a}, Attributes{{"axes", axes}, {"keepdims", int64_t(keepDims ? 1 : 0)}});
  }
  NodeValue reshape(NodeValue a, const Dims& dims, const std::string& step) {
    return op(OpKind::Reshape, step, {a}, Attributes{{"shape", dims}});
  }
  NodeValue select(NodeValue cond, NodeValue a, NodeValue b, const std::string& step = "select") {
    return op(OpKind::Select, step, {cond, a, b});
  }
  NodeValue clip(NodeValue a, double lo, double hi, const std::string& step = "clip") {
    return op(OpKind::Clip, step, {a}, Attributes{{"min", lo}, {"max", hi}});
  }

 private:
  Function& function_;
  std::string base_;
  ElemKind kind_;
  Error error_;
  std::vector<Node*> created_;
};

int64_t normalizeAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

/// Axes sorted, non-negative and unique, as the primitive reductions require.
std::vector<int64_t> normalizeAxes(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<int64_t> result;
  result.reserve(axes.size());
  for (int64_t axis : axes) result.push_back(normalizeAxis(axis, rank));
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

int64_t countOver(const Dims& dims, const std::vector<int64_t>& axes) {
  int64_t count = 1;
  for (int64_t axis : axes) count *= dims[size_t(axis)];
  return count;
}

/// A per-channel parameter [C] reshaped to [1, .., C, .., 1] along `axis`.
NodeValue alongAxis(Builder& b, NodeValue param, size_t rank, int64_t axis, int64_t channels,
                    const std::string& step) {
  if (!param) return {};
  if (param.type().numElements() != channels) {
    b.fail("parameter '" + param.node->name() + "' has " + std::to_string(param.type().numElements()) +
           " elements, expected " + std::to_string(channels));
    return {};
  }
  Dims dims(rank, 1);
  dims[size_t(axis)] = channels;
  return b.reshape(param, dims, step);
}

/// mean and (biased) variance over `axes`, kept as size-1 dims; returns the
/// normalised value (x - mean) / sqrt(var + eps). Sums are divided by n, one
/// rounding, as ONNX Runtime and PyTorch do (times 1/n rounds twice).
NodeValue normalize(Builder& b, NodeValue x, const std::vector<int64_t>& axes, double epsilon) {
  const double count = double(countOver(x.type().dims, axes));
  NodeValue mean = b.div(b.reduce(OpKind::ReduceSum, x, axes, true, "sum"), b.scalar(count, "n"), "mean");
  NodeValue centered = b.sub(x, mean, "centered");
  NodeValue variance =
      b.div(b.reduce(OpKind::ReduceSum, b.mul(centered, centered, "square"), axes, true, "sumsq"),
            b.scalar(count, "n"), "var");
  NodeValue stddev = b.unary(OpKind::Sqrt, b.add(variance, b.scalar(epsilon, "eps"), "var_eps"), "stddev");
  return b.div(centered, stddev, "normalized");
}

NodeValue hardSigmoid(Builder& b, NodeValue x, double alpha, double beta) {
  return b.clip(b.add(b.mul(x, b.scalar(alpha, "alpha"), "scaled"), b.scalar(beta, "beta"), "shifted"), 0.0,
                1.0, "hard_sigmoid");
}

/// log(1 + y) for y >= 0, accurate when y is tiny (as log1p): u = 1 + y
/// rounds y away, and log(u) * y / (u - 1) undoes that rounding (Goldberg,
/// "What every computer scientist should know about floating-point", 1991).
NodeValue logOnePlus(Builder& b, NodeValue y) {
  NodeValue one = b.scalar(1.0, "one");
  NodeValue u = b.add(y, one, "u");
  NodeValue uMinusOne = b.sub(u, one, "u_minus_one");
  NodeValue corrected = b.div(b.mul(b.unary(OpKind::Log, u, "log_u"), y, "log_u_y"), uMinusOne, "log1p");
  NodeValue roundedAway = b.op(OpKind::Equal, "rounded_away", {uMinusOne, b.scalar(0.0, "zero")});
  return b.select(roundedAway, y, corrected, "log1p_or_y");
}

/// alpha * (exp(x) - 1), the negative branch of Elu and Selu, accurate near 0
/// (as expm1, Kahan's form): (u - 1) * x / log(u) with u = exp(x); x itself
/// where u rounds to 1, and -1 where u underflows to 0.
NodeValue expMinusOne(Builder& b, NodeValue x, double alpha) {
  NodeValue one = b.scalar(1.0, "one");
  NodeValue u = b.unary(OpKind::Exp, x, "exp");
  NodeValue uMinusOne = b.sub(u, one, "u_minus_one");
  NodeValue corrected = b.div(b.mul(uMinusOne, x, "scaled"), b.unary(OpKind::Log, u, "log_u"), "expm1");
  NodeValue nearZero = b.op(OpKind::Equal, "near_zero", {u, one});
  NodeValue underflow = b.op(OpKind::Equal, "underflow", {u, b.scalar(0.0, "zero")});
  NodeValue em1 =
      b.select(nearZero, x, b.select(underflow, uMinusOne, corrected, "expm1_or_minus_one"), "expm1_or_x");
  return b.mul(em1, b.scalar(alpha, "alpha"), "negative");
}

// ---- Einsum -------------------------------------------------------------------
// Each operand first sums out the labels no one else needs; then operands are
// contracted left to right, each pair as one batched MatMul:
// A [batch, a-only, shared] x B [batch, shared, b-only]; finally a transpose
// puts the labels in the output's order.

/// A value whose dims carry one einsum label each.
struct Labelled {
  NodeValue value;
  std::string labels;
};

class EinsumLowering {
 public:
  EinsumLowering(Builder& b, const einsum::Equation& eq) : b_(b), eq_(eq) {}

  NodeValue run(const std::vector<NodeValue>& inputs) {
    std::vector<Labelled> operands;
    for (size_t i = 0; i < inputs.size(); ++i) operands.push_back({inputs[i], eq_.operands[i]});
    for (size_t i = 0; i < operands.size(); ++i) {
      std::string others = eq_.output;
      for (size_t j = 0; j < operands.size(); ++j)
        if (j != i) others += operands[j].labels;
      operands[i] = sumOutUnless(operands[i], others);
    }
    Labelled acc = operands[0];
    for (size_t i = 1; i < operands.size(); ++i) {
      std::string keep = eq_.output;
      for (size_t j = i + 1; j < operands.size(); ++j) keep += operands[j].labels;
      acc = contract(acc, operands[i], keep);
    }
    acc = sumOutUnless(acc, eq_.output);
    // An identity equation ("ij->ij") returns the input itself.
    return permute(acc, eq_.output);
  }

 private:
  static bool has(const std::string& labels, char label) { return labels.find(label) != std::string::npos; }

  std::string step(const std::string& what) { return "einsum" + std::to_string(steps_++) + "_" + what; }

  Dims dimsOf(const std::string& labels) const {
    Dims dims;
    for (char label : labels) dims.push_back(eq_.size(label));
    return dims;
  }
  int64_t count(const std::string& labels) const {
    int64_t n = 1;
    for (char label : labels) n *= eq_.size(label);
    return n;
  }

  /// ReduceSum over the labels of `x` that `needed` lacks.
  Labelled sumOutUnless(const Labelled& x, const std::string& needed) {
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t d = 0; d < x.labels.size(); ++d) {
      if (has(needed, x.labels[d]))
        kept += x.labels[d];
      else
        axes.push_back(int64_t(d));
    }
    if (axes.empty()) return x;
    return {b_.reduce(OpKind::ReduceSum, x.value, axes, false, step("sum")), kept};
  }

  /// `x` transposed so that its labels read `order` (a permutation of them).
  NodeValue permute(const Labelled& x, const std::string& order) {
    std::vector<int64_t> perm;
    bool identity = true;
    for (size_t d = 0; d < order.size(); ++d) {
      perm.push_back(int64_t(x.labels.find(order[d])));
      identity = identity && perm.back() == int64_t(d);
    }
    if (identity) return x.value;
    return b_.op(OpKind::Transpose, step("transpose"), {x.value}, Attributes{{"perm", perm}});
  }

  NodeValue reshapeTo(NodeValue x, const Dims& dims) {
    if (!x || x.type().dims == dims) return x;
    return b_.reshape(x, dims, step("reshape"));
  }

  Labelled contract(const Labelled& lhs, const Labelled& rhs, const std::string& keep) {
    Labelled a = sumOutUnless(lhs, keep + rhs.labels);
    Labelled c = sumOutUnless(rhs, keep + a.labels);
    std::string batch, shared, aOnly, cOnly;
    for (char label : a.labels) {
      if (!has(c.labels, label))
        aOnly += label;
      else
        (has(keep, label) ? batch : shared) += label;
    }
    for (char label : c.labels)
      if (!has(a.labels, label)) cOnly += label;
    NodeValue lhsMatrix =
        reshapeTo(permute(a, batch + aOnly + shared), {count(batch), count(aOnly), count(shared)});
    NodeValue rhsMatrix =
        reshapeTo(permute(c, batch + shared + cOnly), {count(batch), count(shared), count(cOnly)});
    NodeValue product = b_.op(OpKind::MatMul, step("matmul"), {lhsMatrix, rhsMatrix});
    const std::string labels = batch + aOnly + cOnly;
    return {reshapeTo(product, dimsOf(labels)), labels};
  }

  Builder& b_;
  const einsum::Equation& eq_;
  int steps_ = 0;
};

NodeValue lowerEinsum(Builder& b, const Node& node) {
  std::vector<NodeValue> inputs;
  std::vector<Dims> dims;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    inputs.push_back(node.input(i));
    dims.push_back(node.input(i).type().dims);
  }
  Expected<einsum::Equation> eq = einsum::parse(node.attrs<EinsumAttrs>().equation, dims);
  if (!eq) {
    b.fail(eq.error().message());
    return {};
  }
  return EinsumLowering(b, *eq).run(inputs);
}

NodeValue lowerGemm(Builder& b, const Node& node) {
  NodeValue a = node.input(0), bMat = node.input(1);
  if (a.type().rank() != 2 || bMat.type().rank() != 2) {
    b.fail("Gemm operands must be matrices");
    return {};
  }
  const GemmAttrs gemm = node.attrs<GemmAttrs>();
  const std::vector<int64_t> swap = {1, 0};
  if (gemm.transA != 0) a = b.op(OpKind::Transpose, "transpose_a", {a}, Attributes{{"perm", swap}});
  if (gemm.transB != 0) bMat = b.op(OpKind::Transpose, "transpose_b", {bMat}, Attributes{{"perm", swap}});
  NodeValue y = b.op(OpKind::MatMul, "matmul", {a, bMat});
  const double alpha = gemm.alpha, beta = gemm.beta;
  if (alpha != 1.0) y = b.mul(y, b.scalar(alpha, "alpha"), "scaled");
  if (beta != 0.0) {
    NodeValue c = node.input(2);
    if (beta != 1.0) c = b.mul(c, b.scalar(beta, "beta"), "scaled_c");
    y = b.add(y, c, "bias");
  }
  return y;
}

NodeValue lowerBatchNorm(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const Type& inType = x.type();
  const size_t rank = inType.rank();
  const BatchNormAttrs norm = node.attrs<BatchNormAttrs>();
  const int64_t axis = normalizeAxis(norm.axis, rank);
  if (axis < 0 || axis >= int64_t(rank)) {
    b.fail("axis out of range");
    return {};
  }
  const int64_t channels = inType.dims[size_t(axis)];
  // scale / sqrt(var + eps) and bias - mean * that: constant-folded when
  // the parameters are constants.
  NodeValue stddev =
      b.unary(OpKind::Sqrt, b.add(node.input(4), b.scalar(norm.epsilon, "eps"), "var_eps"), "stddev");
  NodeValue multiplier = b.div(node.input(1), stddev, "multiplier");
  NodeValue shift = b.sub(node.input(2), b.mul(node.input(3), multiplier, "mean_scaled"), "shift");
  NodeValue y = b.mul(x, alongAxis(b, multiplier, rank, axis, channels, "multiplier_bcast"), "scaled");
  return b.add(y, alongAxis(b, shift, rank, axis, channels, "shift_bcast"), "shifted");
}

NodeValue lowerLayerNorm(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const size_t rank = x.type().rank();
  const LayerNormAttrs norm = node.attrs<LayerNormAttrs>();
  const int64_t axis = normalizeAxis(norm.axis, rank);
  if (axis < 0 || axis >= int64_t(rank)) {
    b.fail("axis out of range");
    return {};
  }
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < int64_t(rank); ++i) axes.push_back(i);
  NodeValue normalized = normalize(b, x, axes, norm.epsilon);
  return b.add(b.mul(normalized, node.input(1), "scaled"), node.input(2), "shifted");
}

NodeValue lowerInstanceNorm(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const Type& inType = x.type();
  const size_t rank = inType.rank();
  const InstanceNormAttrs norm = node.attrs<InstanceNormAttrs>();
  const int64_t axis = normalizeAxis(norm.axis, rank);
  std::vector<int64_t> axes;
  for (int64_t i = 1; i < int64_t(rank); ++i)
    if (i != axis) axes.push_back(i);
  if (axis <= 0 || axis >= int64_t(rank) || axes.empty()) {
    b.fail("needs a batch dim, a channel axis and at least one spatial dim");
    return {};
  }
  const int64_t channels = inType.dims[size_t(axis)];
  NodeValue normalized = normalize(b, x, axes, norm.epsilon);
  NodeValue scaled =
      b.mul(normalized, alongAxis(b, node.input(1), rank, axis, channels, "scale_bcast"), "scaled");
  return b.add(scaled, alongAxis(b, node.input(2), rank, axis, channels, "bias_bcast"), "shifted");
}

/// Softmax and LogSoftmax.
NodeValue lowerSoftmax(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const size_t rank = x.type().rank();
  const int64_t axis = normalizeAxis(node.attrs<SoftmaxAttrs>().axis, rank);  // LogSoftmaxAttrs is the same
  if (axis < 0 || axis >= int64_t(rank)) {
    b.fail("axis out of range");
    return {};
  }
  // Subtracting the max keeps exp from overflowing.
  NodeValue shifted = b.sub(x, b.reduce(OpKind::ReduceMax, x, {axis}, true, "max"), "shifted");
  NodeValue exp = b.unary(OpKind::Exp, shifted, "exp");
  NodeValue sum = b.reduce(OpKind::ReduceSum, exp, {axis}, true, "sum");
  if (node.kind() == OpKind::Softmax) return b.div(exp, sum, "softmax");
  return b.sub(shifted, b.unary(OpKind::Log, sum, "log_sum"), "log_softmax");
}

NodeValue lowerGelu(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const GeluApproximate approximate = node.attrs<GeluAttrs>().approximate;
  NodeValue half = b.mul(x, b.scalar(0.5, "half"), "half_x");
  NodeValue inner;
  if (approximate == GeluApproximate::Tanh) {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
    NodeValue cube = b.mul(b.mul(x, x, "square"), x, "cube");
    NodeValue poly = b.add(x, b.mul(cube, b.scalar(0.044715, "coeff"), "cube_scaled"), "poly");
    const double scale = std::sqrt(2.0 / std::numbers::pi);
    inner = b.unary(OpKind::Tanh, b.mul(poly, b.scalar(scale, "sqrt_2_over_pi"), "tanh_arg"), "tanh");
  } else {  // GeluApproximate::None (the type rule admits only none and tanh)
    inner =
        b.unary(OpKind::Erf, b.mul(x, b.scalar(1.0 / std::numbers::sqrt2, "inv_sqrt2"), "erf_arg"), "erf");
  }
  return b.mul(half, b.add(inner, b.scalar(1.0, "one"), "one_plus"), "gelu");
}

NodeValue lowerReduceMean(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const ReduceMeanAttrs reduce = node.attrs<ReduceMeanAttrs>();
  const std::vector<int64_t> axes = normalizeAxes(reduce.axes, x.type().rank());
  const int64_t count = countOver(x.type().dims, axes);
  NodeValue sum = b.reduce(OpKind::ReduceSum, x, axes, reduce.keepdims != 0, "sum");
  return b.div(sum, b.scalar(double(count), "n"), "mean");
}

NodeValue lowerReduceSumSquare(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  const ReduceSumSquareAttrs reduce = node.attrs<ReduceSumSquareAttrs>();
  const std::vector<int64_t> axes = normalizeAxes(reduce.axes, x.type().rank());
  return b.reduce(OpKind::ReduceSum, b.mul(x, x, "square"), axes, reduce.keepdims != 0, "sum");
}

/// LeakyRelu and PRelu: x < 0 ? x * slope : x.
NodeValue lowerLeakyRelu(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  NodeValue slope =
      node.kind() == OpKind::PRelu ? node.input(1) : b.scalar(node.attrs<LeakyReluAttrs>().alpha, "alpha");
  NodeValue negative = b.op(OpKind::Less, "is_negative", {x, b.scalar(0.0, "zero")});
  return b.select(negative, b.mul(x, slope, "negative"), x);
}

NodeValue lowerElu(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  NodeValue negative = b.op(OpKind::Less, "is_negative", {x, b.scalar(0.0, "zero")});
  return b.select(negative, expMinusOne(b, x, node.attrs<EluAttrs>().alpha), x);
}

NodeValue lowerSelu(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  NodeValue nonPositive = b.op(OpKind::LessEqual, "is_non_positive", {x, b.scalar(0.0, "zero")});
  const SeluAttrs selu = node.attrs<SeluAttrs>();
  NodeValue y = b.select(nonPositive, expMinusOne(b, x, selu.alpha), x);
  return b.mul(y, b.scalar(selu.gamma, "gamma"), "selu");
}

NodeValue lowerSoftplus(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  // log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which never overflows.
  NodeValue tail =
      b.unary(OpKind::Exp, b.unary(OpKind::Neg, b.unary(OpKind::Abs, x, "abs"), "neg_abs"), "exp");
  return b.add(b.unary(OpKind::Relu, x, "relu"), logOnePlus(b, tail), "softplus");
}

NodeValue lowerHardSigmoid(Builder& b, const Node& node) {
  const HardSigmoidAttrs hard = node.attrs<HardSigmoidAttrs>();
  return hardSigmoid(b, node.input(0), hard.alpha, hard.beta);
}

NodeValue lowerHardSwish(Builder& b, const Node& node) {
  const NodeValue x = node.input(0);
  return b.mul(x, hardSigmoid(b, x, 1.0 / 6.0, 0.5), "hard_swish");
}

/// How a high-level op is lowered: its function, and whether that function
/// also builds non-float element kinds (its primitives take them) or float
/// kinds only. Stated here, beside the dispatch, rather than in a list.
struct HighLevelLowering {
  NodeValue (*lower)(Builder&, const Node&) = nullptr;
  bool nonFloat = false;
};

HighLevelLowering loweringOf(OpKind kind) {
  constexpr bool kAnyKind = true, kFloatOnly = false;
  switch (kind) {
    case OpKind::Gemm:
      return {lowerGemm, kAnyKind};
    case OpKind::ReduceMean:
      return {lowerReduceMean, kAnyKind};
    case OpKind::ReduceSumSquare:
      return {lowerReduceSumSquare, kAnyKind};
    case OpKind::Einsum:
      return {lowerEinsum, kAnyKind};
    case OpKind::BatchNorm:
      return {lowerBatchNorm, kFloatOnly};
    case OpKind::LayerNorm:
      return {lowerLayerNorm, kFloatOnly};
    case OpKind::InstanceNorm:
      return {lowerInstanceNorm, kFloatOnly};
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return {lowerSoftmax, kFloatOnly};
    case OpKind::LeakyRelu:
    case OpKind::PRelu:
      return {lowerLeakyRelu, kFloatOnly};
    case OpKind::Elu:
      return {lowerElu, kFloatOnly};
    case OpKind::Selu:
      return {lowerSelu, kFloatOnly};
    case OpKind::Softplus:
      return {lowerSoftplus, kFloatOnly};
    case OpKind::HardSigmoid:
      return {lowerHardSigmoid, kFloatOnly};
    case OpKind::HardSwish:
      return {lowerHardSwish, kFloatOnly};
    case OpKind::Gelu:
      return {lowerGelu, kFloatOnly};
    default:
      return {};
  }
}

/// Builds the primitives computing `node`; an empty value means failure
/// (the builder holds the reason).
NodeValue lowerNode(Builder& b, const Node& node) {
  const HighLevelLowering lowering = loweringOf(node.kind());
  if (!isFloat(b.kind()) && !lowering.nonFloat) {
    b.fail(std::string("element kind ") + std::string(elemKindName(b.kind())) +
           " has no primitive lowering; the backend must implement the op or not ask for lowering");
    return {};
  }
  if (!lowering.lower) {
    b.fail("no lowering is defined for this op");
    return {};
  }
  return lowering.lower(b, node);
}

class Lowering : public FunctionPass {
 public:
  explicit Lowering(const Backend& backend) : backend_(backend) {}
  std::string name() const override { return "lowering"; }
  bool isRequired() const override { return true; }

  Expected<bool> run(Function& function) override {
    bool changed = false;
    for (Node* node : function.topologicalOrder()) {
      if (node->info().category != OpCategory::HighLevel || !backend_.shouldLower(*node)) continue;
      Builder builder(function, *node);
      NodeValue result = lowerNode(builder, *node);
      if (!builder.error() && result && result.type() != node->resultType())
        builder.fail("lowered result has type " + result.type().str() + ", expected " +
                     node->resultType().str());
      if (builder.error() || !result) {
        builder.abandon();
        return makeError("cannot lower node '", node->name(), "' (", opName(node->kind()),
                         "): ", builder.error() ? builder.error().message() : "lowering failed");
      }
      // The node's inputs may still be used by the primitives; DCE removes the rest.
      function.replaceAllUsesWith(node->result(), result);
      function.erase(node);
      changed = true;
    }
    return changed;
  }

 private:
  const Backend& backend_;
};

}  // namespace

std::unique_ptr<FunctionPass> createLoweringPass(const Backend& backend) {
  return std::make_unique<Lowering>(backend);
}

}  // namespace ember
