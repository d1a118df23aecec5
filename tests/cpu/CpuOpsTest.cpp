// Cross-backend operator suite: every case builds a small graph, compiles it
// for the reference backend (the oracle) and for the cpu backend, runs both on
// the same random inputs and compares. f32 results must agree within a
// tolerance relative to the output's magnitude (the cpu backend sums in
// another order); everything else must be bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "backends/BuiltinBackends.h"
#include "backends/cpu/Jit.h"
#include "ember/OpTable.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;

constexpr double kRelativeTolerance = 2e-5;

/// A graph builder: adds nodes to `f` and its outputs.
using Build = std::function<void(Function& f)>;

struct Case {
  std::string name;
  Build build;
};

Tensor randomTensor(Type type, uint64_t seed) {
  Tensor t(type);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t i = 0; i < t.type().numElements(); ++i) t.setElementFromDouble(i, dist(rng));
  return t;
}

NodeValue input(Function& f, const std::string& name, Dims dims) {
  return f.createPlaceholder(name, Type(ElemKind::F32, std::move(dims)))->result();
}

NodeValue constant(Function& f, const std::string& name, Dims dims, uint64_t seed) {
  return f.createConstant(name, randomTensor(Type(ElemKind::F32, std::move(dims)), seed))->result();
}

NodeValue op(Function& f, OpKind kind, std::vector<NodeValue> inputs, Attributes attrs = {}) {
  auto node = f.create(kind, f.uniqueName(std::string(opName(kind))), std::move(inputs), std::move(attrs));
  EXPECT_TRUE(node) << node.error().message();
  return node ? (*node)->result() : NodeValue();
}

Expected<std::map<std::string, Tensor>> runOn(const std::string& backendName, const Build& build) {
  Module module;
  Function& f = module.createFunction("test");
  build(f);
  EMBER_RETURN_IF_ERROR(f.verify());
  ExecutionContext context;
  uint64_t seed = 7;
  for (Node* in : f.inputs()) context.setInput(in->name(), randomTensor(in->resultType(), seed++));
  EMBER_ASSIGN_OR_RETURN(auto backend, BackendRegistry::global().create(backendName));
  EMBER_ASSIGN_OR_RETURN(auto compiled, compileFunction(f, std::move(backend)));
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  // Run twice: the second run must not depend on state left by the first.
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  return context.outputs();
}

class CpuOpsTest : public testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { registerBuiltinBackends(); }
};

TEST_P(CpuOpsTest, MatchesReference) {
  const Case& c = GetParam();
  auto expected = runOn("reference", c.build);
  ASSERT_TRUE(expected) << expected.error().message();
  auto got = runOn("cpu", c.build);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), expected->size());
  for (const auto& [name, want] : *expected) {
    const Tensor& have = got->at(name);
    ASSERT_EQ(have.type(), want.type()) << name;
    if (want.type().kind != ElemKind::F32) {
      EXPECT_TRUE(have.bitwiseEqual(want)) << name << " differs";
      continue;
    }
    double maxRef = 0, maxErr = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < want.type().numElements(); ++i) {
      double w = want.elementAsDouble(i), h = have.elementAsDouble(i);
      maxRef = std::max(maxRef, std::fabs(w));
      double err = std::isnan(w) && std::isnan(h) ? 0 : std::fabs(w - h);
      if (std::isnan(err)) err = INFINITY;
      if (err > maxErr) {
        maxErr = err;
        worst = i;
      }
    }
    EXPECT_LE(maxErr, kRelativeTolerance * std::max(1.0, maxRef))
        << name << ": element " << worst << " expected " << want.elementAsDouble(worst) << " got "
        << have.elementAsDouble(worst);
  }
}

Attributes convAttrs(int64_t stride, int64_t pad, int64_t dilation, int64_t group) {
  return Attributes{{"strides", std::vector<int64_t>{stride, stride}},
                    {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                    {"dilations", std::vector<int64_t>{dilation, dilation}},
                    {"group", group}};
}

/// Conv [n,h,w,c] -> o channels, optionally followed by the epilogue chain
/// "relu", "clip", "add" (residual) or "add_relu".
Case convCase(int64_t n, int64_t h, int64_t w, int64_t c, int64_t o, int64_t k, int64_t stride, int64_t pad,
              int64_t dilation, int64_t group, const std::string& tail = "") {
  std::string name = "conv_" + std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w) + "x" +
                     std::to_string(c) + "_o" + std::to_string(o) + "_k" + std::to_string(k) + "_s" +
                     std::to_string(stride) + "_p" + std::to_string(pad) + "_d" + std::to_string(dilation) +
                     "_g" + std::to_string(group) + (tail.empty() ? "" : "_" + tail);
  return Case{name, [=](Function& f) {
                NodeValue x = input(f, "x", {n, h, w, c});
                NodeValue wt = constant(f, "w", {o, k, k, c / group}, 11);
                NodeValue b = constant(f, "b", {o}, 12);
                NodeValue y = op(f, OpKind::Conv, {x, wt, b}, convAttrs(stride, pad, dilation, group));
                if (tail == "add" || tail == "add_relu") {
                  NodeValue r = input(f, "r", y.type().dims);
                  y = op(f, OpKind::Add, {y, r});
                }
                if (tail == "add_inplace" || tail == "add_inplace_relu") {
                  // An activation residual: the IR optimizer makes the Add in place on it.
                  NodeValue r = op(f, OpKind::Neg, {input(f, "r", y.type().dims)});
                  y = op(f, OpKind::Add, {r, y});
                }
                if (tail == "add_inplace_relu") y = op(f, OpKind::Relu, {y});
                if (tail == "relu" || tail == "add_relu") y = op(f, OpKind::Relu, {y});
                if (tail == "clip") y = op(f, OpKind::Clip, {y}, {{"min", 0.0}, {"max", 0.5}});
                f.addOutput("y", y);
              }};
}

Case matMulCase(Dims a, Dims b, bool constRhs, const std::string& tail = "") {
  std::string name = "matmul_" + dimsStr(a) + "_" + dimsStr(b) + (constRhs ? "_const" : "") +
                     (tail.empty() ? "" : "_" + tail);
  return Case{name, [=](Function& f) {
                NodeValue x = input(f, "a", a);
                NodeValue y = constRhs ? constant(f, "b", b, 21) : input(f, "b", b);
                NodeValue z = op(f, OpKind::MatMul, {x, y});
                if (tail == "bias") z = op(f, OpKind::Add, {z, constant(f, "bias", {b.back()}, 22)});
                if (tail == "relu") z = op(f, OpKind::Relu, {z});
                f.addOutput("z", z);
              }};
}

Case poolCase(OpKind kind, Dims in, int64_t k, int64_t stride, int64_t pad, int64_t ceil,
              int64_t includePad) {
  std::string name = std::string(opName(kind)) + "_" + dimsStr(in) + "_k" + std::to_string(k) + "_s" +
                     std::to_string(stride) + "_p" + std::to_string(pad) + "_c" + std::to_string(ceil) +
                     "_i" + std::to_string(includePad);
  return Case{name, [=](Function& f) {
                Attributes attrs{{"kernel", std::vector<int64_t>{k, k}},
                                 {"strides", std::vector<int64_t>{stride, stride}},
                                 {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                                 {"ceil_mode", ceil}};
                if (kind == OpKind::MaxPool)
                  attrs.set("dilations", std::vector<int64_t>{1, 1});
                else
                  attrs.set("count_include_pad", includePad);
                f.addOutput("y", op(f, kind, {input(f, "x", in)}, attrs));
              }};
}

Case reduceCase(OpKind kind, Dims in, std::vector<int64_t> axes, int64_t keep) {
  std::string name = std::string(opName(kind)) + "_" + dimsStr(in) + "_axes";
  for (int64_t a : axes) name += std::to_string(a);
  name += "_k" + std::to_string(keep);
  return Case{name, [=](Function& f) {
                f.addOutput("y", op(f, kind, {input(f, "x", in)}, {{"axes", axes}, {"keepdims", keep}}));
              }};
}

Case transposeCase(Dims in, std::vector<int64_t> perm) {
  std::string name = "transpose_" + dimsStr(in) + "_";
  for (int64_t p : perm) name += std::to_string(p);
  return Case{name, [=](Function& f) {
                f.addOutput("y", op(f, OpKind::Transpose, {input(f, "x", in)}, {{"perm", perm}}));
              }};
}

/// The attributes the elementwise cases give the ops that have some.
Attributes elementwiseAttrs(OpKind kind) {
  switch (kind) {
    case OpKind::Clip:
      return {{"min", -0.25}, {"max", 0.5}};
    case OpKind::Cast:
      return {{"to", std::string("i32")}};  // the cpu backend declines f64
    case OpKind::Mod:
      return {{"fmod", int64_t(1)}};
    default:
      return {};
  }
}

Case binaryCase(OpKind kind, Dims a, Dims b) {
  std::string name = std::string(opName(kind)) + "_" + dimsStr(a) + "_" + dimsStr(b);
  return Case{name, [=](Function& f) {
                NodeValue x = input(f, "a", a), y = input(f, "b", b);
                if (kind == OpKind::Pow) x = op(f, OpKind::Abs, {x});
                f.addOutput("y", op(f, kind, {x, y}, elementwiseAttrs(kind)));
              }};
}

Case unaryCase(OpKind kind, Dims in) {
  std::string name = std::string(opName(kind)) + "_" + dimsStr(in);
  return Case{name, [=](Function& f) {
                NodeValue x = input(f, "x", in);
                if (kind == OpKind::Log || kind == OpKind::Sqrt) x = op(f, OpKind::Abs, {x});
                if (kind == OpKind::Acosh) x = op(f, OpKind::Reciprocal, {op(f, OpKind::Abs, {x})});  // >= 1
                f.addOutput("y", op(f, kind, {x}, elementwiseAttrs(kind)));
              }};
}

/// The primitives of `family` in Ops.def whose first operand may be f32: the
/// ops the JIT emits as loops and those the cpu backend runs by reference kernels.
std::vector<OpKind> f32Primitives(OpFamily family) {
  std::vector<OpKind> kinds;
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const auto kind = OpKind(k);
    if (opInfo(kind).category == OpCategory::Primitive && opFamily(kind) == family &&
        acceptsElemKind(kind, 0, ElemKind::F32))
      kinds.push_back(kind);
  }
  return kinds;
}

/// QuantizedConv on a quantized input (`kind` i8q or u8q with zero point
/// `zero`), random s8 filter, i32 bias and per-channel scales, `clip` fusing
/// ReLU: the int8 kernel (KernelInt8.h) against the reference, bit for bit.
/// QuantizedConv(q) to o channels with k x k int8 weights over cPerGroup
/// channels, int32 bias and per-channel scales drawn from `seed`.
NodeValue quantizedConvOf(Function& f, NodeValue q, uint64_t seed, int64_t o, int64_t k, int64_t cPerGroup,
                          const Attributes& attrs) {
  std::mt19937_64 rng(seed);
  Tensor wt(Type(ElemKind::Int8Q, {o, k, k, cPerGroup}, 0.02f, 0));
  for (int64_t i = 0; i < wt.type().numElements(); ++i) wt.as<int8_t>()[i] = int8_t(rng() % 256);
  Tensor bias(Type(ElemKind::Int32Q, {o}, 0.0002f, 0));
  for (int64_t i = 0; i < o; ++i) bias.as<int32_t>()[i] = int32_t(rng() % 20001) - 10000;
  Tensor scales(Type(ElemKind::F32, {o}));
  for (int64_t i = 0; i < o; ++i) scales.as<float>()[i] = 0.01f + 0.002f * float(i % 7);
  return op(
      f, OpKind::QuantizedConv,
      {q, f.createConstant("w", std::move(wt))->result(), f.createConstant("b", std::move(bias))->result(),
       f.createConstant("s", std::move(scales))->result()},
      attrs);
}

Case int8ConvCase(const std::string& kind, int32_t zero, int64_t n, int64_t h, int64_t c, int64_t o,
                  int64_t k, int64_t stride, int64_t pad, int64_t dilation, bool relu,
                  const std::string& outKind = "i8q", bool depthwise = false) {
  std::string name = "int8conv_" + kind + "_z" + std::to_string(zero < 0 ? -zero : zero) + "_" +
                     std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(c) + "_o" +
                     std::to_string(o) + "_k" + std::to_string(k) + "_s" + std::to_string(stride) + "_p" +
                     std::to_string(pad) + "_d" + std::to_string(dilation) + (relu ? "_relu" : "") + "_" +
                     outKind + (depthwise ? "_dw" : "");
  return Case{name, [=](Function& f) {
                NodeValue x = input(f, "x", {n, h, h, c});
                NodeValue q = op(f, OpKind::Quantize, {x},
                                 {{"kind", kind}, {"scale", 1.0 / 100}, {"offset", int64_t(zero)}});
                const int64_t group = depthwise ? c : 1;
                Attributes attrs = convAttrs(stride, pad, dilation, group);
                attrs.set("kind", outKind);
                attrs.set("scale", 0.5);
                attrs.set("offset", int64_t(outKind == "u8q" ? 3 : -5));
                if (relu) attrs.set("clip_min", 0.0);
                f.addOutput("y", quantizedConvOf(f, q, 21, o, k, c / group, attrs));
              }};
}

/// A QuantizedConv (h x h x c to o channels, same size) whose output goes
/// straight into a QuantizedAdd with a residual, as in resnet's blocks: the
/// cpu fuses the add into the conv's epilogue (with AVX-512 VNNI). The
/// residual is the conv's own input (c == o) or another quantized input of
/// kind `resKind`; `convFirst` orders the add's operands.
Case int8ConvAddCase(int64_t h, int64_t c, int64_t o, int64_t k, bool residualIsInput,
                     const std::string& resKind, bool convFirst, const std::string& outKind, bool relu) {
  std::string name = "int8convadd_" + std::to_string(h) + "x" + std::to_string(c) + "_o" + std::to_string(o) +
                     "_k" + std::to_string(k) + (residualIsInput ? "_resinput" : "_res" + resKind) +
                     (convFirst ? "_convfirst" : "_resfirst") + "_" + outKind + (relu ? "_relu" : "");
  return Case{name, [=](Function& f) {
                NodeValue q = op(f, OpKind::Quantize, {input(f, "x", {1, h, h, c})},
                                 {{"kind", "i8q"}, {"scale", 1.0 / 100}, {"offset", int64_t(-7)}});
                Attributes attrs = convAttrs(1, k / 2, 1, 1);
                attrs.set("kind", "i8q");
                attrs.set("scale", 0.5);
                attrs.set("offset", int64_t(4));
                NodeValue y = quantizedConvOf(f, q, 31, o, k, c, attrs);
                NodeValue r = residualIsInput ? q
                                              : op(f, OpKind::Quantize, {input(f, "r", {1, h, h, o})},
                                                   {{"kind", resKind},
                                                    {"scale", 1.0 / 70},
                                                    {"offset", int64_t(resKind == "u8q" ? 130 : 11)}});
                Attributes addAttrs{
                    {"kind", outKind}, {"scale", 1.0 / 3}, {"offset", int64_t(outKind == "u8q" ? 9 : -2)}};
                if (relu) addAttrs.set("clip_min", 0.0);
                f.addOutput("y", op(f, OpKind::QuantizedAdd,
                                    convFirst ? std::vector{y, r} : std::vector{r, y}, addAttrs));
              }};
}

/// QuantizedAdd of two quantized inputs (kinds, scales and zero points of
/// their own) into `outKind`, optionally with ReLU: the cpu's table against
/// the reference, bit for bit.
Case int8AddCase(const std::string& aKind, int32_t aZero, const std::string& bKind, int32_t bZero,
                 const std::string& outKind, bool relu) {
  std::string name = "int8add_" + aKind + "_" + bKind + "_" + outKind + (relu ? "_relu" : "") + "_z" +
                     std::to_string(aZero + 128) + "_" + std::to_string(bZero + 128);
  return Case{name, [=](Function& f) {
                NodeValue a = op(f, OpKind::Quantize, {input(f, "a", {2, 9, 9, 13})},
                                 {{"kind", aKind}, {"scale", 1.0 / 90}, {"offset", int64_t(aZero)}});
                NodeValue b = op(f, OpKind::Quantize, {input(f, "b", {2, 9, 9, 13})},
                                 {{"kind", bKind}, {"scale", 1.0 / 70}, {"offset", int64_t(bZero)}});
                Attributes attrs{
                    {"kind", outKind}, {"scale", 1.0 / 50}, {"offset", int64_t(outKind == "u8q" ? 9 : -2)}};
                if (relu) attrs.set("clip_min", 0.0);
                f.addOutput("y", op(f, OpKind::QuantizedAdd, {a, b}, attrs));
              }};
}

/// QuantizedMatMul of a quantized lhs [batch..., M, K] by a constant s8 rhs
/// [K, N] (zero point 0, per-column scales), as the quantizer emits for
/// Gemm/MatMul: the int8 kernel against the reference, bit for bit.
Case int8MatMulCase(const std::string& kind, int32_t zero, Dims lhs, int64_t n, bool relu,
                    const std::string& outKind = "i8q") {
  std::string name = "int8matmul_" + kind + "_z" + std::to_string(zero < 0 ? -zero : zero) + "_";
  for (int64_t d : lhs) name += std::to_string(d) + "x";
  name += "n" + std::to_string(n) + (relu ? "_relu" : "") + "_" + outKind;
  return Case{
      name, [=](Function& f) {
        const int64_t k = lhs.back();
        NodeValue q = op(f, OpKind::Quantize, {input(f, "x", lhs)},
                         {{"kind", kind}, {"scale", 1.0 / 100}, {"offset", int64_t(zero)}});
        std::mt19937_64 rng(33);
        Tensor wt(Type(ElemKind::Int8Q, {k, n}, 0.02f, 0));
        for (int64_t i = 0; i < wt.type().numElements(); ++i) wt.as<int8_t>()[i] = int8_t(rng() % 256);
        Tensor bias(Type(ElemKind::Int32Q, {n}, 0.0002f, 0));
        for (int64_t i = 0; i < n; ++i) bias.as<int32_t>()[i] = int32_t(rng() % 20001) - 10000;
        Tensor scales(Type(ElemKind::F32, {n}));
        for (int64_t i = 0; i < n; ++i) scales.as<float>()[i] = 0.01f + 0.002f * float(i % 7);
        Attributes attrs{{"kind", outKind}, {"scale", 0.5}, {"offset", int64_t(outKind == "u8q" ? 3 : -5)}};
        if (relu) attrs.set("clip_min", 0.0);
        f.addOutput("y", op(f, OpKind::QuantizedMatMul,
                            {q, f.createConstant("w", std::move(wt))->result(),
                             f.createConstant("b", std::move(bias))->result(),
                             f.createConstant("s", std::move(scales))->result()},
                            attrs));
      }};
}

/// MaxPool on codes or QuantizedAvgPool (`average`) of a quantized input.
Case int8PoolCase(bool average, const std::string& kind, int32_t zero, Dims in, int64_t k, int64_t stride,
                  int64_t pad, int64_t countIncludePad) {
  std::string name = std::string(average ? "int8avgpool_" : "int8maxpool_") + kind + "_z" +
                     std::to_string(zero < 0 ? -zero : zero) + "_";
  for (int64_t d : in) name += std::to_string(d) + "x";
  name += "k" + std::to_string(k) + "_s" + std::to_string(stride) + "_p" + std::to_string(pad) +
          (countIncludePad ? "_cip" : "");
  return Case{name, [=](Function& f) {
                NodeValue q = op(f, OpKind::Quantize, {input(f, "x", in)},
                                 {{"kind", kind}, {"scale", 1.0 / 100}, {"offset", int64_t(zero)}});
                Attributes attrs{{"kernel", std::vector<int64_t>{k, k}},
                                 {"strides", std::vector<int64_t>{stride, stride}},
                                 {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                                 {"ceil_mode", int64_t(0)}};
                if (!average) {
                  attrs.set("dilations", std::vector<int64_t>{1, 1});
                  f.addOutput("y", op(f, OpKind::MaxPool, {q}, attrs));
                  return;
                }
                attrs.set("count_include_pad", countIncludePad);
                attrs.set("kind", kind);
                attrs.set("scale", 1.0 / 70);
                attrs.set("offset", int64_t(kind == "u8q" ? 20 : -9));
                f.addOutput("y", op(f, OpKind::QuantizedAvgPool, {q}, attrs));
              }};
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  // Convolutions: pointwise, 3x3, strided, 7x7 stem, dilated, grouped,
  // depthwise (with and without multiplier), odd sizes for the edge tiles.
  cases.push_back(convCase(1, 8, 8, 16, 32, 1, 1, 0, 1, 1));
  cases.push_back(convCase(2, 7, 5, 13, 19, 1, 1, 0, 1, 1));
  cases.push_back(convCase(1, 9, 9, 8, 24, 3, 1, 1, 1, 1));
  cases.push_back(convCase(1, 10, 10, 5, 7, 3, 2, 1, 1, 1));
  cases.push_back(convCase(1, 15, 15, 3, 16, 7, 2, 3, 1, 1));
  cases.push_back(convCase(1, 12, 12, 4, 6, 3, 1, 2, 2, 1));
  cases.push_back(convCase(2, 6, 6, 8, 12, 3, 1, 1, 1, 2));
  cases.push_back(convCase(1, 9, 9, 32, 32, 3, 1, 1, 1, 32));
  cases.push_back(convCase(1, 10, 10, 40, 40, 3, 2, 1, 1, 40));
  cases.push_back(convCase(1, 7, 7, 11, 11, 5, 1, 2, 1, 11));
  cases.push_back(convCase(1, 6, 6, 4, 8, 3, 1, 1, 1, 4));
  cases.push_back(convCase(1, 8, 8, 16, 16, 1, 2, 0, 1, 1));
  cases.push_back(convCase(1, 4, 4, 300, 70, 3, 1, 1, 1, 1));  // K > KC, several K blocks
  cases.push_back(convCase(1, 8, 8, 16, 32, 3, 1, 1, 1, 1, "relu"));
  cases.push_back(convCase(1, 8, 8, 16, 32, 3, 1, 1, 1, 1, "clip"));
  cases.push_back(convCase(1, 8, 8, 16, 16, 3, 1, 1, 1, 1, "add"));
  cases.push_back(convCase(1, 8, 8, 96, 40, 3, 1, 1, 1, 1, "add_relu"));
  cases.push_back(convCase(1, 8, 8, 24, 24, 3, 1, 1, 1, 24, "clip"));
  cases.push_back(convCase(1, 5, 5, 64, 64, 1, 1, 0, 1, 1, "add_relu"));
  cases.push_back(convCase(1, 8, 8, 16, 16, 3, 1, 1, 1, 1, "add_inplace"));
  cases.push_back(convCase(1, 7, 7, 300, 40, 3, 1, 1, 1, 1, "add_inplace_relu"));
  cases.push_back(convCase(1, 9, 9, 24, 24, 3, 1, 1, 1, 24, "add_inplace"));
  cases.push_back(convCase(1, 5, 5, 24, 33, 1, 2, 0, 1, 1, "add_inplace_relu"));
  // Direct convolution (KernelConv.cpp) edges: window-row segments (C < 16)
  // crossing the left and right borders, a window wider than the input, per-tap
  // segments with dilation or C = 16, and row and column tails of the tile.
  cases.push_back(convCase(2, 17, 13, 3, 64, 7, 2, 3, 1, 1, "relu"));
  cases.push_back(convCase(1, 11, 9, 5, 20, 5, 1, 2, 1, 1, "add_inplace_relu"));
  cases.push_back(convCase(1, 12, 12, 3, 33, 3, 1, 2, 2, 1, "clip"));
  cases.push_back(convCase(1, 9, 11, 15, 40, 3, 2, 0, 1, 1));
  cases.push_back(convCase(1, 5, 7, 16, 17, 3, 1, 1, 1, 1, "add"));
  cases.push_back(convCase(1, 3, 3, 4, 8, 5, 1, 2, 1, 1));
  cases.push_back(convCase(1, 6, 6, 3, 1, 3, 1, 1, 1, 1));
  // Winograd F(2x2, 3x3) (KernelWinograd.cpp): odd output sizes (edge blocks
  // half outside), no padding and padding 2 (blocks that read only padding),
  // two images, channels not a multiple of 8 (masked transforms), one input
  // or output channel, K past the GEMM's KC, more output channels than one
  // column block (NC = 512), 2x2 outputs (one block), and every epilogue.
  cases.push_back(convCase(1, 11, 9, 13, 70, 3, 1, 1, 1, 1, "relu"));
  cases.push_back(convCase(2, 10, 10, 8, 16, 3, 1, 0, 1, 1, "add"));
  cases.push_back(convCase(1, 6, 6, 5, 3, 3, 1, 2, 1, 1, "clip"));
  cases.push_back(convCase(1, 9, 9, 1, 7, 3, 1, 1, 1, 1));
  cases.push_back(convCase(1, 8, 8, 20, 1, 3, 1, 1, 1, 1, "add_inplace_relu"));
  cases.push_back(convCase(1, 6, 6, 300, 33, 3, 1, 1, 1, 1, "add_inplace"));
  cases.push_back(convCase(1, 4, 6, 16, 530, 3, 1, 1, 1, 1, "add_relu"));
  cases.push_back(convCase(1, 4, 4, 24, 40, 3, 1, 0, 1, 1, "relu"));
  cases.push_back(convCase(2, 29, 27, 32, 48, 3, 1, 1, 1, 1, "add_inplace_relu"));
  // Depthwise 3x3 row kernel (KernelDepthwise.cpp): channels not a multiple
  // of 8 or 16 (masked tail), stride 2, no padding, 1-pixel and 2-pixel-wide
  // images (every pixel a border pixel), rows long enough for the 8-pixel
  // blocks and their 4-, 2- and 1-pixel remainders, two images, and layers
  // with fewer rows than items per thread (channel blocks).
  cases.push_back(convCase(1, 6, 23, 32, 32, 3, 1, 1, 1, 32, "clip"));
  cases.push_back(convCase(1, 5, 21, 13, 13, 3, 1, 1, 1, 13, "relu"));
  cases.push_back(convCase(1, 9, 23, 40, 40, 3, 2, 1, 1, 40, "clip"));
  cases.push_back(convCase(1, 8, 19, 96, 96, 3, 2, 0, 1, 96));
  cases.push_back(convCase(1, 1, 1, 24, 24, 3, 1, 1, 1, 24, "clip"));
  cases.push_back(convCase(1, 2, 2, 7, 7, 3, 2, 1, 1, 7));
  cases.push_back(convCase(2, 6, 6, 20, 20, 3, 1, 1, 1, 20, "add"));
  cases.push_back(convCase(1, 3, 3, 160, 160, 3, 1, 1, 1, 160, "add_inplace"));
  cases.push_back(convCase(1, 7, 7, 72, 72, 3, 1, 2, 1, 72, "clip"));
  // MatMul: constant and computed rhs, batches, broadcasting, epilogues.
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {1, 64, 10}, {7, 33, 17}, {64, 64, 64}, {50, 300, 70}, {13, 513, 129}})
    cases.push_back(matMulCase({m, k}, {k, n}, true));
  cases.push_back(matMulCase({2, 3, 5, 8}, {8, 6}, true));
  cases.push_back(matMulCase({2, 9, 16}, {2, 16, 12}, false));
  cases.push_back(matMulCase({1, 9, 16}, {3, 16, 12}, false));
  cases.push_back(matMulCase({4, 2, 9, 16}, {2, 16, 20}, false));
  cases.push_back(matMulCase({31, 40}, {40, 24}, false));
  cases.push_back(matMulCase({8, 64}, {64, 10}, true, "bias"));
  cases.push_back(matMulCase({2, 8, 64}, {64, 48}, true, "bias"));
  cases.push_back(matMulCase({8, 64}, {64, 40}, true, "relu"));
  cases.push_back(matMulCase({2, 64}, {64, 40}, true, "relu"));
  cases.push_back(matMulCase({3, 100}, {100, 1000}, true, "bias"));
  // GEMM work splits (cpu_ops_test_gemm_threads*): several row blocks and K
  // slices with edge tiles, and 7x7 stages whose M is below one block (the 1x1
  // on the GEMM, the 3x3 on the direct convolution).
  cases.push_back(matMulCase({200, 600}, {600, 100}, true, "bias"));
  cases.push_back(convCase(1, 7, 7, 300, 160, 1, 1, 0, 1, 1, "add_relu"));
  cases.push_back(convCase(1, 7, 7, 64, 96, 3, 1, 1, 1, 1, "add_relu"));
  // int8 convolutions (bit-exact): signed and unsigned inputs with zero
  // points, padding (taps at the zero point), strides, dilation, K not a
  // multiple of 4, O not a multiple of 32, M not a multiple of the tile.
  cases.push_back(int8ConvCase("i8q", -3, 1, 9, 16, 32, 3, 1, 1, 1, false));
  cases.push_back(int8ConvCase("u8q", 128, 1, 9, 16, 32, 3, 1, 1, 1, true));
  cases.push_back(int8ConvCase("u8q", 7, 2, 7, 5, 19, 3, 2, 1, 1, false, "u8q"));
  cases.push_back(int8ConvCase("i8q", 100, 1, 12, 3, 40, 7, 2, 3, 1, true));
  cases.push_back(int8ConvCase("i8q", 0, 1, 8, 64, 70, 1, 1, 0, 1, false));
  cases.push_back(int8ConvCase("i8q", -128, 1, 10, 9, 33, 3, 1, 2, 2, true, "u8q"));
  cases.push_back(int8ConvCase("u8q", 0, 1, 6, 300, 8, 3, 1, 1, 1, false));
  cases.push_back(int8ConvCase("i8q", -7, 1, 9, 24, 24, 3, 1, 1, 1, true, "i8q", true));
  cases.push_back(int8ConvCase("u8q", 130, 2, 10, 40, 40, 3, 2, 1, 1, false, "u8q", true));
  cases.push_back(int8ConvCase("i8q", 3, 1, 7, 11, 11, 5, 1, 4, 2, true, "u8q", true));
  cases.push_back(int8AddCase("i8q", -3, "i8q", 10, "i8q", false));
  cases.push_back(int8AddCase("u8q", 128, "i8q", 0, "u8q", true));
  cases.push_back(int8AddCase("u8q", 5, "u8q", 200, "i8q", true));
  cases.push_back(int8ConvAddCase(9, 40, 40, 3, true, "i8q", true, "i8q", true));
  cases.push_back(int8ConvAddCase(7, 24, 70, 1, false, "u8q", false, "u8q", true));
  cases.push_back(int8ConvAddCase(8, 64, 33, 3, false, "i8q", true, "i8q", false));
  cases.push_back(int8MatMulCase("i8q", -3, {1, 512}, 1000, false));
  cases.push_back(int8MatMulCase("u8q", 128, {7, 33}, 17, true, "u8q"));
  cases.push_back(int8MatMulCase("i8q", 100, {2, 5, 64}, 70, false, "u8q"));
  cases.push_back(int8PoolCase(false, "i8q", -3, {1, 12, 12, 16}, 3, 2, 1, 0));
  cases.push_back(int8PoolCase(false, "u8q", 128, {2, 7, 9, 5}, 2, 2, 0, 0));
  cases.push_back(int8PoolCase(true, "i8q", 5, {1, 7, 7, 40}, 7, 1, 0, 0));  // global average
  cases.push_back(int8PoolCase(true, "u8q", 130, {1, 9, 9, 12}, 3, 2, 1, 0));
  cases.push_back(int8PoolCase(true, "i8q", -100, {2, 9, 9, 12}, 3, 2, 1, 1));
  // Pools.
  cases.push_back(poolCase(OpKind::MaxPool, {1, 12, 12, 16}, 3, 2, 1, 0, 0));
  cases.push_back(poolCase(OpKind::MaxPool, {2, 7, 9, 5}, 2, 2, 0, 1, 0));
  cases.push_back(poolCase(OpKind::AvgPool, {1, 7, 7, 20}, 7, 1, 0, 0, 0));
  cases.push_back(poolCase(OpKind::AvgPool, {1, 9, 9, 12}, 3, 2, 1, 0, 0));
  cases.push_back(poolCase(OpKind::AvgPool, {1, 9, 9, 12}, 3, 2, 1, 1, 1));
  // Reductions.
  cases.push_back(reduceCase(OpKind::ReduceSum, {1, 7, 7, 64}, {1, 2}, 1));
  cases.push_back(reduceCase(OpKind::ReduceSum, {2, 5, 33}, {2}, 0));
  cases.push_back(reduceCase(OpKind::ReduceMax, {2, 5, 33}, {2}, 1));
  cases.push_back(reduceCase(OpKind::ReduceMin, {3, 4, 5}, {0}, 0));
  cases.push_back(reduceCase(OpKind::ReduceProd, {3, 4, 5}, {1}, 1));
  cases.push_back(reduceCase(OpKind::ReduceSum, {3, 4, 5}, {0, 2}, 1));
  // Transposes.
  cases.push_back(transposeCase({1, 3, 8, 8}, {0, 2, 3, 1}));
  cases.push_back(transposeCase({2, 4, 9, 11}, {0, 2, 3, 1}));  // 4 planes interleaved (copyTile's fast path)
  cases.push_back(transposeCase({1, 2, 3, 5}, {0, 2, 3, 1}));  // items over three leading dims
  cases.push_back(transposeCase({2, 5, 7}, {2, 0, 1}));
  cases.push_back(transposeCase({2, 3, 4, 5, 6}, {4, 3, 2, 1, 0}));
  cases.push_back(transposeCase({17}, {0}));
  // Elementwise (JIT loops or reference kernels), with broadcasting.
  for (OpKind kind : f32Primitives(OpFamily::ElementwiseBinary)) {
    cases.push_back(binaryCase(kind, {2, 3, 4, 5}, {2, 3, 4, 5}));
    cases.push_back(binaryCase(kind, {1, 6, 6, 8}, {8}));
  }
  cases.push_back(binaryCase(OpKind::Add, {2, 3, 4, 5}, {3, 1, 1}));
  cases.push_back(binaryCase(OpKind::Mul, {1, 6, 6, 8}, {1, 1, 1, 8}));
  cases.push_back(binaryCase(OpKind::Sub, {4, 1, 5}, {1, 3, 1}));
  cases.push_back(binaryCase(OpKind::Add, {}, {3, 2}));
  cases.push_back(binaryCase(OpKind::Add, {1000, 37}, {1000, 37}));
  for (OpKind kind : f32Primitives(OpFamily::ElementwiseUnary)) cases.push_back(unaryCase(kind, {3, 50, 7}));
  // Reference-kernel steps: data movement.
  cases.push_back(Case{"concat_slice", [](Function& f) {
                         NodeValue a = input(f, "a", {2, 3, 4}), b = input(f, "b", {2, 5, 4});
                         NodeValue c = op(f, OpKind::Concat, {a, b}, {{"axis", int64_t(1)}});
                         f.addOutput("y", op(f, OpKind::Relu, {c}));
                       }});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuOpsTest, testing::ValuesIn(allCases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(CpuJit, EmitsLoopsOnlyForF32ElementwisePrimitives) {
  size_t emitted = 0;
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const auto kind = OpKind(k);
    if (!cpu::jitSupportsElementwise(kind)) continue;
    ++emitted;
    const OpFamily family = opFamily(kind);
    EXPECT_TRUE(family == OpFamily::ElementwiseUnary || family == OpFamily::ElementwiseBinary)
        << opName(kind);
    EXPECT_EQ(opInfo(kind).category, OpCategory::Primitive) << opName(kind);
    EXPECT_TRUE(acceptsElemKind(kind, 0, ElemKind::F32)) << opName(kind);
  }
  EXPECT_GT(emitted, 0U);
}

}  // namespace
