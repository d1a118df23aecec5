// The type rule of every op in Ops.def: result types from input types and
// attributes, with ONNX semantics on the NHWC layout that Ops.def specifies.
//
// There is one static function infer<Name> per op kind; the dispatch table at
// the bottom is generated from Ops.def, so an op without a rule does not
// compile. The generic verifier checks operand counts and attribute kinds
// first, but every rule re-checks what it reads so that a malformed node is an
// Error, never a crash. Rules are cheap: they only touch dims and a few small vectors.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <variant>

#include "EinsumEquation.h"
#include "ember/Graph.h"
#include "ember/OpAttrs.h"
#include "ember/OpTable.h"
#include "ember/QuantMath.h"
#include "ember/VendorOp.h"

namespace ember {
namespace {

using Types = std::span<const Type>;
using Result = Expected<std::vector<Type>>;

Result single(Type t) { return std::vector<Type>{std::move(t)}; }

// ---- Attribute access that fails with an Error instead of asserting --------

/// Reads attributes, remembering the first missing or mistyped one.
class AttrReader {
 public:
  AttrReader(OpKind op, const Attributes& attrs) : op_(op), attrs_(attrs) {}

  int64_t integer(std::string_view name) {
    if (const AttrValue* v = attrs_.find(name))
      if (auto* i = std::get_if<int64_t>(v)) return *i;
    fail(name, "int");
    return 0;
  }
  double real(std::string_view name) {
    if (const AttrValue* v = attrs_.find(name)) {
      if (auto* d = std::get_if<double>(v)) return *d;
      if (auto* i = std::get_if<int64_t>(v)) return double(*i);
    }
    fail(name, "float");
    return 0;
  }
  std::string string(std::string_view name) {
    if (const AttrValue* v = attrs_.find(name))
      if (auto* s = std::get_if<std::string>(v)) return *s;
    fail(name, "string");
    return {};
  }
  std::vector<int64_t> ints(std::string_view name) {
    if (const AttrValue* v = attrs_.find(name))
      if (auto* s = std::get_if<std::vector<int64_t>>(v)) return *s;
    fail(name, "ints");
    return {};
  }
  /// An optional floats attribute: nullopt when absent.
  std::optional<std::vector<double>> optionalFloats(std::string_view name) {
    const AttrValue* v = attrs_.find(name);
    if (!v) return std::nullopt;
    if (auto* s = std::get_if<std::vector<double>>(v)) return *s;
    if (auto* s = std::get_if<std::vector<int64_t>>(v)) return std::vector<double>(s->begin(), s->end());
    fail(name, "floats");
    return std::nullopt;
  }
  const Error& error() const { return error_; }

 private:
  void fail(std::string_view name, const char* kind) {
    if (!error_)
      error_ = makeError(opName(op_), ": missing or mistyped attribute '", name, "' (expected ", kind, ")");
  }
  OpKind op_;
  const Attributes& attrs_;
  Error error_;
};

// ---- Common checks -----------------------------------------------------------

Error expectOperands(OpKind op, Types in, size_t count) {
  if (in.size() != count)
    return makeError(opName(op), ": expected ", count, " operand", count == 1 ? "" : "s", ", got ",
                     in.size());
  return Error::success();
}

Error expectRank(OpKind op, std::string_view what, const Type& t, size_t rank) {
  if (t.rank() != rank) return makeError(opName(op), ": ", what, " must have rank ", rank, ", got ", t.str());
  return Error::success();
}

/// Enum attribute values are checked by the parse functions generated from
/// Ops.def (ember/OpAttrs.h); the messages name the values for the reader.
/// Element-kind classes as bit sets over ElemKind; the named sets are
/// ember/OpTable.h's. A type rule's float and numeric also admit the half
/// kinds f16/bf16, which a backend may compute although the reference kernels
/// only cast and move them (Ops.def declares what each kernel implements).
using KindSet = ElemKindSet;
constexpr KindSet bit(ElemKind k) { return elemKindBit(k); }
constexpr KindSet kRuleFloatKinds = kFloatKinds | kHalfKinds;
constexpr KindSet kRuleNumericKinds = kRuleFloatKinds | kIntKinds;

std::string kindSetStr(KindSet set) { return elemKindSetStr(set); }

Error expectKind(OpKind op, std::string_view what, const Type& t, KindSet allowed) {
  if (allowed & bit(t.kind)) return Error::success();
  if (isQuantized(t.kind))
    return makeError(opName(op), ": quantized ", what, " ", t.str(), " is not supported yet");
  return makeError(opName(op), ": ", what, " has element kind ", elemKindName(t.kind), ", expected ",
                   kindSetStr(allowed));
}

/// Same element kind (and quantization) for two operands.
Error expectSameKind(OpKind op, const Type& a, const Type& b, std::string_view aName,
                     std::string_view bName) {
  if (a.kind != b.kind)
    return makeError(opName(op), ": ", aName, " and ", bName, " element kinds differ (", a.str(), " vs ",
                     b.str(), ")");
  if (isQuantized(a.kind) && (a.scale != b.scale || a.offset != b.offset))
    return makeError(opName(op), ": ", aName, " and ", bName, " quantization differs (", a.str(), " vs ",
                     b.str(), ")");
  return Error::success();
}

Expected<Dims> broadcastFor(OpKind op, const Dims& a, const Dims& b) {
  auto dims = broadcastDims(a, b);
  if (!dims) return dims.error().withContext(std::string(opName(op)));
  return dims;
}

Error checkResultDims(OpKind op, const Dims& dims) {
  if (Error e = checkDims(dims)) return e.withContext(std::string(opName(op)) + ": result " + dimsStr(dims));
  return Error::success();
}

/// Normalises an axis in [-rank, rank) to [0, rank).
Expected<size_t> normalizeAxis(OpKind op, int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return makeError(opName(op), ": axis ", axis, " is out of range for rank ", rank);
  return size_t(axis < 0 ? axis + r : axis);
}

Error expectBoolFlag(OpKind op, std::string_view name, int64_t v) {
  if (v != 0 && v != 1) return makeError(opName(op), ": attribute '", name, "' must be 0 or 1, got ", v);
  return Error::success();
}

Error expectSize(OpKind op, std::string_view name, const std::vector<int64_t>& v, size_t n) {
  if (v.size() != n)
    return makeError(opName(op), ": attribute '", name, "' must have ", n, " values, got ", v.size());
  return Error::success();
}

Error expectAllAtLeast(OpKind op, std::string_view name, const std::vector<int64_t>& v, int64_t least) {
  for (int64_t x : v)
    if (x < least)
      return makeError(opName(op), ": attribute '", name, "' values must be >= ", least, ", got ", x);
  return Error::success();
}

std::string joinInts(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- Family rules --------------------------------------------------------------

Result binaryRule(OpKind op, Types in, KindSet allowed, std::optional<ElemKind> resultKind) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "lhs", in[0], allowed));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[1], "lhs", "rhs"));
  EMBER_ASSIGN_OR_RETURN(Dims dims, broadcastFor(op, in[0].dims, in[1].dims));
  return single(Type(resultKind.value_or(in[0].kind), std::move(dims)));
}

Result arithmeticRule(OpKind op, Types in) { return binaryRule(op, in, kRuleNumericKinds, std::nullopt); }
Result comparisonRule(OpKind op, Types in, KindSet allowed) {
  return binaryRule(op, in, allowed, ElemKind::Bool);
}
Result logicRule(OpKind op, Types in) { return binaryRule(op, in, kBoolKinds, ElemKind::Bool); }

Result unaryRule(OpKind op, Types in, KindSet allowed) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], allowed));
  return single(in[0]);
}

/// Shared by Conv and ConvTranspose: strides, pads, dilations and group.
struct ConvParams {
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
};

Expected<ConvParams> readConvParams(OpKind op, AttrReader& attrs) {
  ConvParams p;
  p.strides = attrs.ints("strides");
  p.pads = attrs.ints("pads");
  p.dilations = attrs.ints("dilations");
  p.group = attrs.integer("group");
  EMBER_RETURN_IF_ERROR(attrs.error());
  EMBER_RETURN_IF_ERROR(expectSize(op, "strides", p.strides, 2));
  EMBER_RETURN_IF_ERROR(expectSize(op, "pads", p.pads, 4));
  EMBER_RETURN_IF_ERROR(expectSize(op, "dilations", p.dilations, 2));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "strides", p.strides, 1));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "pads", p.pads, 0));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "dilations", p.dilations, 1));
  if (p.group < 1) return makeError(opName(op), ": group must be >= 1, got ", p.group);
  // Channel counts are below 2^40, so channels * group cannot overflow.
  if (p.group > (int64_t(1) << 20)) return makeError(opName(op), ": group ", p.group, " is too large");
  return p;
}

/// Output extent of a strided window over a padded axis (floor or ceil mode);
/// with ceil mode a window starting in the end padding is dropped. Errors when
/// the dilated kernel does not fit. Values are bounded by checkDims'd inputs
/// and small attributes, so the arithmetic below cannot overflow in practice;
/// attributes are still range-checked first.
Expected<int64_t> windowExtent(OpKind op, const char* axisName, int64_t size, int64_t kernel, int64_t stride,
                               int64_t padBegin, int64_t padEnd, int64_t dilation, bool ceilMode) {
  // Sizes are below 2^40 (checkDims); with these limits no product overflows.
  constexpr int64_t kLimit = int64_t(1) << 40, kFactorLimit = int64_t(1) << 20;
  if (kernel > kLimit || stride > kFactorLimit || padBegin > kLimit || padEnd > kLimit ||
      dilation > kFactorLimit)
    return makeError(opName(op), ": window attributes on ", axisName, " are too large");
  int64_t effectiveKernel = dilation * (kernel - 1) + 1;
  int64_t span = size + padBegin + padEnd - effectiveKernel;
  if (span < 0)
    return makeError(opName(op), ": ", axisName, " window of ", effectiveKernel,
                     " (dilated) exceeds the padded size ", size + padBegin + padEnd);
  int64_t extent = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (extent - 1) * stride >= size + padBegin) --extent;
  return extent;
}

Result reductionRule(OpKind op, Types in, const Attributes& attrs, KindSet allowed) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], allowed));
  AttrReader reader(op, attrs);
  std::vector<int64_t> axes = reader.ints("axes");
  int64_t keepdims = reader.integer("keepdims");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "keepdims", keepdims));
  if (axes.empty()) return makeError(opName(op), ": axes must not be empty");
  const Dims& dims = in[0].dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= int64_t(dims.size()))
      return makeError(opName(op), ": axis ", axes[i], " is out of range for ", in[0].str());
    if (i > 0 && axes[i] <= axes[i - 1])
      return makeError(opName(op), ": axes ", joinInts(axes), " must be sorted and unique");
  }
  Dims out;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    if (!reduced)
      out.push_back(dims[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return single(in[0].withDims(std::move(out)));
}

Result argReduceRule(OpKind op, Types in, const Attributes& attrs) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleNumericKinds));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  int64_t keepdims = reader.integer("keepdims");
  int64_t selectLast = reader.integer("select_last_index");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "keepdims", keepdims));
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "select_last_index", selectLast));
  if (in[0].rank() == 0) return makeError(opName(op), ": input must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  if (in[0].dims[a] == 0)
    return makeError(opName(op), ": cannot reduce the empty axis ", a, " of ", in[0].str());
  Dims out = in[0].dims;
  if (keepdims)
    out[a] = 1;
  else
    out.erase(out.begin() + ptrdiff_t(a));
  return single(Type(ElemKind::I64, std::move(out)));
}

/// Normalisations that take (input, scale, bias) with per-channel parameters.
Error expectChannelVector(OpKind op, std::string_view what, const Type& t, const Type& input,
                          int64_t channels) {
  EMBER_RETURN_IF_ERROR(expectSameKind(op, input, t, "input", what));
  if (t.rank() != 1 || t.dims[0] != channels)
    return makeError(opName(op), ": ", what, " must be [", channels, "], got ", t.str());
  return Error::success();
}

Result activationRule(OpKind op, Types in) { return unaryRule(op, in, kRuleFloatKinds); }

}  // namespace

// ---- One rule per op kind -------------------------------------------------------
// Storage and IR bookkeeping kinds have no rule: their type is given.

static Result noTypeRule(OpKind op) { return makeError(opName(op), ": no type rule (its type is given)"); }

static Result inferPlaceholder(Types, const Attributes&) { return noTypeRule(OpKind::Placeholder); }
static Result inferConstant(Types, const Attributes&) { return noTypeRule(OpKind::Constant); }
static Result inferAllocActivation(Types, const Attributes&) { return noTypeRule(OpKind::AllocActivation); }
static Result inferDeallocActivation(Types in, const Attributes&) {
  EMBER_RETURN_IF_ERROR(expectOperands(OpKind::DeallocActivation, in, 1));
  return std::vector<Type>{};
}
static Result inferCopy(Types in, const Attributes&) {
  EMBER_RETURN_IF_ERROR(expectOperands(OpKind::Copy, in, 1));
  return single(in[0]);
}

// Binary elementwise.
static Result inferAdd(Types in, const Attributes&) { return arithmeticRule(OpKind::Add, in); }
static Result inferSub(Types in, const Attributes&) { return arithmeticRule(OpKind::Sub, in); }
static Result inferMul(Types in, const Attributes&) { return arithmeticRule(OpKind::Mul, in); }
static Result inferDiv(Types in, const Attributes&) { return arithmeticRule(OpKind::Div, in); }
static Result inferPow(Types in, const Attributes&) { return arithmeticRule(OpKind::Pow, in); }
static Result inferMax(Types in, const Attributes&) { return arithmeticRule(OpKind::Max, in); }
static Result inferMin(Types in, const Attributes&) { return arithmeticRule(OpKind::Min, in); }
static Result inferEqual(Types in, const Attributes&) {
  return comparisonRule(OpKind::Equal, in, kRuleNumericKinds | kBoolKinds);
}
static Result inferLess(Types in, const Attributes&) {
  return comparisonRule(OpKind::Less, in, kRuleNumericKinds);
}
static Result inferLessEqual(Types in, const Attributes&) {
  return comparisonRule(OpKind::LessEqual, in, kRuleNumericKinds);
}
static Result inferGreater(Types in, const Attributes&) {
  return comparisonRule(OpKind::Greater, in, kRuleNumericKinds);
}
static Result inferGreaterEqual(Types in, const Attributes&) {
  return comparisonRule(OpKind::GreaterEqual, in, kRuleNumericKinds);
}
static Result inferAnd(Types in, const Attributes&) { return logicRule(OpKind::And, in); }
static Result inferOr(Types in, const Attributes&) { return logicRule(OpKind::Or, in); }
static Result inferXor(Types in, const Attributes&) { return logicRule(OpKind::Xor, in); }

static Result inferSelect(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::Select;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectKind(op, "cond", in[0], kBoolKinds));
  // A choice between two values moves data, so quantized values with the same
  // quantization are fine.
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[1], in[2], "lhs", "rhs"));
  EMBER_ASSIGN_OR_RETURN(Dims values, broadcastFor(op, in[1].dims, in[2].dims));
  EMBER_ASSIGN_OR_RETURN(Dims dims, broadcastFor(op, in[0].dims, values));
  return single(in[1].withDims(std::move(dims)));
}

static Result inferMod(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Mod;
  AttrReader reader(op, attrs);
  int64_t fmod = reader.integer("fmod");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "fmod", fmod));
  // Python's % on floats is ONNX-invalid (fmod 0 needs integers).
  return binaryRule(op, in, fmod ? kRuleNumericKinds : kIntKinds, std::nullopt);
}

// Unary elementwise.
static Result inferNeg(Types in, const Attributes&) { return unaryRule(OpKind::Neg, in, kRuleNumericKinds); }
static Result inferAbs(Types in, const Attributes&) { return unaryRule(OpKind::Abs, in, kRuleNumericKinds); }
static Result inferExp(Types in, const Attributes&) { return unaryRule(OpKind::Exp, in, kRuleFloatKinds); }
static Result inferLog(Types in, const Attributes&) { return unaryRule(OpKind::Log, in, kRuleFloatKinds); }
static Result inferSqrt(Types in, const Attributes&) { return unaryRule(OpKind::Sqrt, in, kRuleFloatKinds); }
static Result inferReciprocal(Types in, const Attributes&) {
  return unaryRule(OpKind::Reciprocal, in, kRuleFloatKinds);
}
static Result inferSin(Types in, const Attributes&) { return unaryRule(OpKind::Sin, in, kRuleFloatKinds); }
static Result inferCos(Types in, const Attributes&) { return unaryRule(OpKind::Cos, in, kRuleFloatKinds); }
static Result inferErf(Types in, const Attributes&) { return unaryRule(OpKind::Erf, in, kRuleFloatKinds); }
static Result inferFloor(Types in, const Attributes&) {
  return unaryRule(OpKind::Floor, in, kRuleFloatKinds);
}
static Result inferCeil(Types in, const Attributes&) { return unaryRule(OpKind::Ceil, in, kRuleFloatKinds); }
static Result inferSign(Types in, const Attributes&) {
  return unaryRule(OpKind::Sign, in, kRuleNumericKinds);
}
static Result inferTanh(Types in, const Attributes&) { return unaryRule(OpKind::Tanh, in, kRuleFloatKinds); }
static Result inferSigmoid(Types in, const Attributes&) {
  return unaryRule(OpKind::Sigmoid, in, kRuleFloatKinds);
}
static Result inferRelu(Types in, const Attributes&) {
  return unaryRule(OpKind::Relu, in, kRuleNumericKinds);
}
static Result inferNot(Types in, const Attributes&) { return unaryRule(OpKind::Not, in, kBoolKinds); }
static Result inferRound(Types in, const Attributes&) {
  return unaryRule(OpKind::Round, in, kRuleFloatKinds);
}
static Result inferAsin(Types in, const Attributes&) { return unaryRule(OpKind::Asin, in, kRuleFloatKinds); }
static Result inferAcos(Types in, const Attributes&) { return unaryRule(OpKind::Acos, in, kRuleFloatKinds); }
static Result inferAtan(Types in, const Attributes&) { return unaryRule(OpKind::Atan, in, kRuleFloatKinds); }
static Result inferAsinh(Types in, const Attributes&) {
  return unaryRule(OpKind::Asinh, in, kRuleFloatKinds);
}
static Result inferAcosh(Types in, const Attributes&) {
  return unaryRule(OpKind::Acosh, in, kRuleFloatKinds);
}
static Result inferAtanh(Types in, const Attributes&) {
  return unaryRule(OpKind::Atanh, in, kRuleFloatKinds);
}
static Result inferIsNaN(Types in, const Attributes&) {
  EMBER_ASSIGN_OR_RETURN(std::vector<Type> t, unaryRule(OpKind::IsNaN, in, kRuleFloatKinds));
  return single(Type(ElemKind::Bool, t[0].dims));
}

static Result inferClip(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Clip;
  AttrReader reader(op, attrs);
  reader.real("min");
  reader.real("max");
  EMBER_RETURN_IF_ERROR(reader.error());
  return unaryRule(op, in, kRuleNumericKinds);
}

static Result inferCast(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Cast;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::string to = reader.string("to");
  EMBER_RETURN_IF_ERROR(reader.error());
  std::optional<ElemKind> kind = elemKindFromName(to);
  if (!kind) return makeError("Cast: unknown element kind '", to, "'");
  constexpr KindSet castable = kRuleNumericKinds | kBoolKinds;
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], castable));
  if (!(castable & bit(*kind)))
    return makeError("Cast: casting to ", to, " is not supported (quantization is not a cast)");
  return single(Type(*kind, in[0].dims));
}

// Linear algebra and spatial.
static Result inferMatMul(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::MatMul;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "lhs", in[0], kRuleNumericKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[1], "lhs", "rhs"));
  const Dims& a = in[0].dims;
  const Dims& b = in[1].dims;
  if (a.size() < 2 || b.size() < 2)
    return makeError("MatMul: operands must have rank >= 2, got ", in[0].str(), " and ", in[1].str());
  int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb)
    return makeError("MatMul: lhs has ", k, " columns, rhs has ", kb, " rows (", in[0].str(), " x ",
                     in[1].str(), ")");
  EMBER_ASSIGN_OR_RETURN(Dims dims,
                         broadcastFor(op, Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)));
  dims.push_back(m);
  dims.push_back(n);
  EMBER_RETURN_IF_ERROR(checkResultDims(op, dims));
  return single(Type(in[0].kind, std::move(dims)));
}

static Result inferDet(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::Det;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  const Dims& d = in[0].dims;
  if (d.size() < 2 || d[d.size() - 1] != d[d.size() - 2])
    return makeError("Det: input must be [..., M, M], got ", in[0].str());
  return single(in[0].withDims(Dims(d.begin(), d.end() - 2)));
}

/// Conv's and ConvTranspose's operands: float input, filter and bias of
/// one kind; input and filter of rank 4.
static Error expectConvOperands(OpKind op, Types in) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  const Type &input = in[0], &filter = in[1], &bias = in[2];
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", input, kRuleFloatKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, input, filter, "input", "filter"));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, input, bias, "input", "bias"));
  EMBER_RETURN_IF_ERROR(expectRank(op, "input", input, 4));
  EMBER_RETURN_IF_ERROR(expectRank(op, "filter", filter, 4));
  return Error::success();
}

static Result inferConv(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Conv;
  EMBER_RETURN_IF_ERROR(expectConvOperands(op, in));
  const Type &input = in[0], &filter = in[1], &bias = in[2];
  AttrReader reader(op, attrs);
  EMBER_ASSIGN_OR_RETURN(ConvParams p, readConvParams(op, reader));
  int64_t channels = input.dims[3], outChannels = filter.dims[0], perGroup = filter.dims[3];
  if (perGroup * p.group != channels)
    return makeError("Conv: filter has ", perGroup, " input channels per group, input has ", channels,
                     " channels (group ", p.group, ")");
  if (outChannels % p.group != 0)
    return makeError("Conv: ", outChannels, " output channels are not divisible by group ", p.group);
  if (bias.rank() != 1 || bias.dims[0] != outChannels)
    return makeError("Conv: bias must be [", outChannels, "], got ", bias.str());
  EMBER_ASSIGN_OR_RETURN(int64_t oh, windowExtent(op, "height", input.dims[1], filter.dims[1], p.strides[0],
                                                  p.pads[0], p.pads[2], p.dilations[0], false));
  EMBER_ASSIGN_OR_RETURN(int64_t ow, windowExtent(op, "width", input.dims[2], filter.dims[2], p.strides[1],
                                                  p.pads[1], p.pads[3], p.dilations[1], false));
  return single(input.withDims({input.dims[0], oh, ow, outChannels}));
}

/// ConvTranspose's output extent along spatial axis i (0: height, 1: width).
static Expected<int64_t> transposedExtent(const Type& input, const Type& filter, const ConvParams& p,
                                          const std::vector<int64_t>& outputPadding, int i) {
  if (outputPadding[i] >= std::max(p.strides[i], p.dilations[i]))
    return makeError("ConvTranspose: output_padding ", outputPadding[i],
                     " must be smaller than the stride or dilation");
  // Sizes are below 2^40 (checkDims); with these limits no product overflows.
  if (p.strides[i] > (int64_t(1) << 20) || p.dilations[i] > (int64_t(1) << 20) ||
      p.pads[i] > (int64_t(1) << 40) || p.pads[i + 2] > (int64_t(1) << 40))
    return makeError("ConvTranspose: window attributes are too large");
  int64_t size = input.dims[1 + i], kernel = filter.dims[1 + i];
  int64_t extent = (size - 1) * p.strides[i] - p.pads[i] - p.pads[i + 2] + p.dilations[i] * (kernel - 1) + 1 +
                   outputPadding[i];
  if (size == 0 || extent <= 0)
    return makeError("ConvTranspose: output ", i == 0 ? "height" : "width", " would be ", extent, " for ",
                     input.str());
  return extent;
}

static Result inferConvTranspose(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::ConvTranspose;
  EMBER_RETURN_IF_ERROR(expectConvOperands(op, in));
  const Type &input = in[0], &filter = in[1], &bias = in[2];
  AttrReader reader(op, attrs);
  std::vector<int64_t> outputPadding = reader.ints("output_padding");
  EMBER_ASSIGN_OR_RETURN(ConvParams p, readConvParams(op, reader));
  EMBER_RETURN_IF_ERROR(expectSize(op, "output_padding", outputPadding, 2));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "output_padding", outputPadding, 0));
  int64_t channels = input.dims[3];
  if (filter.dims[0] != channels)
    return makeError("ConvTranspose: filter has ", filter.dims[0], " input channels, input has ", channels);
  if (channels % p.group != 0)
    return makeError("ConvTranspose: ", channels, " input channels are not divisible by group ", p.group);
  int64_t outChannels = filter.dims[3] * p.group;
  if (bias.rank() != 1 || bias.dims[0] != outChannels)
    return makeError("ConvTranspose: bias must be [", outChannels, "], got ", bias.str());
  Dims out = {input.dims[0], 0, 0, outChannels};
  for (int i = 0; i < 2; ++i) {
    EMBER_ASSIGN_OR_RETURN(out[1 + i], transposedExtent(input, filter, p, outputPadding, i));
  }
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(input.withDims(std::move(out)));
}

/// A 2-D pool window: two kernel, stride and dilation values, four pads.
static Error expectPoolWindow(OpKind op, const std::vector<int64_t>& kernel,
                              const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                              const std::vector<int64_t>& dilations) {
  EMBER_RETURN_IF_ERROR(expectSize(op, "kernel", kernel, 2));
  EMBER_RETURN_IF_ERROR(expectSize(op, "strides", strides, 2));
  EMBER_RETURN_IF_ERROR(expectSize(op, "pads", pads, 4));
  EMBER_RETURN_IF_ERROR(expectSize(op, "dilations", dilations, 2));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "kernel", kernel, 1));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "strides", strides, 1));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "pads", pads, 0));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "dilations", dilations, 1));
  return Error::success();
}

/// MaxPool and AvgPool share everything but dilations and count_include_pad.
static Result poolRule(OpKind op, Types in, const Attributes& attrs, KindSet allowed, bool hasDilations) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  const Type& input = in[0];
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", input, allowed));
  EMBER_RETURN_IF_ERROR(expectRank(op, "input", input, 4));
  AttrReader reader(op, attrs);
  std::vector<int64_t> kernel = reader.ints("kernel"), strides = reader.ints("strides"),
                       pads = reader.ints("pads");
  std::vector<int64_t> dilations = hasDilations ? reader.ints("dilations") : std::vector<int64_t>{1, 1};
  int64_t ceilMode = reader.integer("ceil_mode");
  if (!hasDilations)
    EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "count_include_pad", reader.integer("count_include_pad")));
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "ceil_mode", ceilMode));
  EMBER_RETURN_IF_ERROR(expectPoolWindow(op, kernel, strides, pads, dilations));
  EMBER_ASSIGN_OR_RETURN(int64_t oh, windowExtent(op, "height", input.dims[1], kernel[0], strides[0], pads[0],
                                                  pads[2], dilations[0], ceilMode != 0));
  EMBER_ASSIGN_OR_RETURN(int64_t ow, windowExtent(op, "width", input.dims[2], kernel[1], strides[1], pads[1],
                                                  pads[3], dilations[1], ceilMode != 0));
  return single(input.withDims({input.dims[0], oh, ow, input.dims[3]}));
}

static Result inferMaxPool(Types in, const Attributes& attrs) {
  // Max commutes with a monotonic quantization, so i8q/u8q keep scale and offset.
  return poolRule(OpKind::MaxPool, in, attrs,
                  kRuleNumericKinds | bit(ElemKind::Int8Q) | bit(ElemKind::UInt8Q), true);
}
static Result inferAvgPool(Types in, const Attributes& attrs) {
  return poolRule(OpKind::AvgPool, in, attrs, kRuleFloatKinds, false);
}

// Reductions.
static Result inferReduceSum(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceSum, in, a, kRuleNumericKinds);
}
static Result inferReduceMax(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceMax, in, a, kRuleNumericKinds);
}
static Result inferReduceMin(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceMin, in, a, kRuleNumericKinds);
}
static Result inferReduceProd(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceProd, in, a, kRuleNumericKinds);
}
static Result inferArgMax(Types in, const Attributes& a) { return argReduceRule(OpKind::ArgMax, in, a); }
static Result inferArgMin(Types in, const Attributes& a) { return argReduceRule(OpKind::ArgMin, in, a); }

static Result inferTopK(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::TopK;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleNumericKinds));
  AttrReader reader(op, attrs);
  int64_t k = reader.integer("k"), axis = reader.integer("axis"), largest = reader.integer("largest");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "largest", largest));
  if (in[0].rank() == 0) return makeError("TopK: input must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  if (k < 0 || k > in[0].dims[a])
    return makeError("TopK: k = ", k, " is out of range for axis ", a, " of ", in[0].str());
  Dims out = in[0].dims;
  out[a] = k;
  return std::vector<Type>{in[0].withDims(out), Type(ElemKind::I64, out)};
}

// Data movement: every element kind, quantization preserved.
static Result inferTranspose(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Transpose;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> perm = reader.ints("perm");
  EMBER_RETURN_IF_ERROR(reader.error());
  size_t rank = in[0].rank();
  if (perm.size() != rank)
    return makeError("Transpose: perm ", joinInts(perm), " does not match the rank of ", in[0].str());
  std::array<bool, kMaxRank> seen{};
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= int64_t(rank) || rank > kMaxRank || seen[size_t(perm[i])])
      return makeError("Transpose: perm ", joinInts(perm), " is not a permutation of 0..", rank - 1);
    seen[size_t(perm[i])] = true;
    out[i] = in[0].dims[size_t(perm[i])];
  }
  return single(in[0].withDims(std::move(out)));
}

static Result inferReshape(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Reshape;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> shape = reader.ints("shape");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(checkResultDims(op, shape));
  Type out = in[0].withDims(shape);
  if (out.numElements() != in[0].numElements())
    return makeError("Reshape: cannot reshape ", in[0].str(), " (", in[0].numElements(), " elements) to ",
                     dimsStr(shape), " (", out.numElements(), " elements)");
  return single(std::move(out));
}

static Result inferSlice(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Slice;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> starts = reader.ints("starts"), ends = reader.ints("ends"),
                       steps = reader.ints("steps");
  EMBER_RETURN_IF_ERROR(reader.error());
  size_t rank = in[0].rank();
  EMBER_RETURN_IF_ERROR(expectSize(op, "starts", starts, rank));
  EMBER_RETURN_IF_ERROR(expectSize(op, "ends", ends, rank));
  EMBER_RETURN_IF_ERROR(expectSize(op, "steps", steps, rank));
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = in[0].dims[i], start = starts[i], end = ends[i], step = steps[i];
    if (step == 0) return makeError("Slice: step on axis ", i, " is 0");
    // Bounds keep the extent arithmetic below free of overflow.
    constexpr int64_t kLimit = int64_t(1) << 40;
    if (start < 0 || start > kLimit || end < -1 || end > kLimit || step < -kLimit || step > kLimit)
      return makeError("Slice: axis ", i, " start ", start, ", end ", end, ", step ", step,
                       " are not normalised");
    int64_t extent = step > 0 ? (end > start ? (end - start + step - 1) / step : 0)
                              : (start > end ? (start - end - step - 1) / -step : 0);
    if (extent > 0) {
      int64_t last = start + (extent - 1) * step;
      if (start >= dim || last < 0 || last >= dim)
        return makeError("Slice: axis ", i, " [", start, ":", end, ":", step, "] reads outside ",
                         in[0].str());
    }
    out[i] = extent;
  }
  return single(in[0].withDims(std::move(out)));
}

static Result inferConcat(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Concat;
  if (in.empty()) return makeError("Concat: expected at least one operand");
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  const Type& first = in[0];
  if (first.rank() == 0) return makeError("Concat: operands must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, first.rank()));
  Dims out = first.dims;
  for (size_t i = 1; i < in.size(); ++i) {
    EMBER_RETURN_IF_ERROR(expectSameKind(op, first, in[i], "operand 0", "operand " + std::to_string(i)));
    bool compatible = in[i].rank() == first.rank();
    for (size_t d = 0; compatible && d < first.rank(); ++d)
      compatible = d == a || in[i].dims[d] == first.dims[d];
    if (!compatible)
      return makeError("Concat: operand ", i, " ", in[i].str(), " does not match ", first.str(),
                       " outside axis ", a);
    out[a] += in[i].dims[a];
  }
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(first.withDims(std::move(out)));
}

static Result inferPad(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Pad;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> pads = reader.ints("pads");
  std::string mode = reader.string("mode");
  reader.real("value");
  EMBER_RETURN_IF_ERROR(reader.error());
  size_t rank = in[0].rank();
  EMBER_RETURN_IF_ERROR(expectSize(op, "pads", pads, 2 * rank));
  if (!parsePadMode(mode))
    return makeError("Pad: unknown mode '", mode, "' (expected constant, reflect or edge)");
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = in[0].dims[i], begin = pads[i], end = pads[rank + i];
    constexpr int64_t kLimit = int64_t(1) << 40;
    if (begin < -kLimit || begin > kLimit || end < -kLimit || end > kLimit)
      return makeError("Pad: pads on axis ", i, " are too large");
    out[i] = dim + begin + end;
    if (out[i] < 0 || dim + begin < 0 || dim + end < 0)
      return makeError("Pad: pads ", begin, " and ", end, " crop more than axis ", i, " of ", in[0].str());
    // Reflect and edge read inside the (cropped) input; reflect cannot repeat the border.
    int64_t kept = dim + std::min<int64_t>(begin, 0) + std::min<int64_t>(end, 0);
    int64_t grow = std::max<int64_t>(std::max<int64_t>(begin, 0), std::max<int64_t>(end, 0));
    if (mode == "edge" && grow > 0 && kept <= 0)
      return makeError("Pad: edge mode needs a non-empty axis ", i, " to pad ", in[0].str());
    if (mode == "reflect" && grow > 0 && grow > kept - 1)
      return makeError("Pad: reflect pad ", grow, " on axis ", i, " must be smaller than the axis size ",
                       kept);
  }
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(in[0].withDims(std::move(out)));
}

static Result inferTile(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Tile;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> repeats = reader.ints("repeats");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectSize(op, "repeats", repeats, in[0].rank()));
  EMBER_RETURN_IF_ERROR(expectAllAtLeast(op, "repeats", repeats, 0));
  Dims out(in[0].rank());
  for (size_t i = 0; i < out.size(); ++i) {
    if (repeats[i] > 0 && in[0].dims[i] > (int64_t(1) << 62) / repeats[i])
      return makeError("Tile: repeat ", repeats[i], " on axis ", i, " is too large");
    out[i] = in[0].dims[i] * repeats[i];
  }
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(in[0].withDims(std::move(out)));
}

static Result inferBroadcast(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Broadcast;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> shape = reader.ints("shape");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(checkResultDims(op, shape));
  EMBER_ASSIGN_OR_RETURN(Dims out, broadcastFor(op, in[0].dims, shape));
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(in[0].withDims(std::move(out)));
}

static Result inferGather(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Gather;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "indices", in[1], kIntKinds));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  const Type& data = in[0];
  if (data.rank() == 0) return makeError("Gather: data must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, data.rank()));
  Dims out(data.dims.begin(), data.dims.begin() + ptrdiff_t(a));
  out.insert(out.end(), in[1].dims.begin(), in[1].dims.end());
  out.insert(out.end(), data.dims.begin() + ptrdiff_t(a) + 1, data.dims.end());
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  if (data.dims[a] == 0 && in[1].numElements() > 0)
    return makeError("Gather: cannot gather from the empty axis ", a, " of ", data.str());
  return single(data.withDims(std::move(out)));
}

namespace {

/// Scatter reductions: none moves data of any kind; the others need numbers.
Error checkScatterReduction(OpKind op, const std::string& reduction, const Type& data) {
  if (reduction == "none") return Error::success();
  if (!parseScatterElementsReduction(reduction))
    return makeError(opName(op), ": unknown reduction '", reduction,
                     "' (expected none, add, mul, max or min)");
  return expectKind(op, "data", data, kRuleNumericKinds);
}

}  // namespace

static Result inferGatherElements(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::GatherElements;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "indices", in[1], kIntKinds));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  const Type& data = in[0];
  if (data.rank() == 0 || in[1].rank() != data.rank())
    return makeError("GatherElements: data ", data.str(), " and indices ", in[1].str(),
                     " must have the same rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, data.rank()));
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != a && in[1].dims[d] > data.dims[d])
      return makeError("GatherElements: indices ", in[1].str(), " exceed data ", data.str(), " on axis ", d);
  if (data.dims[a] == 0 && in[1].numElements() > 0)
    return makeError("GatherElements: cannot gather from the empty axis ", a, " of ", data.str());
  return single(data.withDims(in[1].dims));
}

static Result inferScatterElements(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::ScatterElements;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectKind(op, "indices", in[1], kIntKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[2], "data", "updates"));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  std::string reduction = reader.string("reduction");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(checkScatterReduction(op, reduction, in[0]));
  const Type& data = in[0];
  if (data.rank() == 0 || in[1].rank() != data.rank() || in[2].dims != in[1].dims)
    return makeError("ScatterElements: data ", data.str(), ", indices ", in[1].str(), " and updates ",
                     in[2].str(), " must have the same rank >= 1, indices and updates the same shape");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, data.rank()));
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != a && in[1].dims[d] > data.dims[d])
      return makeError("ScatterElements: indices ", in[1].str(), " exceed data ", data.str(), " on axis ", d);
  if (data.dims[a] == 0 && in[1].numElements() > 0)
    return makeError("ScatterElements: cannot scatter into the empty axis ", a, " of ", data.str());
  return single(data);
}

static Result inferGatherND(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::GatherND;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "indices", in[1], kIntKinds));
  AttrReader reader(op, attrs);
  int64_t batchDims = reader.integer("batch_dims");
  EMBER_RETURN_IF_ERROR(reader.error());
  const Type& data = in[0];
  const Type& indices = in[1];
  if (data.rank() == 0 || indices.rank() == 0)
    return makeError("GatherND: data ", data.str(), " and indices ", indices.str(), " must have rank >= 1");
  const int64_t rowLength = indices.dims.back();
  if (batchDims < 0 || batchDims >= int64_t(indices.rank()) || batchDims >= int64_t(data.rank()))
    return makeError("GatherND: batch_dims ", batchDims, " is out of range for data ", data.str(),
                     " and indices ", indices.str());
  const size_t b = size_t(batchDims);
  if (rowLength < 1 || rowLength > int64_t(data.rank() - b))
    return makeError("GatherND: index rows of length ", rowLength, " do not fit data ", data.str(), " after ",
                     b, " batch dims");
  for (size_t d = 0; d < b; ++d)
    if (data.dims[d] != indices.dims[d])
      return makeError("GatherND: batch dim ", d, " differs between data ", data.str(), " and indices ",
                       indices.str());
  Dims out(indices.dims.begin(), indices.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + ptrdiff_t(b) + rowLength, data.dims.end());
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(data.withDims(std::move(out)));
}

static Result inferScatterND(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::ScatterND;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectKind(op, "indices", in[1], kIntKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[2], "data", "updates"));
  AttrReader reader(op, attrs);
  std::string reduction = reader.string("reduction");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(checkScatterReduction(op, reduction, in[0]));
  const Type& data = in[0];
  const Type& indices = in[1];
  if (data.rank() == 0 || indices.rank() == 0)
    return makeError("ScatterND: data ", data.str(), " and indices ", indices.str(), " must have rank >= 1");
  const int64_t rowLength = indices.dims.back();
  if (rowLength < 1 || rowLength > int64_t(data.rank()))
    return makeError("ScatterND: index rows of length ", rowLength, " do not fit data ", data.str());
  Dims updates(indices.dims.begin(), indices.dims.end() - 1);
  updates.insert(updates.end(), data.dims.begin() + rowLength, data.dims.end());
  if (in[2].dims != updates)
    return makeError("ScatterND: updates ", in[2].str(), " must have dims ", dimsStr(updates));
  return single(data);
}

/// tf_crop_and_resize: an f32 input and a finite roi of two values per axis.
static Error expectCropRoi(const Type& input, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Resize;
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", input, bit(ElemKind::F32)));
  AttrReader roiReader(op, attrs);
  std::optional<std::vector<double>> roi = roiReader.optionalFloats("roi");
  EMBER_RETURN_IF_ERROR(roiReader.error());
  if (!roi || roi->size() != 2 * input.rank())
    return makeError("Resize: tf_crop_and_resize needs 'roi' with ", 2 * input.rank(), " values");
  for (double v : *roi)
    if (!std::isfinite(v)) return makeError("Resize: roi values must be finite");
  return Error::success();
}

/// Resize's sizes (one per axis, an empty axis stays empty) and optional
/// scales (one positive value per axis).
static Error expectResizeShape(const Type& input, const std::vector<int64_t>& sizes,
                               const std::optional<std::vector<double>>& scales) {
  constexpr OpKind op = OpKind::Resize;
  EMBER_RETURN_IF_ERROR(expectSize(op, "sizes", sizes, input.rank()));
  EMBER_RETURN_IF_ERROR(checkResultDims(op, sizes));
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 0 && input.dims[i] == 0)
      return makeError("Resize: cannot resize the empty axis ", i, " of ", input.str(), " to ", sizes[i]);
  if (scales) {
    if (scales->size() != input.rank())
      return makeError("Resize: attribute 'scales' must have ", input.rank(), " values, got ",
                       scales->size());
    for (double s : *scales)
      if (!(s > 0) || !std::isfinite(s)) return makeError("Resize: scales must be positive, got ", s);
  }
  return Error::success();
}

static Result inferResize(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Resize;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::vector<int64_t> sizes = reader.ints("sizes");
  std::optional<std::vector<double>> scales = reader.optionalFloats("scales");
  std::string mode = reader.string("mode");
  std::string transform = reader.string("coordinate_transformation_mode");
  std::string nearestMode = reader.string("nearest_mode");
  EMBER_RETURN_IF_ERROR(reader.error());
  const Type& input = in[0];
  if (mode == "nearest") {
    EMBER_RETURN_IF_ERROR(expectKind(op, "input", input, kRuleNumericKinds | kBoolKinds));
  } else if (parseResizeMode(mode)) {  // linear or cubic
    EMBER_RETURN_IF_ERROR(expectKind(op, "input", input, kRuleFloatKinds));
  } else {
    return makeError("Resize: unknown mode '", mode, "' (expected nearest, linear or cubic)");
  }
  if (!parseResizeCoordinateTransformationMode(transform))
    return makeError("Resize: unsupported coordinate_transformation_mode '", transform, "'");
  if (transform == "tf_crop_and_resize") EMBER_RETURN_IF_ERROR(expectCropRoi(input, attrs));
  if (!parseResizeNearestMode(nearestMode))
    return makeError("Resize: unknown nearest_mode '", nearestMode, "'");
  EMBER_RETURN_IF_ERROR(expectResizeShape(input, sizes, scales));
  return single(input.withDims(sizes));
}

static Result inferGridSample(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::GridSample;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  AttrReader reader(op, attrs);
  std::string mode = reader.string("mode");
  std::string padding = reader.string("padding_mode");
  int64_t alignCorners = reader.integer("align_corners");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "align_corners", alignCorners));
  if (!parseGridSampleMode(mode))
    return makeError("GridSample: unknown mode '", mode, "' (expected bilinear, nearest or bicubic)");
  if (!parseGridSamplePaddingMode(padding))
    return makeError("GridSample: unknown padding_mode '", padding,
                     "' (expected zeros, border or reflection)");
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[1], "input", "grid"));
  EMBER_RETURN_IF_ERROR(expectRank(op, "input", in[0], 4));
  EMBER_RETURN_IF_ERROR(expectRank(op, "grid", in[1], 4));
  const Dims& x = in[0].dims;
  const Dims& g = in[1].dims;
  if (g[0] != x[0] || g[3] != 2)
    return makeError("GridSample: grid ", in[1].str(), " must be [", x[0], ", OH, OW, 2] for input ",
                     in[0].str());
  if ((x[1] == 0 || x[2] == 0) && g[1] * g[2] > 0)
    return makeError("GridSample: cannot sample the empty input ", in[0].str());
  return single(in[0].withDims({x[0], g[1], g[2], x[3]}));
}

// High-level nodes.
static Result inferGemm(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Gemm;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectKind(op, "a", in[0], kRuleFloatKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[1], "a", "b"));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[2], "a", "c"));
  AttrReader reader(op, attrs);
  reader.real("alpha");
  reader.real("beta");
  int64_t transA = reader.integer("trans_a"), transB = reader.integer("trans_b");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "trans_a", transA));
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "trans_b", transB));
  EMBER_RETURN_IF_ERROR(expectRank(op, "a", in[0], 2));
  EMBER_RETURN_IF_ERROR(expectRank(op, "b", in[1], 2));
  int64_t m = in[0].dims[transA ? 1 : 0], k = in[0].dims[transA ? 0 : 1];
  int64_t kb = in[1].dims[transB ? 1 : 0], n = in[1].dims[transB ? 0 : 1];
  if (k != kb) return makeError("Gemm: op(a) has ", k, " columns, op(b) has ", kb, " rows");
  Dims out = {m, n};
  auto c = broadcastDims(in[2].dims, out);
  if (!c || *c != out) return makeError("Gemm: c ", in[2].str(), " does not broadcast to ", dimsStr(out));
  return single(in[0].withDims(std::move(out)));
}

/// BatchNorm, InstanceNorm: per-channel scale/bias (and mean/var) on `axis`.
static Result channelNormRule(OpKind op, Types in, const Attributes& attrs, size_t operands, size_t minRank) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, operands));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  AttrReader reader(op, attrs);
  reader.real("epsilon");
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (in[0].rank() < minRank)
    return makeError(opName(op), ": input must have rank >= ", minRank, ", got ", in[0].str());
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  static constexpr std::array<std::string_view, 4> kNames = {"scale", "bias", "mean", "var"};
  for (size_t i = 1; i < operands; ++i)
    EMBER_RETURN_IF_ERROR(expectChannelVector(op, kNames[i - 1], in[i], in[0], in[0].dims[a]));
  return single(in[0]);
}

static Result inferBatchNorm(Types in, const Attributes& a) {
  return channelNormRule(OpKind::BatchNorm, in, a, 5, 2);
}
static Result inferInstanceNorm(Types in, const Attributes& a) {
  return channelNormRule(OpKind::InstanceNorm, in, a, 3, 3);
}

static Result inferLayerNorm(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::LayerNorm;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  AttrReader reader(op, attrs);
  reader.real("epsilon");
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (in[0].rank() == 0) return makeError("LayerNorm: input must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  Dims normalized(in[0].dims.begin() + ptrdiff_t(a), in[0].dims.end());
  for (size_t i = 1; i < 3; ++i) {
    const char* name = i == 1 ? "scale" : "bias";
    EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[i], "input", name));
    auto b = broadcastDims(in[i].dims, normalized);
    if (!b || *b != normalized)
      return makeError("LayerNorm: ", name, " ", in[i].str(), " does not broadcast to ", dimsStr(normalized));
  }
  return single(in[0]);
}

static Result softmaxRule(OpKind op, Types in, const Attributes& attrs) {
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (in[0].rank() == 0) return makeError(opName(op), ": input must have rank >= 1");
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  (void)a;
  return single(in[0]);
}
static Result inferSoftmax(Types in, const Attributes& a) { return softmaxRule(OpKind::Softmax, in, a); }
static Result inferLogSoftmax(Types in, const Attributes& a) {
  return softmaxRule(OpKind::LogSoftmax, in, a);
}

static Result inferReduceMean(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceMean, in, a, kRuleFloatKinds);
}
static Result inferReduceSumSquare(Types in, const Attributes& a) {
  return reductionRule(OpKind::ReduceSumSquare, in, a, kRuleNumericKinds);
}

static Result activationWithAttrs(OpKind op, Types in, const Attributes& attrs,
                                  std::initializer_list<std::string_view> floats) {
  AttrReader reader(op, attrs);
  for (std::string_view name : floats) reader.real(name);
  EMBER_RETURN_IF_ERROR(reader.error());
  return activationRule(op, in);
}
static Result inferLeakyRelu(Types in, const Attributes& a) {
  return activationWithAttrs(OpKind::LeakyRelu, in, a, {"alpha"});
}
static Result inferElu(Types in, const Attributes& a) {
  return activationWithAttrs(OpKind::Elu, in, a, {"alpha"});
}
static Result inferSelu(Types in, const Attributes& a) {
  return activationWithAttrs(OpKind::Selu, in, a, {"alpha", "gamma"});
}
static Result inferSoftplus(Types in, const Attributes&) { return activationRule(OpKind::Softplus, in); }
static Result inferHardSigmoid(Types in, const Attributes& a) {
  return activationWithAttrs(OpKind::HardSigmoid, in, a, {"alpha", "beta"});
}
static Result inferHardSwish(Types in, const Attributes&) { return activationRule(OpKind::HardSwish, in); }

static Result inferGelu(Types in, const Attributes& attrs) {
  AttrReader reader(OpKind::Gelu, attrs);
  std::string approximate = reader.string("approximate");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (!parseGeluApproximate(approximate))
    return makeError("Gelu: approximate must be none or tanh, got '", approximate, "'");
  return activationRule(OpKind::Gelu, in);
}

static Result inferPRelu(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::PRelu;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleFloatKinds));
  EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], in[1], "input", "slope"));
  auto b = broadcastDims(in[0].dims, in[1].dims);
  if (!b || *b != in[0].dims)
    return makeError("PRelu: slope ", in[1].str(), " does not broadcast to input ", in[0].str());
  return single(in[0]);
}

static Result inferEinsum(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Einsum;
  AttrReader reader(op, attrs);
  std::string equation = reader.string("equation");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (in.empty()) return makeError("Einsum: needs at least one input");
  std::vector<Dims> dims;
  for (const Type& t : in) {
    EMBER_RETURN_IF_ERROR(expectKind(op, "input", t, kRuleNumericKinds));
    EMBER_RETURN_IF_ERROR(expectSameKind(op, in[0], t, "input 0", "another input"));
    dims.push_back(t.dims);
  }
  EMBER_ASSIGN_OR_RETURN(einsum::Equation eq, einsum::parse(equation, dims));
  Dims out;
  for (char label : eq.output) out.push_back(eq.size(label));
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(in[0].withDims(std::move(out)));
}

// Quantized primitives (docs/quantization.md).
namespace {

/// The result type named by `kind`/`scale`/`offset`, checked: a quantized
/// kind in `allowed`, a finite positive scale, an offset inside the kind's range.
Expected<Type> quantizedResult(OpKind op, const Attributes& attrs, KindSet allowed, Dims dims) {
  AttrReader reader(op, attrs);
  std::string kindName = reader.string("kind");
  double scale = reader.real("scale");
  int64_t offset = reader.integer("offset");
  EMBER_RETURN_IF_ERROR(reader.error());
  std::optional<ElemKind> kind = elemKindFromName(kindName);
  if (!kind || !(allowed & bit(*kind)))
    return makeError(opName(op), ": attribute 'kind' must be one of ", kindSetStr(allowed), ", got '",
                     kindName, "'");
  if (!(scale > 0) || !std::isfinite(float(scale)) || float(scale) <= 0)
    return makeError(opName(op), ": attribute 'scale' must be finite and > 0, got ", scale);
  int64_t lo = *kind == ElemKind::Int8Q ? -128 : 0;
  int64_t hi = *kind == ElemKind::Int8Q ? 127 : *kind == ElemKind::UInt8Q ? 255 : 0;
  if (offset < lo || offset > hi)
    return makeError(opName(op), ": attribute 'offset' ", offset, " is outside [", lo, ", ", hi, "] of ",
                     kindName);
  for (const char* name : {"clip_min", "clip_max"})
    if (const AttrValue* v = attrs.find(name); v && !std::holds_alternative<double>(*v))
      return makeError(opName(op), ": attribute '", name, "' must be a float");
  return Type(*kind, std::move(dims), float(scale), int32_t(offset));
}

/// A weight or bias operand: `kind`, offset 0.
Error expectSymmetric(OpKind op, std::string_view what, const Type& t, ElemKind kind) {
  if (t.kind != kind || t.offset != 0)
    return makeError(opName(op), ": ", what, " must be ", elemKindName(kind), " with offset 0, got ",
                     t.str());
  return Error::success();
}

Error expectScales(OpKind op, std::string_view what, const Type& t, int64_t count) {
  if (t.kind != ElemKind::F32 || t.rank() != 1 || t.dims[0] != count)
    return makeError(opName(op), ": ", what, " must be f32<", count, ">, got ", t.str());
  return Error::success();
}
}  // namespace

static Result inferQuantize(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Quantize;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], bit(ElemKind::F32)));
  EMBER_ASSIGN_OR_RETURN(Type t,
                         quantizedResult(op, attrs, kQuant8Kinds | bit(ElemKind::Int32Q), in[0].dims));
  return single(std::move(t));
}
static Result inferDequantize(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::Dequantize;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  if (!isQuantized(in[0].kind)) return makeError("Dequantize: input must be quantized, got ", in[0].str());
  return single(Type(ElemKind::F32, in[0].dims));
}
static Result inferRequantize(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Requantize;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  if (!(kQuant8Kinds & bit(in[0].kind)))
    return makeError("Requantize: input must be i8q or u8q, got ", in[0].str());
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, in[0].dims));
  return single(std::move(t));
}
static Result inferQuantizedConv(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedConv;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 4));
  const Type &input = in[0], &filter = in[1], &bias = in[2];
  if (!(kQuant8Kinds & bit(input.kind)))
    return makeError("QuantizedConv: input must be i8q or u8q, got ", input.str());
  EMBER_RETURN_IF_ERROR(expectSymmetric(op, "filter", filter, ElemKind::Int8Q));
  EMBER_RETURN_IF_ERROR(expectSymmetric(op, "bias", bias, ElemKind::Int32Q));
  // The geometry is Conv's: check it with Conv's rule on f32 stand-ins.
  std::vector<Type> asFloat = {Type(ElemKind::F32, input.dims), Type(ElemKind::F32, filter.dims),
                               Type(ElemKind::F32, bias.dims)};
  Attributes convAttrs;
  for (const char* name : {"strides", "pads", "dilations", "group"})
    if (const AttrValue* v = attrs.find(name)) convAttrs.set(name, *v);
  auto conv = inferConv(asFloat, convAttrs);
  if (!conv) return makeError("QuantizedConv: ", conv.error().message());
  EMBER_RETURN_IF_ERROR(expectScales(op, "filter_scales", in[3], filter.dims[0]));
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, (*conv)[0].dims));
  return single(std::move(t));
}
static Result inferQuantizedMatMul(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedMatMul;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 4));
  for (size_t i = 0; i < 2; ++i)
    if (!(kQuant8Kinds & bit(in[i].kind)))
      return makeError("QuantizedMatMul: ", i ? "rhs" : "lhs", " must be i8q or u8q, got ", in[i].str());
  std::vector<Type> asFloat = {Type(ElemKind::F32, in[0].dims), Type(ElemKind::F32, in[1].dims)};
  auto mm = inferMatMul(asFloat, {});
  if (!mm) return makeError("QuantizedMatMul: ", mm.error().message());
  int64_t n = in[1].dims.back();
  EMBER_RETURN_IF_ERROR(expectSymmetric(op, "bias", in[2], ElemKind::Int32Q));
  if (in[2].rank() != 1 || in[2].dims[0] != n)
    return makeError("QuantizedMatMul: bias must be [", n, "], got ", in[2].str());
  EMBER_RETURN_IF_ERROR(expectScales(op, "rhs_scales", in[3], n));
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, (*mm)[0].dims));
  return single(std::move(t));
}
static Result inferQuantizedAdd(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedAdd;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  for (size_t i = 0; i < 2; ++i)
    if (!(kQuant8Kinds & bit(in[i].kind)))
      return makeError("QuantizedAdd: ", i ? "rhs" : "lhs", " must be i8q or u8q, got ", in[i].str());
  EMBER_ASSIGN_OR_RETURN(Dims dims, broadcastFor(op, in[0].dims, in[1].dims));
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, std::move(dims)));
  return single(std::move(t));
}
static Result inferQuantizedAvgPool(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedAvgPool;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  if (!(kQuant8Kinds & bit(in[0].kind)))
    return makeError("QuantizedAvgPool: input must be i8q or u8q, got ", in[0].str());
  Attributes poolAttrs;
  for (const char* name : {"kernel", "strides", "pads", "ceil_mode", "count_include_pad"})
    if (const AttrValue* v = attrs.find(name)) poolAttrs.set(name, *v);
  std::vector<Type> asFloat = {Type(ElemKind::F32, in[0].dims)};
  auto pool = inferAvgPool(asFloat, poolAttrs);
  if (!pool) return makeError("QuantizedAvgPool: ", pool.error().message());
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, (*pool)[0].dims));
  return single(std::move(t));
}
static Result inferLookup(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::Lookup;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  if (!(kQuant8Kinds & bit(in[0].kind)))
    return makeError("Lookup: input must be i8q or u8q, got ", in[0].str());
  if (!(kQuant8Kinds & bit(in[1].kind)) || in[1].dims != Dims{256})
    return makeError("Lookup: table must be i8q or u8q with 256 entries, got ", in[1].str());
  return single(in[1].withDims(in[0].dims));
}

// Integer-only transformer ops (QuantMath.h): an 8-bit input, the output
// quantization from attributes.
static Error expectQuant8Input(OpKind op, const Type& input) {
  if (!(kQuant8Kinds & bit(input.kind)) || input.rank() == 0)
    return makeError(opName(op), ": input must be i8q or u8q of rank >= 1, got ", input.str());
  return Error::success();
}
static Result inferQuantizedSoftmax(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedSoftmax;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectQuant8Input(op, in[0]));
  EMBER_RETURN_IF_ERROR(expectKind(op, "mask", in[1], kBoolKinds));
  auto b = broadcastDims(in[1].dims, in[0].dims);
  if (!b || *b != in[0].dims)
    return makeError("QuantizedSoftmax: mask ", in[1].str(), " does not broadcast to ", dimsStr(in[0].dims));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  (void)a;  // any axis: the kernel walks rows along it
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, in[0].dims));
  return single(std::move(t));
}
static Result inferQuantizedLayerNorm(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedLayerNorm;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  EMBER_RETURN_IF_ERROR(expectQuant8Input(op, in[0]));
  AttrReader reader(op, attrs);
  double epsilon = reader.real("epsilon");
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (!(epsilon >= 0) || !std::isfinite(epsilon))
    return makeError("QuantizedLayerNorm: epsilon must be finite and >= 0, got ", epsilon);
  EMBER_ASSIGN_OR_RETURN(size_t a, normalizeAxis(op, axis, in[0].rank()));
  Dims normalized(in[0].dims.begin() + ptrdiff_t(a), in[0].dims.end());
  int64_t count = 1;
  for (int64_t d : normalized) count *= d;
  if (count > quant::kLayerNormMaxCount)
    return makeError("QuantizedLayerNorm: normalizes ", count, " elements, more than the integer form's ",
                     quant::kLayerNormMaxCount);
  for (size_t i = 1; i < 3; ++i) {
    const char* name = i == 1 ? "gamma" : "beta";
    EMBER_RETURN_IF_ERROR(expectKind(op, name, in[i], bit(ElemKind::F32)));
    auto b = broadcastDims(in[i].dims, normalized);
    if (!b || *b != normalized)
      return makeError("QuantizedLayerNorm: ", name, " ", in[i].str(), " does not broadcast to ",
                       dimsStr(normalized));
  }
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, in[0].dims));
  return single(std::move(t));
}
static Result inferQuantizedGelu(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizedGelu;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  if (!(kQuant8Kinds & bit(in[0].kind)))
    return makeError("QuantizedGelu: input must be i8q or u8q, got ", in[0].str());
  EMBER_ASSIGN_OR_RETURN(Type t, quantizedResult(op, attrs, kQuant8Kinds, in[0].dims));
  return single(std::move(t));
}

// Value-dependent output shapes: every result has its static upper bound,
// and the last is the i64 scalar count of valid entries (Ops.def).
static Result inferNonZero(Types in, const Attributes&) {
  EMBER_RETURN_IF_ERROR(expectOperands(OpKind::NonZero, in, 1));
  const int64_t rank = int64_t(in[0].rank()), numel = in[0].numElements();
  return std::vector<Type>{Type(ElemKind::I64, {rank, numel}), Type(ElemKind::I64, {})};
}
static Result inferUnique(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Unique;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], kRuleNumericKinds | kBoolKinds));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis"), sorted = reader.integer("sorted");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "sorted", sorted));
  const int64_t rank = int64_t(in[0].rank());
  if (axis < 0 || axis > rank) return makeError("Unique: axis ", axis, " must be in [0, ", rank, "]");
  if (axis == rank) {
    const int64_t n = in[0].numElements();
    return std::vector<Type>{in[0].withDims({n}), Type(ElemKind::I64, {n}), Type(ElemKind::I64, {n}),
                             Type(ElemKind::I64, {n}), Type(ElemKind::I64, {})};
  }
  const int64_t n = in[0].dims[size_t(axis)];
  return std::vector<Type>{in[0], Type(ElemKind::I64, {n}), Type(ElemKind::I64, {n}),
                           Type(ElemKind::I64, {n}), Type(ElemKind::I64, {})};
}
static Result inferNonMaxSuppression(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::NonMaxSuppression;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 2));
  EMBER_RETURN_IF_ERROR(expectKind(op, "boxes", in[0], bit(ElemKind::F32)));
  EMBER_RETURN_IF_ERROR(expectKind(op, "scores", in[1], bit(ElemKind::F32)));
  EMBER_RETURN_IF_ERROR(expectRank(op, "boxes", in[0], 3));
  EMBER_RETURN_IF_ERROR(expectRank(op, "scores", in[1], 3));
  AttrReader reader(op, attrs);
  int64_t centerPointBox = reader.integer("center_point_box");
  int64_t maxPerClass = reader.integer("max_output_boxes_per_class");
  reader.real("iou_threshold");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectBoolFlag(op, "center_point_box", centerPointBox));
  const Dims& b = in[0].dims;
  const Dims& s = in[1].dims;
  if (b[2] != 4 || s[0] != b[0] || s[2] != b[1])
    return makeError("NonMaxSuppression: boxes ", in[0].str(), " must be [B, N, 4] and scores ", in[1].str(),
                     " [B, C, N]");
  if (maxPerClass < 0)
    return makeError("NonMaxSuppression: max_output_boxes_per_class must be >= 0, got ", maxPerClass);
  const int64_t rows = b[0] * s[1] * std::min(maxPerClass, b[1]);
  return std::vector<Type>{Type(ElemKind::I64, {rows, 3}), Type(ElemKind::I64, {})};
}

// ONNX's quantization operators (Ops.def): integers as scale-1 quantized kinds.
static bool isRawInteger(const Type& t) {
  return t.kind == ElemKind::I32 ||
         ((t.kind == ElemKind::Int8Q || t.kind == ElemKind::UInt8Q) && t.scale == 1.0f && t.offset == 0);
}
/// scale/zero_point: one value, or one per index of `axis` of `input`.
static Error expectQuantParam(OpKind op, std::string_view what, const Type& param, const Type& input,
                              int64_t axis) {
  const int64_t n = param.numElements();
  if (param.rank() == 0 || (param.rank() == 1 && n == 1)) return Error::success();
  const int64_t rank = int64_t(input.rank());
  if (axis < -rank || axis >= rank)
    return makeError(opName(op), ": axis ", axis, " is out of range for ", input.str());
  const int64_t channels = input.dims[size_t(axis < 0 ? axis + rank : axis)];
  if (param.rank() != 1 || n != channels)
    return makeError(opName(op), ": ", what, " ", param.str(), " must have one value or ", channels,
                     " (one per index of axis ", axis, ")");
  return Error::success();
}
static Result inferQuantizeLinear(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::QuantizeLinear;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], bit(ElemKind::F32)));
  EMBER_RETURN_IF_ERROR(expectKind(op, "scale", in[1], bit(ElemKind::F32)));
  if ((in[2].kind != ElemKind::Int8Q && in[2].kind != ElemKind::UInt8Q) || !isRawInteger(in[2]))
    return makeError("QuantizeLinear: zero_point must be i8q or u8q with scale 1 and offset 0, got ",
                     in[2].str());
  EMBER_RETURN_IF_ERROR(expectQuantParam(op, "scale", in[1], in[0], axis));
  EMBER_RETURN_IF_ERROR(expectQuantParam(op, "zero_point", in[2], in[0], axis));
  return single(Type(in[2].kind, in[0].dims, 1.0f, 0));
}
static Result inferDequantizeLinear(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::DequantizeLinear;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  AttrReader reader(op, attrs);
  int64_t axis = reader.integer("axis");
  EMBER_RETURN_IF_ERROR(reader.error());
  if (!isRawInteger(in[0]))
    return makeError("DequantizeLinear: input must be i8q or u8q with scale 1 and offset 0, or i32, got ",
                     in[0].str());
  EMBER_RETURN_IF_ERROR(expectKind(op, "scale", in[1], bit(ElemKind::F32)));
  if (in[2].kind != in[0].kind || !isRawInteger(in[2]))
    return makeError("DequantizeLinear: zero_point ", in[2].str(), " must be of the input's kind ",
                     elemKindName(in[0].kind));
  EMBER_RETURN_IF_ERROR(expectQuantParam(op, "scale", in[1], in[0], axis));
  EMBER_RETURN_IF_ERROR(expectQuantParam(op, "zero_point", in[2], in[0], axis));
  return single(Type(ElemKind::F32, in[0].dims));
}
static Result inferDynamicQuantizeLinear(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::DynamicQuantizeLinear;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], bit(ElemKind::F32)));
  return std::vector<Type>{Type(ElemKind::UInt8Q, in[0].dims, 1.0f, 0), Type(ElemKind::F32, {}),
                           Type(ElemKind::UInt8Q, {}, 1.0f, 0)};
}
static Result inferMatMulInteger(Types in, const Attributes&) {
  constexpr OpKind op = OpKind::MatMulInteger;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 4));
  static constexpr std::array<std::string_view, 4> kNames = {"lhs", "rhs", "lhs_zero_point",
                                                             "rhs_zero_point"};
  for (size_t i = 0; i < 4; ++i)
    if (in[i].kind == ElemKind::I32 || !isRawInteger(in[i]))
      return makeError("MatMulInteger: ", kNames[i], " must be i8q or u8q with scale 1 and offset 0, got ",
                       in[i].str());
  if (in[2].kind != in[0].kind || in[3].kind != in[1].kind)
    return makeError("MatMulInteger: a zero point must have its operand's kind");
  if (in[0].rank() < 2 || in[1].rank() < 2)
    return makeError("MatMulInteger: operands must have rank >= 2, got ", in[0].str(), " and ", in[1].str());
  const Dims& a = in[0].dims;
  const Dims& b = in[1].dims;
  const int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb) return makeError("MatMulInteger: lhs ", in[0].str(), " and rhs ", in[1].str(), " differ in K");
  auto oneOr = [](const Type& t, int64_t count) {
    return t.rank() == 0 || (t.rank() == 1 && (t.dims[0] == 1 || t.dims[0] == count));
  };
  if (!oneOr(in[2], m) || !oneOr(in[3], n))
    return makeError("MatMulInteger: zero points ", in[2].str(), " and ", in[3].str(), " must be scalars, [",
                     m, "] and [", n, "]");
  EMBER_ASSIGN_OR_RETURN(Dims batch,
                         broadcastFor(op, Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)));
  batch.push_back(m);
  batch.push_back(n);
  EMBER_RETURN_IF_ERROR(checkResultDims(op, batch));
  return single(Type(ElemKind::I32, batch));
}

static Result inferRoiAlign(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::RoiAlign;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 3));
  AttrReader reader(op, attrs);
  std::string mode = reader.string("mode"), transform = reader.string("coordinate_transformation_mode");
  int64_t height = reader.integer("output_height"), width = reader.integer("output_width");
  int64_t samplingRatio = reader.integer("sampling_ratio");
  reader.real("spatial_scale");
  EMBER_RETURN_IF_ERROR(reader.error());
  EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], bit(ElemKind::F32)));
  EMBER_RETURN_IF_ERROR(expectKind(op, "rois", in[1], bit(ElemKind::F32)));
  EMBER_RETURN_IF_ERROR(expectKind(op, "batch_indices", in[2], kIntKinds));
  EMBER_RETURN_IF_ERROR(expectRank(op, "input", in[0], 4));
  EMBER_RETURN_IF_ERROR(expectRank(op, "rois", in[1], 2));
  EMBER_RETURN_IF_ERROR(expectRank(op, "batch_indices", in[2], 1));
  if (!parseRoiAlignMode(mode)) return makeError("RoiAlign: unknown mode '", mode, "' (expected avg or max)");
  if (!parseRoiAlignCoordinateTransformationMode(transform))
    return makeError("RoiAlign: unknown coordinate_transformation_mode '", transform, "'");
  const int64_t rois = in[1].dims[0];
  if (in[1].dims[1] != 4 || in[2].dims[0] != rois)
    return makeError("RoiAlign: rois ", in[1].str(), " must be [R, 4] and batch_indices ", in[2].str(),
                     " [R]");
  if (height < 1 || width < 1 || samplingRatio < 0)
    return makeError("RoiAlign: output_height and output_width must be >= 1 and sampling_ratio >= 0");
  Dims out = {rois, height, width, in[0].dims[3]};
  EMBER_RETURN_IF_ERROR(checkResultDims(op, out));
  return single(Type(ElemKind::F32, std::move(out)));
}

static Result inferRandom(Types in, const Attributes& attrs) {
  constexpr OpKind op = OpKind::Random;
  EMBER_RETURN_IF_ERROR(expectOperands(op, in, 1));
  AttrReader reader(op, attrs);
  std::string distribution = reader.string("distribution"), to = reader.string("to");
  for (std::string_view name : {"seed", "low", "high", "mean", "scale"}) reader.real(name);
  EMBER_RETURN_IF_ERROR(reader.error());
  const bool bernoulli = distribution == "bernoulli";
  if (!parseRandomDistribution(distribution))
    return makeError("Random: unknown distribution '", distribution,
                     "' (expected uniform, normal or bernoulli)");
  const KindSet floats = bit(ElemKind::F32) | bit(ElemKind::F64);
  std::optional<ElemKind> kind = elemKindFromName(to);
  const KindSet allowed =
      bernoulli ? floats | bit(ElemKind::I32) | bit(ElemKind::I64) | bit(ElemKind::Bool) : floats;
  if (!kind || !(bit(*kind) & allowed))
    return makeError("Random: output kind '", to, "' is not supported for ", distribution);
  if (bernoulli) EMBER_RETURN_IF_ERROR(expectKind(op, "input", in[0], floats));
  return single(Type(*kind, in[0].dims));
}

// A registered vendor op's own rule (core/graph/VendorOps.cpp).
static Result inferVendorOp(Types in, const Attributes& attrs) { return inferVendorOpResultTypes(in, attrs); }

// ---- Dispatch --------------------------------------------------------------------
// Generated from Ops.def after every rule is defined: an op kind without an
// infer<Name> function is an undeclared identifier, i.e. a compile error.

namespace {
using TypeRule = Result (*)(Types, const Attributes&);
constexpr TypeRule kTypeRules[] = {
#define EMBER_OP(Name, ...) &infer##Name,
#include "ember/Ops.def"
};
static_assert(std::size(kTypeRules) == kNumOpKinds);
}  // namespace

Expected<std::vector<Type>> inferResultTypes(OpKind kind, std::span<const Type> inputTypes,
                                             const Attributes& attrs) {
  if (size_t(kind) >= kNumOpKinds) return makeError("unknown op kind ", unsigned(kind));
  // Rules may rely on well-formed operand shapes (rank <= 6, sizes < 2^40).
  for (size_t i = 0; i < inputTypes.size(); ++i)
    if (Error e = checkDims(inputTypes[i].dims))
      return e.withContext(std::string(opName(kind)) + ": operand " + std::to_string(i));
  return kTypeRules[size_t(kind)](inputTypes, attrs);
}

}  // namespace ember
