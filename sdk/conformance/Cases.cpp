// The operator suite: every primitive and high-level op of Ops.def over many
// shapes and attributes (broadcasting, odd sizes, strides, pads, groups,
// dilations, ceil mode, int and quantized kinds).
#include "Cases.h"

#include <cmath>
#include <limits>

namespace ember::conformance {

// ---- CaseBuilder -------------------------------------------------------------

double CaseBuilder::uniform() {
  // splitmix64: tiny, seedable, identical on every platform.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / double(uint64_t(1) << 53));
}

int64_t CaseBuilder::uniformInt(int64_t lo, int64_t hi) {
  return lo + int64_t(uniform() * double(hi - lo + 1));
}

Tensor CaseBuilder::random(const Type& type, Fill fill) {
  Tensor t(type);
  const bool floating = isFloat(type.kind);
  for (int64_t i = 0; i < type.numElements(); ++i) {
    double v = 0;
    if (type.kind == ElemKind::Bool || fill == Fill::Bool) {
      v = uniform() < 0.5 ? 0 : 1;
    } else if (isQuantized(type.kind)) {
      int64_t lo = type.kind == ElemKind::Int8Q ? -128 : type.kind == ElemKind::UInt8Q ? 0 : -100000;
      int64_t hi = type.kind == ElemKind::Int8Q ? 127 : type.kind == ElemKind::UInt8Q ? 255 : 100000;
      v = double(uniformInt(lo, hi));
    } else {
      switch (fill) {
        case Fill::Signed:
          v = floating ? uniform() * 2 - 1 : double(uniformInt(-10, 9));
          break;
        case Fill::Wide:
          v = floating ? uniform() * 8 - 4 : double(uniformInt(-100, 99));
          break;
        case Fill::Positive:
          v = floating ? 0.5 + uniform() * 1.5 : double(uniformInt(1, 9));
          break;
        case Fill::NonZero: {
          double sign = uniform() < 0.5 ? -1 : 1;
          v = sign * (floating ? 0.5 + uniform() * 1.5 : double(uniformInt(1, 9)));
          break;
        }
        case Fill::SmallInt:
          v = double(uniformInt(-2, 2));
          break;
        case Fill::Bool:
        case Fill::Raw:
          v = double(uniformInt(-10, 9));
          break;
      }
    }
    t.setElementFromDouble(i, v);
  }
  return t;
}

NodeValue CaseBuilder::input(const Type& type, Fill fill) { return input(random(type, fill)); }

NodeValue CaseBuilder::input(Tensor value) {
  std::string name = "in" + std::to_string(inputs_.size());
  Node* node = function_.createPlaceholder(name, value.type());
  inputs_.push_back({name, std::move(value)});
  return node->result();
}

NodeValue CaseBuilder::weight(const Type& type, Fill fill) { return weight(random(type, fill)); }

NodeValue CaseBuilder::weight(Tensor value) {
  return function_.createConstant(function_.uniqueName("w"), std::move(value))->result();
}

Expected<Node*> CaseBuilder::node(OpKind kind, std::vector<NodeValue> inputs, Attributes attrs) {
  return function_.create(kind, std::string(opName(kind)), std::move(inputs), std::move(attrs));
}

// ---- The cases -------------------------------------------------------------------

namespace {

using Ints = std::vector<int64_t>;
constexpr ElemKind F32 = ElemKind::F32, I32 = ElemKind::I32, I64 = ElemKind::I64, Bool = ElemKind::Bool;

Type t(ElemKind kind, Dims dims) { return Type(kind, std::move(dims)); }
Type q(ElemKind kind, Dims dims, float scale, int32_t offset) {
  return Type(kind, std::move(dims), scale, offset);
}

std::string kindStr(ElemKind kind) { return std::string(elemKindName(kind)); }
std::string shapes(std::initializer_list<Dims> list) {
  std::string s;
  for (const Dims& d : list) s += (s.empty() ? "" : "+") + dimsStr(d);
  return s;
}

/// Integer tensor of `type` with values in [lo, hi].
Tensor ints(CaseBuilder& b, const Type& type, int64_t lo, int64_t hi) {
  Tensor out(type);
  for (int64_t i = 0; i < type.numElements(); ++i) out.setElementFromDouble(i, double(b.uniformInt(lo, hi)));
  return out;
}

/// f32 tensor with values in [lo, hi).
Tensor floats(CaseBuilder& b, Dims dims, double lo, double hi) {
  Tensor out(Type(F32, std::move(dims)));
  for (int64_t i = 0; i < out.type().numElements(); ++i)
    out.setElementFromDouble(i, lo + (hi - lo) * double(b.uniformInt(0, 1 << 20)) / double(1 << 20));
  return out;
}

class Suite {
 public:
  void add(OpKind op, const std::string& suffix, std::function<Expected<Node*>(CaseBuilder&)> build) {
    cases.push_back({op, std::string(opName(op)) + "/" + suffix, std::move(build)});
  }
  /// One input through a unary op.
  void unary(OpKind op, const Type& type, Fill fill, const Attributes& attrs = {},
             const std::string& extra = "") {
    add(op, kindStr(type.kind) + "/" + dimsStr(type.dims) + extra,
        [=](CaseBuilder& b) { return b.node(op, {b.input(type, fill)}, attrs); });
  }
  void binary(OpKind op, const Type& a, const Type& c, Fill fa, Fill fc, const Attributes& attrs = {}) {
    add(op, kindStr(a.kind) + "/" + shapes({a.dims, c.dims}), [=](CaseBuilder& b) {
      return b.node(op, {b.input(a, fa), b.input(c, fc)}, attrs);
    });
  }
  std::vector<CaseSpec> cases;
};

const std::vector<std::pair<Dims, Dims>> kBinaryShapes = {
    {{7}, {7}},
    {{2, 3, 4}, {2, 3, 4}},
    {{2, 3, 4}, {4}},
    {{2, 1, 4}, {3, 1}},
    {{1, 5, 1, 3}, {2, 1, 4, 1}},
    {{}, {3, 2}},
    {{17, 33}, {17, 33}},
    {{2, 1, 2, 1, 3, 2}, {1, 2, 1, 2, 1, 1}},
    {{4, 1}, {}},
};

/// Arithmetic on every broadcast shape of kBinaryShapes (f32; the first four in integers).
void binaryArithmetic(Suite& s) {
  for (OpKind op :
       {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow, OpKind::Max, OpKind::Min}) {
    Fill lhs = op == OpKind::Pow ? Fill::Positive : Fill::Signed;
    Fill rhs = op == OpKind::Div ? Fill::NonZero : Fill::Signed;
    for (const auto& [a, c] : kBinaryShapes) s.binary(op, t(F32, a), t(F32, c), lhs, rhs);
    if (op == OpKind::Pow) continue;
    for (ElemKind kind : {I32, I64})
      for (size_t i = 0; i < 4; ++i)
        s.binary(op, t(kind, kBinaryShapes[i].first), t(kind, kBinaryShapes[i].second), Fill::Signed, rhs);
  }
}

/// Comparisons, the Boolean ops and Select.
void comparisonsAndLogic(Suite& s) {
  for (OpKind op : {OpKind::Equal, OpKind::Less, OpKind::LessEqual, OpKind::Greater, OpKind::GreaterEqual}) {
    for (ElemKind kind : {F32, I32, I64})
      for (size_t i = 0; i < (kind == F32 ? kBinaryShapes.size() : 4); ++i)
        s.binary(op, t(kind, kBinaryShapes[i].first), t(kind, kBinaryShapes[i].second), Fill::SmallInt,
                 Fill::SmallInt);
  }
  for (size_t i = 0; i < 4; ++i)
    s.binary(OpKind::Equal, t(Bool, kBinaryShapes[i].first), t(Bool, kBinaryShapes[i].second), Fill::Bool,
             Fill::Bool);
  for (OpKind op : {OpKind::And, OpKind::Or, OpKind::Xor})
    for (size_t i = 0; i < 6; ++i)
      s.binary(op, t(Bool, kBinaryShapes[i].first), t(Bool, kBinaryShapes[i].second), Fill::Bool, Fill::Bool);

  struct SelectShapes {
    Dims cond, a, c;
  };
  for (const SelectShapes& sh : {SelectShapes{{5}, {5}, {5}}, SelectShapes{{2, 3, 4}, {4}, {2, 1, 1}},
                                 SelectShapes{{3, 1}, {1, 4}, {}}})
    for (ElemKind kind : {F32, I32, I64, Bool})
      s.add(OpKind::Select, kindStr(kind) + "/" + shapes({sh.cond, sh.a, sh.c}), [=](CaseBuilder& b) {
        return b.node(OpKind::Select, {b.input(t(Bool, sh.cond), Fill::Bool), b.input(t(kind, sh.a)),
                                       b.input(t(kind, sh.c))});
      });
}

/// The unary math ops on f32 of every rank (and integers where they apply), and Not.
void unaryMath(Suite& s) {
  const std::vector<Dims> unaryShapes = {{}, {1}, {5, 7}, {2, 3, 17}, {1, 2, 3, 4, 5, 6}};
  struct UnarySpec {
    OpKind op;
    Fill fill;
    bool ints;
  };
  const UnarySpec unaries[] = {
      {OpKind::Neg, Fill::Signed, true},     {OpKind::Abs, Fill::Signed, true},
      {OpKind::Sign, Fill::SmallInt, true},  {OpKind::Relu, Fill::Signed, true},
      {OpKind::Exp, Fill::Wide, false},      {OpKind::Log, Fill::Positive, false},
      {OpKind::Sqrt, Fill::Positive, false}, {OpKind::Reciprocal, Fill::NonZero, false},
      {OpKind::Sin, Fill::Wide, false},      {OpKind::Cos, Fill::Wide, false},
      {OpKind::Erf, Fill::Wide, false},      {OpKind::Floor, Fill::Wide, false},
      {OpKind::Ceil, Fill::Wide, false},     {OpKind::Tanh, Fill::Wide, false},
      {OpKind::Sigmoid, Fill::Wide, false},  {OpKind::Round, Fill::Wide, false},
      {OpKind::Asin, Fill::Signed, false},   {OpKind::Acos, Fill::Signed, false},
      {OpKind::Atan, Fill::Wide, false},     {OpKind::Asinh, Fill::Wide, false},
      {OpKind::Atanh, Fill::Signed, false},
  };
  for (const UnarySpec& u : unaries) {
    for (const Dims& d : unaryShapes) s.unary(u.op, t(F32, d), u.fill);
    if (u.ints)
      for (ElemKind kind : {I32, I64}) {
        s.unary(u.op, t(kind, {5, 7}), u.fill);
        s.unary(u.op, t(kind, {2, 3, 17}), u.fill);
      }
  }
  for (const Dims& d : {Dims{7}, Dims{3, 4, 5}}) s.unary(OpKind::Not, t(Bool, d), Fill::Bool);
}

/// Clip's bounds and Cast between every pair of element kinds it supports.
void clipAndCast(Suite& s) {
  s.unary(OpKind::Clip, t(F32, {5, 7}), Fill::Signed, {{"min", -0.5}, {"max", 0.5}}, "/-0.5..0.5");
  s.unary(OpKind::Clip, t(F32, {2, 3, 17}), Fill::Wide, {{"min", 0.0}, {"max", 6.0}}, "/0..6");
  s.unary(OpKind::Clip, t(I32, {5, 7}), Fill::Signed, {{"min", -3.0}, {"max", 4.0}}, "/-3..4");
  s.unary(OpKind::Clip, t(I64, {5, 7}), Fill::Signed, {{"min", -3.0}, {"max", 4.0}}, "/-3..4");

  const std::pair<ElemKind, ElemKind> casts[] = {
      {F32, I32},
      {F32, I64},
      {F32, Bool},
      {I32, F32},
      {I64, F32},
      {Bool, F32},
      {I32, I64},
      {I64, I32},
      {Bool, I32},
      {I32, Bool},
      {F32, ElemKind::F16},
      {ElemKind::F16, F32},
      {F32, ElemKind::BF16},
      {ElemKind::BF16, F32},
  };
  for (const auto& [from, to] : casts) {
    Fill fill = to == Bool ? Fill::SmallInt : Fill::Wide;
    s.unary(OpKind::Cast, t(from, {3, 5}), fill, {{"to", kindStr(to)}}, "/to_" + kindStr(to));
  }
}

void elementwise(Suite& s) {
  binaryArithmetic(s);
  comparisonsAndLogic(s);
  unaryMath(s);
  clipAndCast(s);
}

void linearAlgebra(Suite& s) {
  const std::pair<Dims, Dims> matmuls[] = {
      {{2, 3}, {3, 4}},          {{1, 1}, {1, 1}},    {{17, 33}, {33, 9}}, {{2, 3, 4}, {4, 5}},
      {{2, 1, 3, 4}, {3, 4, 5}}, {{3, 4}, {2, 4, 6}}, {{1, 64}, {64, 16}},
  };
  for (const auto& [a, c] : matmuls)
    s.binary(OpKind::MatMul, t(F32, a), t(F32, c), Fill::Signed, Fill::Signed);
  s.binary(OpKind::MatMul, t(I32, {3, 4}), t(I32, {4, 2}), Fill::Signed, Fill::Signed);
  s.binary(OpKind::MatMul, t(I64, {2, 5}), t(I64, {5, 3}), Fill::Signed, Fill::Signed);

  struct ConvSpec {
    std::string name;
    Dims input, filter;
    Ints strides, pads, dilations;
    int64_t group;
  };
  const ConvSpec convs[] = {
      {"3x3", {1, 5, 5, 3}, {4, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      {"3x3_s2_p1", {1, 7, 7, 3}, {4, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {"asym_pads_dilated", {2, 6, 9, 2}, {3, 2, 3, 2}, {1, 2}, {0, 1, 2, 0}, {2, 1}, 1},
      {"group2", {1, 5, 5, 4}, {6, 3, 3, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
      {"depthwise", {1, 6, 6, 6}, {6, 3, 3, 1}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6},
      {"1x1_batch2", {2, 4, 7, 8}, {5, 1, 1, 8}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      {"odd_5x3_s2x1", {1, 9, 11, 3}, {2, 5, 3, 3}, {2, 1}, {2, 1, 2, 1}, {1, 1}, 1},
  };
  for (const ConvSpec& c : convs)
    s.add(OpKind::Conv, "f32/" + c.name, [=](CaseBuilder& b) {
      return b.node(
          OpKind::Conv,
          {b.input(t(F32, c.input)), b.weight(t(F32, c.filter)), b.weight(t(F32, {c.filter[0]}))},
          {{"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}, {"group", c.group}});
    });

  struct ConvTSpec {
    std::string name;
    Dims input, filter;
    Ints strides, pads, dilations;
    int64_t group;
    Ints outputPadding;
  };
  const ConvTSpec convTs[] = {
      {"3x3", {1, 4, 4, 3}, {3, 3, 3, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, {0, 0}},
      {"s2_p1_outpad1", {1, 3, 5, 2}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1}},
      {"group2_s2", {1, 4, 4, 4}, {4, 2, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 2, {0, 0}},
      {"dilated_asym", {2, 3, 3, 2}, {2, 2, 3, 1}, {1, 2}, {0, 1, 0, 0}, {2, 2}, 1, {1, 0}},
  };
  for (const ConvTSpec& c : convTs)
    s.add(OpKind::ConvTranspose, "f32/" + c.name, [=](CaseBuilder& b) {
      int64_t outChannels = c.filter[3] * c.group;
      return b.node(OpKind::ConvTranspose,
                    {b.input(t(F32, c.input)), b.weight(t(F32, c.filter)), b.weight(t(F32, {outChannels}))},
                    {{"strides", c.strides},
                     {"pads", c.pads},
                     {"dilations", c.dilations},
                     {"group", c.group},
                     {"output_padding", c.outputPadding}});
    });
}

void pooling(Suite& s) {
  struct PoolSpec {
    std::string name;
    Dims input;
    Ints kernel, strides, pads;
    int64_t ceilMode;
  };
  const PoolSpec pools[] = {
      {"k2_s2", {1, 4, 4, 3}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0},
      {"k3_s1_p1", {2, 5, 5, 2}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0},
      {"k3_s2_ceil", {1, 7, 6, 3}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1},
      {"k2x3_s2x1_asym_pads", {1, 6, 7, 2}, {2, 3}, {2, 1}, {1, 0, 0, 1}, 0},
      {"k3_s2_p1_ceil", {1, 6, 6, 1}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1},
  };
  for (const PoolSpec& p : pools) {
    s.unary(OpKind::MaxPool, t(F32, p.input), Fill::Signed,
            {{"kernel", p.kernel},
             {"strides", p.strides},
             {"pads", p.pads},
             {"dilations", Ints{1, 1}},
             {"ceil_mode", p.ceilMode}},
            "/" + p.name);
    for (int64_t countPad : {0, 1})
      s.unary(OpKind::AvgPool, t(F32, p.input), Fill::Signed,
              {{"kernel", p.kernel},
               {"strides", p.strides},
               {"pads", p.pads},
               {"ceil_mode", p.ceilMode},
               {"count_include_pad", countPad}},
              "/" + p.name + (countPad ? "_count_pad" : ""));
  }
  Attributes dilated{{"kernel", Ints{2, 2}},
                     {"strides", Ints{1, 1}},
                     {"pads", Ints{0, 0, 0, 0}},
                     {"dilations", Ints{2, 2}},
                     {"ceil_mode", int64_t(0)}};
  s.unary(OpKind::MaxPool, t(F32, {1, 7, 7, 2}), Fill::Signed, dilated, "/k2_d2");
  Attributes k2{{"kernel", Ints{2, 2}},
                {"strides", Ints{2, 2}},
                {"pads", Ints{0, 0, 0, 0}},
                {"dilations", Ints{1, 1}},
                {"ceil_mode", int64_t(0)}};
  s.unary(OpKind::MaxPool, t(I32, {1, 4, 4, 3}), Fill::Wide, k2, "/k2_s2");
  s.unary(OpKind::MaxPool, q(ElemKind::Int8Q, {1, 4, 6, 2}, 0.1f, 2), Fill::Raw, k2, "/k2_s2");
}

void reductions(Suite& s) {
  const std::pair<Ints, int64_t> axesList[] = {
      {{0}, 1}, {{1}, 0}, {{2}, 1}, {{0, 2}, 0}, {{0, 1, 2}, 0}, {{0, 1, 2}, 1},
  };
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
    Fill fill = op == OpKind::ReduceProd ? Fill::Positive : Fill::Signed;
    for (const auto& [axes, keep] : axesList) {
      std::string name = "/axes";
      for (int64_t a : axes) name += "_" + std::to_string(a);
      name += keep ? "_keep" : "";
      s.unary(op, t(F32, {3, 4, 5}), fill, {{"axes", axes}, {"keepdims", keep}}, name);
    }
    s.unary(op, t(F32, {37}), fill, {{"axes", Ints{0}}, {"keepdims", int64_t(0)}}, "/axes_0");
    s.unary(op, t(I32, {3, 4}), Fill::SmallInt, {{"axes", Ints{1}}, {"keepdims", int64_t(0)}}, "/axes_1");
    s.unary(op, t(I64, {3, 4}), Fill::SmallInt, {{"axes", Ints{0}}, {"keepdims", int64_t(1)}},
            "/axes_0_keep");
  }
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin}) {
    for (int64_t axis : {0, 1, 2, -1})
      for (int64_t keep : {0, 1})
        for (int64_t last : {0, 1}) {
          if (axis == 1 && keep == 0 && last == 1) continue;
          s.unary(op, t(F32, {3, 4, 5}), last ? Fill::SmallInt : Fill::Signed,
                  {{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}},
                  "/axis" + std::to_string(axis) + (keep ? "_keep" : "") + (last ? "_last" : ""));
        }
    s.unary(op, t(I32, {4, 6}), Fill::SmallInt,
            {{"axis", int64_t(1)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(0)}}, "/axis1");
  }
  struct TopKSpec {
    Dims dims;
    int64_t k, axis, largest;
  };
  for (const TopKSpec& k :
       {TopKSpec{{3, 7}, 3, -1, 1}, TopKSpec{{3, 7}, 2, 0, 0}, TopKSpec{{2, 3, 4}, 4, 2, 1},
        TopKSpec{{2, 3, 4}, 1, 1, 0}, TopKSpec{{9}, 9, 0, 1}})
    s.unary(OpKind::TopK, t(F32, k.dims), Fill::Signed,
            {{"k", k.k}, {"axis", k.axis}, {"largest", k.largest}},
            "/k" + std::to_string(k.k) + "_axis" + std::to_string(k.axis) +
                (k.largest ? "_largest" : "_smallest"));
  s.unary(OpKind::TopK, t(I32, {4, 8}), Fill::Wide,
          {{"k", int64_t(3)}, {"axis", int64_t(1)}, {"largest", int64_t(1)}}, "/k3_axis1_largest");
}

void transposeAndReshapeCases(Suite& s) {
  const std::pair<Dims, Ints> transposes[] = {
      {{2, 3}, {1, 0}},
      {{2, 3, 4}, {2, 0, 1}},
      {{1, 3, 4, 5}, {0, 2, 3, 1}},
      {{1, 4, 5, 3}, {0, 3, 1, 2}},
      {{2, 1, 3, 1, 2, 2}, {5, 4, 3, 2, 1, 0}},
      {{3, 17}, {1, 0}},
  };
  for (const auto& [dims, perm] : transposes)
    s.unary(OpKind::Transpose, t(F32, dims), Fill::Signed, {{"perm", perm}});
  s.unary(OpKind::Transpose, t(I64, {3, 4}), Fill::Wide, {{"perm", Ints{1, 0}}});
  s.unary(OpKind::Transpose, t(Bool, {2, 3, 4}), Fill::Bool, {{"perm", Ints{1, 2, 0}}});

  for (const auto& [dims, shape] : std::vector<std::pair<Dims, Ints>>{
           {{2, 3, 4}, {6, 4}}, {{24}, {2, 3, 4}}, {{1, 3, 4, 5}, {1, 60}}, {{2, 3}, {3, 1, 2}}})
    s.unary(OpKind::Reshape, t(F32, dims), Fill::Signed, {{"shape", shape}}, "/to_" + dimsStr(shape));
}

void sliceAndConcatCases(Suite& s) {
  struct SliceSpec {
    std::string name;
    Dims dims;
    Ints starts, ends, steps;
  };
  for (const SliceSpec& sl :
       {SliceSpec{"steps", {5, 6, 7}, {1, 0, 2}, {4, 6, 7}, {1, 2, 3}},
        SliceSpec{"reverse", {5, 6}, {4, 5}, {-1, 0}, {-1, -2}}, SliceSpec{"stride2", {8}, {1}, {7}, {2}},
        SliceSpec{"nhwc_crop", {1, 6, 6, 3}, {0, 1, 2, 0}, {1, 5, 6, 2}, {1, 1, 1, 1}}})
    s.unary(OpKind::Slice, t(F32, sl.dims), Fill::Signed,
            {{"starts", sl.starts}, {"ends", sl.ends}, {"steps", sl.steps}}, "/" + sl.name);

  struct ConcatSpec {
    std::vector<Dims> parts;
    int64_t axis;
    ElemKind kind;
  };
  for (const ConcatSpec& c :
       {ConcatSpec{{{2, 3}, {4, 3}}, 0, F32}, ConcatSpec{{{2, 3, 1}, {2, 3, 4}, {2, 3, 2}}, 2, F32},
        ConcatSpec{{{1, 2, 3, 4}, {1, 2, 5, 4}}, 2, F32}, ConcatSpec{{{3, 2}, {3, 5}}, 1, I32},
        ConcatSpec{{{5}}, 0, F32}}) {
    std::string name = kindStr(c.kind) + "/axis" + std::to_string(c.axis) + "/";
    for (size_t i = 0; i < c.parts.size(); ++i) name += (i ? "+" : "") + dimsStr(c.parts[i]);
    s.add(OpKind::Concat, name, [=](CaseBuilder& b) {
      std::vector<NodeValue> ins;
      ins.reserve(c.parts.size());
      for (const Dims& d : c.parts) ins.push_back(b.input(t(c.kind, d)));
      return b.node(OpKind::Concat, ins, {{"axis", c.axis}});
    });
  }
}

void padTileAndBroadcastCases(Suite& s) {
  struct PadSpec {
    std::string name;
    Dims dims;
    Ints pads;
    std::string mode;
    double value;
  };
  for (const PadSpec& p : {PadSpec{"constant", {3, 4}, {1, 2, 0, 1}, "constant", 0.5},
                           PadSpec{"reflect", {2, 3, 4}, {0, 1, 2, 1, 0, 1}, "reflect", 0},
                           PadSpec{"edge", {3, 4}, {2, 2, 2, 2}, "edge", 0},
                           PadSpec{"crop", {5, 6}, {-1, 1, 0, -2}, "constant", -1},
                           PadSpec{"nhwc", {1, 4, 4, 3}, {0, 1, 1, 0, 0, 1, 1, 0}, "constant", 0}})
    s.unary(OpKind::Pad, t(F32, p.dims), Fill::Signed,
            {{"pads", p.pads}, {"mode", p.mode}, {"value", p.value}}, "/" + p.name);

  for (const auto& [dims, repeats] :
       std::vector<std::pair<Dims, Ints>>{{{2, 3}, {2, 1}}, {{2, 1, 3}, {1, 3, 2}}})
    s.unary(OpKind::Tile, t(F32, dims), Fill::Signed, {{"repeats", repeats}});
  s.unary(OpKind::Tile, t(I64, {3}), Fill::Wide, {{"repeats", Ints{4}}});

  for (const auto& [dims, shape] :
       std::vector<std::pair<Dims, Ints>>{{{3, 1}, {2, 3, 4}}, {{1}, {5}}, {{2, 1, 4}, {3, 1, 1, 1}}})
    s.unary(OpKind::Broadcast, t(F32, dims), Fill::Signed, {{"shape", shape}}, "/to_" + dimsStr(shape));
  s.unary(OpKind::Broadcast, t(Bool, {1, 3}), Fill::Bool, {{"shape", Ints{2, 3}}}, "/to_2x3");
}

void gatherCases(Suite& s) {
  struct GatherSpec {
    Dims data;
    ElemKind indexKind;
    Dims indices;
    int64_t axis;
  };
  for (const GatherSpec& g : {GatherSpec{{5, 4}, I64, {3}, 0}, GatherSpec{{3, 6}, I32, {2, 2}, 1},
                              GatherSpec{{2, 3, 4}, I64, {5}, 2}, GatherSpec{{7}, I32, {}, 0}})
    s.add(
        OpKind::Gather,
        "f32/" + shapes({g.data, g.indices}) + "/" + kindStr(g.indexKind) + "/axis" + std::to_string(g.axis),
        [=](CaseBuilder& b) {
          int64_t n = g.data[size_t(g.axis)];
          NodeValue data = b.input(t(F32, g.data));
          NodeValue indices =
              b.input(ints(b, t(g.indexKind, g.indices), -n, n - 1));  // negative: from the end
          return b.node(OpKind::Gather, {data, indices}, {{"axis", g.axis}});
        });
}

void resizeCases(Suite& s) {
  struct ResizeSpec {
    std::string name;
    Dims input;
    Ints sizes;
    std::string mode, transform, nearest;
    std::vector<double> scales;
  };
  for (const ResizeSpec& r :
       {ResizeSpec{
            "nearest_up2_asymmetric", {1, 4, 4, 3}, {1, 8, 8, 3}, "nearest", "asymmetric", "floor", {}},
        ResizeSpec{"nearest_half_pixel",
                   {1, 5, 3, 2},
                   {1, 7, 6, 2},
                   "nearest",
                   "half_pixel",
                   "round_prefer_floor",
                   {}},
        ResizeSpec{"nearest_tf_ceil",
                   {1, 4, 4, 1},
                   {1, 6, 3, 1},
                   "nearest",
                   "tf_half_pixel_for_nn",
                   "round_prefer_ceil",
                   {}},
        ResizeSpec{"linear_up2_half_pixel", {1, 4, 4, 3}, {1, 8, 8, 3}, "linear", "half_pixel", "floor", {}},
        ResizeSpec{
            "linear_down_align_corners", {1, 6, 6, 2}, {1, 3, 4, 2}, "linear", "align_corners", "floor", {}},
        ResizeSpec{"linear_pytorch_half_pixel",
                   {1, 5, 3, 2},
                   {1, 7, 1, 2},
                   "linear",
                   "pytorch_half_pixel",
                   "floor",
                   {}},
        ResizeSpec{"linear_scales_asymmetric",
                   {1, 4, 4, 3},
                   {1, 8, 8, 3},
                   "linear",
                   "asymmetric",
                   "floor",
                   {1, 2, 2, 1}}}) {
    Attributes attrs{{"sizes", r.sizes},
                     {"mode", r.mode},
                     {"coordinate_transformation_mode", r.transform},
                     {"nearest_mode", r.nearest}};
    if (!r.scales.empty()) attrs.set("scales", r.scales);
    s.unary(OpKind::Resize, t(F32, r.input), Fill::Signed, attrs, "/" + r.name);
  }
  s.unary(OpKind::Resize, t(I32, {1, 2, 3, 1}), Fill::Wide,
          {{"sizes", Ints{1, 4, 6, 1}},
           {"mode", "nearest"},
           {"coordinate_transformation_mode", "asymmetric"},
           {"nearest_mode", "floor"}},
          "/nearest_up2");
}

void dataMovement(Suite& s) {
  transposeAndReshapeCases(s);
  sliceAndConcatCases(s);
  padTileAndBroadcastCases(s);
  gatherCases(s);
  resizeCases(s);
}

void quantized(Suite& s) {
  constexpr ElemKind I8 = ElemKind::Int8Q, U8 = ElemKind::UInt8Q, I32Q = ElemKind::Int32Q;
  for (const auto& [kind, scale, offset] :
       std::vector<std::tuple<ElemKind, double, int64_t>>{{I8, 0.05, 3}, {U8, 0.02, 128}, {I32Q, 0.001, 0}})
    s.unary(OpKind::Quantize, t(F32, {4, 5}), Fill::Wide,
            {{"kind", kindStr(kind)}, {"scale", scale}, {"offset", offset}}, "/to_" + kindStr(kind));
  for (const Type& in : {q(I8, {4, 5}, 0.05f, -3), q(U8, {3, 7}, 0.02f, 128), q(I32Q, {6}, 0.001f, 0)})
    s.unary(OpKind::Dequantize, in, Fill::Raw);
  s.unary(OpKind::Requantize, q(I8, {4, 5}, 0.05f, -3), Fill::Raw,
          {{"kind", "u8q"}, {"scale", 0.1}, {"offset", int64_t(120)}}, "/to_u8q");
  s.unary(OpKind::Requantize, q(U8, {2, 9}, 0.02f, 128), Fill::Raw,
          {{"kind", "i8q"}, {"scale", 0.01}, {"offset", int64_t(-5)}}, "/to_i8q");

  s.add(OpKind::QuantizedAdd, "i8q/2x3x4+4", [](CaseBuilder& b) {
    return b.node(OpKind::QuantizedAdd,
                  {b.input(q(I8, {2, 3, 4}, 0.05f, 1), Fill::Raw), b.input(q(I8, {4}, 0.03f, -2), Fill::Raw)},
                  {{"kind", "i8q"}, {"scale", 0.08}, {"offset", int64_t(0)}});
  });
  s.add(OpKind::QuantizedAdd, "u8q/5x7/relu", [](CaseBuilder& b) {
    return b.node(
        OpKind::QuantizedAdd,
        {b.input(q(U8, {5, 7}, 0.02f, 128), Fill::Raw), b.input(q(U8, {5, 7}, 0.02f, 100), Fill::Raw)},
        {{"kind", "u8q"}, {"scale", 0.03}, {"offset", int64_t(10)}, {"clip_min", 0.0}});
  });

  struct QMatMulSpec {
    Dims lhs, rhs;
    ElemKind lhsKind;
  };
  for (const QMatMulSpec& m : {QMatMulSpec{{3, 8}, {8, 5}, I8}, QMatMulSpec{{2, 4, 16}, {16, 7}, U8}})
    s.add(OpKind::QuantizedMatMul, kindStr(m.lhsKind) + "/" + shapes({m.lhs, m.rhs}), [=](CaseBuilder& b) {
      int64_t n = m.rhs.back();
      NodeValue lhs = b.input(q(m.lhsKind, m.lhs, 0.05f, m.lhsKind == I8 ? 2 : 128), Fill::Raw);
      NodeValue rhs = b.weight(q(I8, m.rhs, 0.04f, 0), Fill::Raw);
      NodeValue bias = b.weight(ints(b, q(I32Q, {n}, 0.002f, 0), -1000, 1000));
      NodeValue scales = b.weight(floats(b, {n}, 0.02, 0.06));
      return b.node(
          OpKind::QuantizedMatMul, {lhs, rhs, bias, scales},
          {{"kind", kindStr(m.lhsKind)}, {"scale", 0.5}, {"offset", int64_t(m.lhsKind == I8 ? -5 : 120)}});
    });

  struct QConvSpec {
    std::string name;
    Dims input, filter;
    Ints strides, pads;
    int64_t group;
    ElemKind kind;
    bool relu;
  };
  for (const QConvSpec& c :
       {QConvSpec{"3x3_p1", {1, 5, 5, 3}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, 1, U8, false},
        QConvSpec{"depthwise_s2_relu", {1, 6, 6, 4}, {4, 3, 3, 1}, {2, 2}, {1, 1, 1, 1}, 4, I8, true},
        QConvSpec{"1x1", {2, 3, 4, 8}, {5, 1, 1, 8}, {1, 1}, {0, 0, 0, 0}, 1, I8, false}})
    s.add(OpKind::QuantizedConv, kindStr(c.kind) + "/" + c.name, [=](CaseBuilder& b) {
      int64_t o = c.filter[0];
      NodeValue input = b.input(q(c.kind, c.input, 0.02f, c.kind == U8 ? 128 : -1), Fill::Raw);
      NodeValue filter = b.weight(q(I8, c.filter, 0.03f, 0), Fill::Raw);
      NodeValue bias = b.weight(ints(b, q(I32Q, {o}, 0.0006f, 0), -2000, 2000));
      NodeValue scales = b.weight(floats(b, {o}, 0.01, 0.05));
      Attributes attrs{{"strides", c.strides},
                       {"pads", c.pads},
                       {"dilations", Ints{1, 1}},
                       {"group", c.group},
                       {"kind", kindStr(c.kind)},
                       {"scale", 0.25},
                       {"offset", int64_t(c.kind == U8 ? 10 : 0)}};
      if (c.relu) attrs.set("clip_min", 0.0);
      return b.node(OpKind::QuantizedConv, {input, filter, bias, scales}, attrs);
    });

  for (int64_t countPad : {0, 1})
    s.unary(OpKind::QuantizedAvgPool, q(I8, {1, 5, 5, 2}, 0.05f, 3), Fill::Raw,
            {{"kernel", Ints{3, 3}},
             {"strides", Ints{2, 2}},
             {"pads", Ints{1, 1, 1, 1}},
             {"ceil_mode", int64_t(0)},
             {"count_include_pad", countPad},
             {"kind", "i8q"},
             {"scale", 0.04},
             {"offset", int64_t(-2)}},
            countPad ? "/k3_s2_p1_count_pad" : "/k3_s2_p1");

  for (ElemKind kind : {I8, U8})
    s.add(OpKind::Lookup, kindStr(kind) + "/3x5", [=](CaseBuilder& b) {
      NodeValue input = b.input(q(kind, {3, 5}, 0.1f, kind == U8 ? 128 : 0), Fill::Raw);
      NodeValue table = b.weight(q(I8, {256}, 0.02f, 0), Fill::Raw);
      return b.node(OpKind::Lookup, {input, table});
    });
}

void highLevel(Suite& s) {
  struct GemmSpec {
    Dims a, bDims, c;
    double alpha, beta;
    int64_t transA, transB;
  };
  for (const GemmSpec& g :
       {GemmSpec{{3, 4}, {4, 5}, {5}, 1, 1, 0, 0}, GemmSpec{{4, 3}, {5, 4}, {3, 5}, 0.5, 2, 1, 1},
        GemmSpec{{2, 6}, {6, 3}, {}, 1, 0.5, 0, 0}, GemmSpec{{7, 2}, {7, 9}, {2, 1}, 1.5, 1, 1, 0}})
    s.add(OpKind::Gemm,
          "f32/" + shapes({g.a, g.bDims, g.c}) + (g.transA ? "/ta" : "") + (g.transB ? "/tb" : ""),
          [=](CaseBuilder& b) {
            return b.node(
                OpKind::Gemm, {b.input(t(F32, g.a)), b.weight(t(F32, g.bDims)), b.weight(t(F32, g.c))},
                {{"alpha", g.alpha}, {"beta", g.beta}, {"trans_a", g.transA}, {"trans_b", g.transB}});
          });

  for (const auto& [dims, axis] : std::vector<std::pair<Dims, int64_t>>{{{2, 3, 4, 5}, 3}, {{2, 3, 4}, 1}})
    s.add(OpKind::BatchNorm, "f32/" + dimsStr(dims) + "/axis" + std::to_string(axis),
          [dims = dims, axis = axis](CaseBuilder& b) {  // clang 14 cannot capture a binding
            Type c = t(F32, {dims[size_t(axis)]});
            return b.node(
                OpKind::BatchNorm,
                {b.input(t(F32, dims)), b.weight(c), b.weight(c), b.weight(c), b.weight(c, Fill::Positive)},
                {{"epsilon", 1e-5}, {"axis", axis}});
          });
  for (const auto& [dims, axis] :
       std::vector<std::pair<Dims, int64_t>>{{{2, 3, 8}, 2}, {{2, 3, 8}, 1}, {{4, 33}, -1}})
    s.add(OpKind::LayerNorm, "f32/" + dimsStr(dims) + "/axis" + std::to_string(axis),
          [dims = dims, axis = axis](CaseBuilder& b) {
            size_t first = size_t(axis < 0 ? axis + int64_t(dims.size()) : axis);
            Dims normalized(dims.begin() + ptrdiff_t(first), dims.end());
            return b.node(OpKind::LayerNorm,
                          {b.input(t(F32, dims), Fill::Wide), b.weight(t(F32, normalized)),
                           b.weight(t(F32, normalized))},
                          {{"epsilon", 1e-5}, {"axis", axis}});
          });
  s.add(OpKind::InstanceNorm, "f32/2x4x4x3/axis3", [](CaseBuilder& b) {
    return b.node(OpKind::InstanceNorm,
                  {b.input(t(F32, {2, 4, 4, 3}), Fill::Wide), b.weight(t(F32, {3})), b.weight(t(F32, {3}))},
                  {{"epsilon", 1e-5}, {"axis", int64_t(3)}});
  });
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax})
    for (const auto& [dims, axis] :
         std::vector<std::pair<Dims, int64_t>>{{{3, 7}, 1}, {{2, 3, 4}, 0}, {{1, 10}, -1}})
      s.unary(op, t(F32, dims), Fill::Wide, {{"axis", axis}}, "/axis" + std::to_string(axis));
  for (OpKind op : {OpKind::ReduceMean, OpKind::ReduceSumSquare}) {
    s.unary(op, t(F32, {3, 4, 5}), Fill::Signed, {{"axes", Ints{1}}, {"keepdims", int64_t(1)}},
            "/axes_1_keep");
    s.unary(op, t(F32, {3, 4, 5}), Fill::Signed, {{"axes", Ints{0, 2}}, {"keepdims", int64_t(0)}},
            "/axes_0_2");
  }
  struct ActSpec {
    OpKind op;
    Attributes attrs;
    std::string name;
  };
  const ActSpec acts[] = {
      {OpKind::LeakyRelu, {{"alpha", 0.1}}, ""},
      {OpKind::Elu, {{"alpha", 1.0}}, ""},
      {OpKind::Selu, {{"alpha", 1.6732632}, {"gamma", 1.0507009}}, ""},
      {OpKind::Softplus, {}, ""},
      {OpKind::HardSigmoid, {{"alpha", 0.2}, {"beta", 0.5}}, ""},
      {OpKind::HardSwish, {}, ""},
      {OpKind::Gelu, {{"approximate", "none"}}, "/erf"},
      {OpKind::Gelu, {{"approximate", "tanh"}}, "/tanh"},
  };
  for (const ActSpec& a : acts)
    for (const Dims& d : {Dims{2, 3, 5}, Dims{17}}) s.unary(a.op, t(F32, d), Fill::Wide, a.attrs, a.name);
  for (const auto& [dims, slope] : std::vector<std::pair<Dims, Dims>>{{{2, 3, 5}, {5}}, {{4, 6}, {1}}})
    s.add(OpKind::PRelu, "f32/" + shapes({dims, slope}), [dims = dims, slope = slope](CaseBuilder& b) {
      return b.node(OpKind::PRelu, {b.input(t(F32, dims), Fill::Wide), b.weight(t(F32, slope))});
    });
}

/// Elementwise ops added for model coverage: Mod, Acosh (domain >= 1), IsNaN.
void coverageElementwise(Suite& s) {
  auto mod = [&s](ElemKind kind, const Dims& a, const Dims& c, int64_t fmod) {
    s.add(OpKind::Mod, kindStr(kind) + "/" + shapes({a, c}) + "/fmod" + std::to_string(fmod),
          [=](CaseBuilder& b) {
            return b.node(OpKind::Mod, {b.input(t(kind, a), Fill::Wide), b.input(t(kind, c), Fill::NonZero)},
                          {{"fmod", fmod}});
          });
  };
  for (size_t i = 0; i < 4; ++i) {
    for (int64_t fmod : {0, 1})
      for (ElemKind kind : {I32, I64}) mod(kind, kBinaryShapes[i].first, kBinaryShapes[i].second, fmod);
    mod(F32, kBinaryShapes[i].first, kBinaryShapes[i].second, 1);
  }
  for (ElemKind kind : {I32, I64})
    s.binary(OpKind::Pow, t(kind, {2, 3, 4}), t(kind, {4}), Fill::SmallInt, Fill::SmallInt);
  for (const Dims& d : {Dims{7}, Dims{2, 3, 17}})
    s.add(OpKind::Acosh, "f32/" + dimsStr(d),
          [=](CaseBuilder& b) { return b.node(OpKind::Acosh, {b.input(floats(b, d, 1.0, 4.0))}); });
  s.add(OpKind::IsNaN, "f32/3x5", [](CaseBuilder& b) {
    Tensor x = b.random(t(F32, {3, 5}), Fill::Wide);
    for (int64_t i = 0; i < 15; i += 4) x.setElementFromDouble(i, std::numeric_limits<double>::quiet_NaN());
    x.setElementFromDouble(1, std::numeric_limits<double>::infinity());
    return b.node(OpKind::IsNaN, {b.input(std::move(x))});
  });
}

/// GatherND/ScatterND index rows: column k in [-dims[k], dims[k]).
Tensor indexRows(CaseBuilder& b, ElemKind kind, int64_t rows, const Dims& dims) {
  Tensor out(t(kind, {rows, int64_t(dims.size())}));
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < dims.size(); ++k)
      out.setElementFromDouble(r * int64_t(dims.size()) + int64_t(k),
                               double(b.uniformInt(-dims[k], dims[k] - 1)));
  return out;
}

void indexing(Suite& s) {
  struct ElementsSpec {
    Dims data, indices;
    int64_t axis;
    ElemKind indexKind;
  };
  for (const ElementsSpec& e :
       {ElementsSpec{{3, 4}, {3, 2}, 1, I64}, ElementsSpec{{2, 3, 4}, {2, 3, 4}, 0, I32},
        ElementsSpec{{4, 5}, {6, 5}, -2, I64}})
    s.add(
        OpKind::GatherElements,
        "f32/" + shapes({e.data, e.indices}) + "/" + kindStr(e.indexKind) + "/axis" + std::to_string(e.axis),
        [=](CaseBuilder& b) {
          int64_t n = e.data[size_t(e.axis < 0 ? e.axis + int64_t(e.data.size()) : e.axis)];
          return b.node(OpKind::GatherElements,
                        {b.input(t(F32, e.data)), b.input(ints(b, t(e.indexKind, e.indices), -n, n - 1))},
                        {{"axis", e.axis}});
        });
  for (const std::string reduction : {"none", "add", "mul", "max", "min"})
    for (ElemKind kind : {F32, I64})
      s.add(OpKind::ScatterElements, kindStr(kind) + "/4x3+2x3/axis0/" + reduction, [=](CaseBuilder& b) {
        return b.node(
            OpKind::ScatterElements,
            {b.input(t(kind, {4, 3})), b.input(ints(b, t(I64, {2, 3}), -4, 3)), b.input(t(kind, {2, 3}))},
            {{"axis", int64_t(0)}, {"reduction", reduction}});
      });
  s.add(OpKind::ScatterElements, "f32/2x5+2x3/axis1/i32", [](CaseBuilder& b) {
    return b.node(OpKind::ScatterElements,
                  {b.input(t(F32, {2, 5})), b.input(ints(b, t(I32, {2, 3}), -5, 4)), b.input(t(F32, {2, 3}))},
                  {{"axis", int64_t(1)}, {"reduction", std::string("none")}});
  });
  s.add(OpKind::GatherND, "f32/2x3x4+5x2", [](CaseBuilder& b) {
    return b.node(OpKind::GatherND, {b.input(t(F32, {2, 3, 4})), b.input(indexRows(b, I64, 5, {2, 3}))},
                  {{"batch_dims", int64_t(0)}});
  });
  s.add(OpKind::GatherND, "i32/3x4+2x2x2", [](CaseBuilder& b) {
    Tensor indices = indexRows(b, I64, 4, {3, 4});
    indices.reshape({2, 2, 2});
    return b.node(OpKind::GatherND, {b.input(t(I32, {3, 4})), b.input(std::move(indices))},
                  {{"batch_dims", int64_t(0)}});
  });
  s.add(OpKind::GatherND, "f32/2x3x4+2x1/batch1", [](CaseBuilder& b) {
    return b.node(OpKind::GatherND, {b.input(t(F32, {2, 3, 4})), b.input(indexRows(b, I32, 2, {3}))},
                  {{"batch_dims", int64_t(1)}});
  });
  for (const std::string reduction : {"none", "add", "mul"})
    s.add(OpKind::ScatterND, "f32/4x3+2x1/" + reduction, [=](CaseBuilder& b) {
      return b.node(OpKind::ScatterND,
                    {b.input(t(F32, {4, 3})), b.input(indexRows(b, I64, 2, {4})), b.input(t(F32, {2, 3}))},
                    {{"reduction", reduction}});
    });
  s.add(OpKind::ScatterND, "i64/2x3x4+3x2", [](CaseBuilder& b) {
    return b.node(
        OpKind::ScatterND,
        {b.input(t(I64, {2, 3, 4})), b.input(indexRows(b, I64, 3, {2, 3})), b.input(t(I64, {3, 4}))},
        {{"reduction", std::string("none")}});
  });
}

void modelCoverageMisc(Suite& s) {
  for (const Dims& d : {Dims{3, 3}, Dims{2, 4, 4}, Dims{1, 1}}) s.unary(OpKind::Det, t(F32, d), Fill::Signed);
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (int64_t align : {0, 1})
        s.add(OpKind::GridSample,
              std::string("f32/2x4x5x3/") + mode + "_" + padding + "_align" + std::to_string(align),
              [=](CaseBuilder& b) {
                // Grid points reach past [-1, 1] so that every padding mode matters.
                return b.node(OpKind::GridSample,
                              {b.input(t(F32, {2, 4, 5, 3})), b.input(floats(b, {2, 3, 6, 2}, -1.3, 1.3))},
                              {{"mode", std::string(mode)},
                               {"padding_mode", std::string(padding)},
                               {"align_corners", align}});
              });
  struct CubicSpec {
    std::string name;
    Dims input, sizes;
    std::string transform;
    double a;
    int64_t excludeOutside;
  };
  for (const CubicSpec& c :
       {CubicSpec{"up2_half_pixel", {1, 4, 4, 2}, {1, 8, 8, 2}, "half_pixel", -0.75, 0},
        CubicSpec{"down_align_corners", {1, 6, 5, 1}, {1, 4, 3, 1}, "align_corners", -0.75, 0},
        CubicSpec{"up_exclude_outside", {1, 3, 4, 2}, {1, 5, 7, 2}, "half_pixel", -0.5, 1},
        CubicSpec{"asymmetric", {2, 3, 3, 1}, {2, 6, 4, 1}, "asymmetric", -0.75, 0}})
    s.unary(OpKind::Resize, t(F32, c.input), Fill::Signed,
            {{"sizes", c.sizes},
             {"mode", std::string("cubic")},
             {"coordinate_transformation_mode", c.transform},
             {"nearest_mode", std::string("floor")},
             {"cubic_coeff_a", c.a},
             {"exclude_outside", c.excludeOutside}},
            "/cubic_" + c.name);
}

void einsumCases(Suite& s) {
  struct EinsumSpec {
    std::string equation;
    std::vector<Dims> inputs;
  };
  const EinsumSpec specs[] = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"i,i", {{7}, {7}}},
      {"ij->ji", {{3, 5}}},
      {"ij->i", {{3, 5}}},
      {"bhwc,hkc->bhwk", {{2, 3, 4, 5}, {3, 6, 5}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 3}}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 2}}},
      {"ij,kl->ijkl", {{2, 3}, {2, 2}}},
  };
  for (const EinsumSpec& e : specs)
    s.add(OpKind::Einsum, "f32/" + e.equation, [=](CaseBuilder& b) {
      std::vector<NodeValue> inputs;
      inputs.reserve(e.inputs.size());
      for (const Dims& d : e.inputs) inputs.push_back(b.input(t(F32, d)));
      return b.node(OpKind::Einsum, inputs, {{"equation", e.equation}});
    });
  s.add(OpKind::Einsum, "i64/ij,jk->ik", [](CaseBuilder& b) {
    return b.node(OpKind::Einsum, {b.input(t(I64, {3, 4})), b.input(t(I64, {4, 2}))},
                  {{"equation", std::string("ij,jk->ik")}});
  });
}

void valueDependentCases(Suite& s) {
  s.unary(OpKind::NonZero, t(F32, {3, 5}), Fill::SmallInt);
  s.unary(OpKind::NonZero, t(Bool, {2, 3, 2}), Fill::Bool);
  s.unary(OpKind::NonZero, t(I64, {}), Fill::SmallInt);
  for (int64_t sorted : {0, 1}) {
    const std::string suffix = sorted ? "_sorted" : "_first_seen";
    s.unary(OpKind::Unique, t(F32, {3, 4}), Fill::SmallInt, {{"axis", int64_t(2)}, {"sorted", sorted}},
            "/flat" + suffix);
    s.unary(OpKind::Unique, t(I32, {4, 3}), Fill::SmallInt, {{"axis", int64_t(0)}, {"sorted", sorted}},
            "/axis0" + suffix);
    s.unary(OpKind::Unique, t(I64, {2, 5, 2}), Fill::SmallInt, {{"axis", int64_t(1)}, {"sorted", sorted}},
            "/axis1" + suffix);
  }
  for (int64_t center : {0, 1})
    for (double iou : {0.0, 0.5})
      s.add(OpKind::NonMaxSuppression,
            "f32/2x6x4+2x3x6/center" + std::to_string(center) + "_iou" + std::to_string(iou).substr(0, 3),
            [=](CaseBuilder& b) {
              Attributes attrs{{"center_point_box", center},
                               {"max_output_boxes_per_class", int64_t(4)},
                               {"iou_threshold", iou}};
              if (center) attrs.set("score_threshold", 0.2);
              return b.node(OpKind::NonMaxSuppression,
                            {b.input(floats(b, {2, 6, 4}, 0, 4)), b.input(floats(b, {2, 3, 6}, 0, 1))},
                            attrs);
            });
}

void onnxQuantizationCases(Suite& s) {
  const Type u8s = q(ElemKind::UInt8Q, {}, 1.0f, 0), i8s = q(ElemKind::Int8Q, {}, 1.0f, 0);
  s.add(OpKind::QuantizeLinear, "f32/2x3x4/u8_per_tensor", [=](CaseBuilder& b) {
    return b.node(
        OpKind::QuantizeLinear,
        {b.input(floats(b, {2, 3, 4}, -300, 300)), b.weight(floats(b, {}, 0.5, 2)), b.weight(u8s, Fill::Raw)},
        {{"axis", int64_t(1)}});
  });
  s.add(OpKind::QuantizeLinear, "f32/2x3x4/i8_axis1", [=](CaseBuilder& b) {
    return b.node(OpKind::QuantizeLinear,
                  {b.input(floats(b, {2, 3, 4}, -100, 100)), b.weight(floats(b, {3}, 0.25, 2)),
                   b.weight(q(ElemKind::Int8Q, {3}, 1.0f, 0), Fill::Raw)},
                  {{"axis", int64_t(1)}});
  });
  s.add(OpKind::DequantizeLinear, "u8/3x5/per_tensor", [=](CaseBuilder& b) {
    return b.node(OpKind::DequantizeLinear,
                  {b.input(q(ElemKind::UInt8Q, {3, 5}, 1.0f, 0), Fill::Raw), b.weight(floats(b, {}, 0.01, 1)),
                   b.weight(u8s, Fill::Raw)},
                  {{"axis", int64_t(1)}});
  });
  s.add(OpKind::DequantizeLinear, "i8/3x5/axis0", [=](CaseBuilder& b) {
    return b.node(OpKind::DequantizeLinear,
                  {b.input(q(ElemKind::Int8Q, {3, 5}, 1.0f, 0), Fill::Raw), b.weight(floats(b, {3}, 0.01, 1)),
                   b.weight(q(ElemKind::Int8Q, {3}, 1.0f, 0), Fill::Raw)},
                  {{"axis", int64_t(0)}});
  });
  for (const char* mode : {"nearest", "linear", "cubic"})
    s.unary(OpKind::Resize, t(F32, {1, 5, 6, 2}), Fill::Signed,
            {{"sizes", Ints{1, 3, 4, 2}},
             {"mode", std::string(mode)},
             {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
             {"nearest_mode", std::string("round_prefer_floor")},
             {"roi", std::vector<double>{0, -0.2, 0.3, 0, 1, 0.9, 1.1, 1}},
             {"extrapolation_value", 0.5}},
            std::string("/tf_crop_and_resize_") + mode);
  s.add(OpKind::DynamicQuantizeLinear, "f32/4x6", [](CaseBuilder& b) {
    return b.node(OpKind::DynamicQuantizeLinear, {b.input(floats(b, {4, 6}, -3, 5))});
  });
  s.add(OpKind::MatMulInteger, "u8xi8/2x3x7+7x5", [=](CaseBuilder& b) {
    return b.node(OpKind::MatMulInteger,
                  {b.input(q(ElemKind::UInt8Q, {2, 3, 7}, 1.0f, 0), Fill::Raw),
                   b.input(q(ElemKind::Int8Q, {7, 5}, 1.0f, 0), Fill::Raw), b.weight(u8s, Fill::Raw),
                   b.weight(q(ElemKind::Int8Q, {5}, 1.0f, 0), Fill::Raw)});
  });
  s.add(OpKind::MatMulInteger, "i8xu8/4x9+9x3", [=](CaseBuilder& b) {
    return b.node(OpKind::MatMulInteger, {b.input(q(ElemKind::Int8Q, {4, 9}, 1.0f, 0), Fill::Raw),
                                          b.input(q(ElemKind::UInt8Q, {9, 3}, 1.0f, 0), Fill::Raw),
                                          b.weight(i8s, Fill::Raw), b.weight(u8s, Fill::Raw)});
  });
}

void roiAlignCases(Suite& s) {
  for (const char* mode : {"avg", "max"})
    for (const char* transform : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2})
        s.add(OpKind::RoiAlign,
              std::string("f32/2x9x8x3/") + mode + "_" + transform + "_ratio" + std::to_string(ratio),
              [=](CaseBuilder& b) {
                // Boxes partly outside the input, so the edge rules matter.
                Tensor rois = floats(b, {4, 4}, -2, 10);
                for (int64_t r = 0; r < 4; ++r) {
                  float* box = rois.as<float>() + r * 4;
                  if (box[2] < box[0]) std::swap(box[0], box[2]);
                  if (box[3] < box[1]) std::swap(box[1], box[3]);
                }
                Tensor batch(t(I64, {4}));
                for (int64_t r = 0; r < 4; ++r) batch.as<int64_t>()[r] = r % 2;
                return b.node(
                    OpKind::RoiAlign,
                    {b.input(t(F32, {2, 9, 8, 3})), b.input(std::move(rois)), b.input(std::move(batch))},
                    {{"mode", std::string(mode)},
                     {"output_height", int64_t(3)},
                     {"output_width", int64_t(2)},
                     {"sampling_ratio", ratio},
                     {"spatial_scale", 0.75},
                     {"coordinate_transformation_mode", std::string(transform)}});
              });
}

// Random is seeded, so every backend must give the reference's exact bytes.
void randomCases(Suite& s) {
  for (const char* distribution : {"uniform", "normal", "bernoulli"})
    s.add(OpKind::Random, std::string("f32/5x7/") + distribution, [=](CaseBuilder& b) {
      return b.node(OpKind::Random, {b.input(floats(b, {5, 7}, 0, 1))},
                    {{"distribution", std::string(distribution)},
                     {"seed", 11.0},
                     {"low", -1.0},
                     {"high", 2.0},
                     {"mean", 0.5},
                     {"scale", 3.0},
                     {"to", std::string("f32")}});
    });
}

/// The integer-only transformer ops (QuantMath.h, docs/quantization.md 2.11).
void transformerQuantizedCases(Suite& s) {
  constexpr ElemKind I8 = ElemKind::Int8Q, U8 = ElemKind::UInt8Q;
  struct SoftmaxSpec {
    std::string name;
    Dims input, mask;
    int64_t axis;
    ElemKind kind;
  };
  for (const SoftmaxSpec& c : {SoftmaxSpec{"2x3x16/last", {2, 3, 16}, {}, -1, I8},
                               SoftmaxSpec{"4x16x16/causal_mask", {4, 16, 16}, {16, 16}, 2, I8},
                               SoftmaxSpec{"3x9x5/axis1", {3, 9, 5}, {}, 1, U8}})
    s.add(OpKind::QuantizedSoftmax, kindStr(c.kind) + "/" + c.name, [=](CaseBuilder& b) {
      NodeValue input = b.input(q(c.kind, c.input, 0.06f, c.kind == U8 ? 128 : -3), Fill::Raw);
      NodeValue mask = b.weight(Type(ElemKind::Bool, c.mask), Fill::Bool);
      return b.node(OpKind::QuantizedSoftmax, {input, mask},
                    {{"axis", c.axis},
                     {"kind", kindStr(c.kind)},
                     {"scale", 1.0 / 255},
                     {"offset", int64_t(c.kind == U8 ? 0 : -128)}});
    });
  for (ElemKind kind : {I8, U8})
    s.add(OpKind::QuantizedLayerNorm, kindStr(kind) + "/2x5x32", [=](CaseBuilder& b) {
      NodeValue input = b.input(q(kind, {2, 5, 32}, 0.04f, kind == U8 ? 120 : 5), Fill::Raw);
      NodeValue gamma = b.weight(floats(b, {32}, 0.5, 1.5));
      NodeValue beta = b.weight(floats(b, {32}, -0.3, 0.3));
      return b.node(OpKind::QuantizedLayerNorm, {input, gamma, beta},
                    {{"epsilon", 1e-5},
                     {"axis", int64_t(2)},
                     {"kind", kindStr(kind)},
                     {"scale", 0.03},
                     {"offset", int64_t(kind == U8 ? 128 : 0)}});
    });
  for (ElemKind kind : {I8, U8})
    s.unary(OpKind::QuantizedGelu, q(kind, {3, 7, 11}, 0.05f, kind == U8 ? 128 : 0), Fill::Raw,
            {{"kind", kindStr(kind)}, {"scale", 0.03}, {"offset", int64_t(kind == U8 ? 6 : -122)}});
}

}  // namespace

std::vector<CaseSpec> allCases() {
  Suite s;
  elementwise(s);
  linearAlgebra(s);
  pooling(s);
  reductions(s);
  dataMovement(s);
  quantized(s);
  highLevel(s);
  coverageElementwise(s);
  indexing(s);
  einsumCases(s);
  modelCoverageMisc(s);
  valueDependentCases(s);
  onnxQuantizationCases(s);
  roiAlignCases(s);
  randomCases(s);
  transformerQuantizedCases(s);
  return std::move(s.cases);
}

}  // namespace ember::conformance
