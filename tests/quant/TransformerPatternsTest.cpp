// The quantizer's matching of PyTorch's LayerNorm and GELU decompositions and
// of a -inf-masked Softmax (core/quantization/TransformerPatterns.cpp): each
// is built with the Graph API, calibrated and quantized on the reference
// backend; the matched forms become one integer op, and near misses (an axis
// that is not trailing, an inner value with a use outside, a wrong constant,
// a mask with finite entries) stay op by op.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "backends/BuiltinBackends.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;

Tensor randomTensor(const Dims& dims, uint32_t seed, float scale = 1) {
  Tensor t(Type(ElemKind::F32, dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, scale);
  for (int64_t i = 0; i < t.type().numElements(); ++i) t.as<float>()[i] = d(rng);
  return t;
}

Tensor scalar(float v) {
  Tensor t(Type(ElemKind::F32, {}));
  t.as<float>()[0] = v;
  return t;
}

std::unique_ptr<Backend> reference() {
  static const bool registered = (registerBuiltinBackends(), true);
  (void)registered;
  return BackendRegistry::global().create("reference").take();
}

/// Graph builder shorthand.
struct G {
  Function& f;
  NodeValue op(OpKind kind, std::vector<NodeValue> in, Attributes a = {}) {
    auto n = f.create(kind, f.uniqueName(std::string(opName(kind))), std::move(in), std::move(a));
    EXPECT_TRUE(bool(n)) << (n ? "" : n.error().message());
    return (*n)->result();
  }
  NodeValue c(Tensor t) { return f.createConstant(f.uniqueName("c"), std::move(t))->result(); }
  NodeValue mean(NodeValue x, std::vector<int64_t> axes) {
    return op(OpKind::ReduceMean, {x}, Attributes{{"axes", axes}, {"keepdims", int64_t(1)}});
  }
};

/// Calibrates `build`'s function on random inputs, quantizes it and returns
/// how many nodes of each kind remain.
std::map<OpKind, int> quantizedKinds(const std::function<void(Function&)>& build, const Dims& inputDims) {
  Function calibrationGraph("main"), f("main");
  build(calibrationGraph);
  build(f);
  std::vector<CalibrationSample> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back({{"x", randomTensor(inputDims, 10 + s)}});
  auto profile = calibrate(calibrationGraph, reference(), samples, {});
  EXPECT_TRUE(bool(profile)) << (profile ? "" : profile.error().message());
  if (!profile) return {};
  Error e = quantizeFunction(f, *profile, *reference());
  EXPECT_FALSE(e) << e.message();
  std::map<OpKind, int> kinds;
  for (const Node* n : f.nodes()) kinds[n->kind()]++;
  return kinds;
}

/// PyTorch's LayerNorm over the last `normalized` axes of x [2, 5, 8].
void layerNorm(Function& f, std::vector<int64_t> axes, bool extraUseOfSub, float exponent) {
  G g{f};
  NodeValue x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 5, 8}))->result();
  NodeValue sub = g.op(OpKind::Sub, {x, g.mean(x, axes)});
  NodeValue var = g.mean(g.op(OpKind::Pow, {sub, g.c(scalar(exponent))}), axes);
  NodeValue sd = g.op(OpKind::Sqrt, {g.op(OpKind::Add, {var, g.c(scalar(1e-5f))})});
  NodeValue y = g.op(OpKind::Div, {sub, sd});
  y = g.op(OpKind::Mul, {y, g.c(randomTensor({8}, 1))});
  y = g.op(OpKind::Add, {y, g.c(randomTensor({8}, 2))});
  f.addOutput("y", y);
  if (extraUseOfSub) f.addOutput("centered", sub);
}

TEST(TransformerPatterns, LayerNormDecompositionBecomesOneOp) {
  auto kinds = quantizedKinds([](Function& f) { layerNorm(f, {2}, false, 2); }, {2, 5, 8});
  EXPECT_EQ(kinds[OpKind::QuantizedLayerNorm], 1);
  EXPECT_EQ(kinds[OpKind::ReduceMean] + kinds[OpKind::Sqrt] + kinds[OpKind::Div], 0);
  auto both = quantizedKinds([](Function& f) { layerNorm(f, {1, 2}, false, 2); }, {2, 5, 8});
  EXPECT_EQ(both[OpKind::QuantizedLayerNorm], 1) << "axes [1, 2] are trailing too";
}

TEST(TransformerPatterns, LayerNormNearMissesStayOpByOp) {
  // Axis 1 is not the trailing block; a centred value used outside; Pow 3.
  auto notTrailing = quantizedKinds([](Function& f) { layerNorm(f, {1}, false, 2); }, {2, 5, 8});
  EXPECT_EQ(notTrailing[OpKind::QuantizedLayerNorm], 0);
  auto extraUse = quantizedKinds([](Function& f) { layerNorm(f, {2}, true, 2); }, {2, 5, 8});
  EXPECT_EQ(extraUse[OpKind::QuantizedLayerNorm], 0);
  auto cube = quantizedKinds([](Function& f) { layerNorm(f, {2}, false, 3); }, {2, 5, 8});
  EXPECT_EQ(cube[OpKind::QuantizedLayerNorm], 0);
}

/// x * 0.5 * (1 + erf(x / c)), grouped as PyTorch 1.13 exports it.
void geluErf(Function& f, float divisor) {
  G g{f};
  NodeValue x = f.createPlaceholder("x", Type(ElemKind::F32, {3, 16}))->result();
  NodeValue erf = g.op(OpKind::Erf, {g.op(OpKind::Div, {x, g.c(scalar(divisor))})});
  NodeValue y = g.op(OpKind::Mul, {x, g.op(OpKind::Add, {erf, g.c(scalar(1))})});
  f.addOutput("y", g.op(OpKind::Mul, {y, g.c(scalar(0.5f))}));
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the half taken first.
void geluTanh(Function& f) {
  G g{f};
  NodeValue x = f.createPlaceholder("x", Type(ElemKind::F32, {3, 16}))->result();
  NodeValue cube = g.op(OpKind::Pow, {x, g.c(scalar(3))});
  NodeValue inner = g.op(OpKind::Add, {x, g.op(OpKind::Mul, {cube, g.c(scalar(0.044715f))})});
  NodeValue t = g.op(OpKind::Tanh, {g.op(OpKind::Mul, {g.c(scalar(0.7978845608f)), inner})});
  NodeValue half = g.op(OpKind::Mul, {x, g.c(scalar(0.5f))});
  f.addOutput("y", g.op(OpKind::Mul, {half, g.op(OpKind::Add, {t, g.c(scalar(1))})}));
}

TEST(TransformerPatterns, GeluDecompositionsBecomeOneOp) {
  auto erf = quantizedKinds([](Function& f) { geluErf(f, 1.4142135f); }, {3, 16});
  EXPECT_EQ(erf[OpKind::QuantizedGelu], 1);
  EXPECT_EQ(erf[OpKind::Mul] + erf[OpKind::Erf], 0);
  auto tanh = quantizedKinds(geluTanh, {3, 16});
  EXPECT_EQ(tanh[OpKind::QuantizedGelu], 1);
  EXPECT_EQ(tanh[OpKind::Mul] + tanh[OpKind::Tanh], 0);
  auto wrong = quantizedKinds([](Function& f) { geluErf(f, 2.0f); }, {3, 16});
  EXPECT_EQ(wrong[OpKind::QuantizedGelu], 0) << "x / 2 is not GELU's x / sqrt2";
}

void maskedSoftmax(Function& f, float maskValue) {
  G g{f};
  NodeValue x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 6, 6}))->result();
  Tensor mask(Type(ElemKind::F32, {6, 6}));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) mask.as<float>()[i * 6 + j] = j > i ? maskValue : 0.0f;
  f.addOutput("y", g.op(OpKind::Softmax, {g.op(OpKind::Add, {x, g.c(std::move(mask))})},
                        Attributes{{"axis", int64_t(2)}}));
}

TEST(TransformerPatterns, MaskedSoftmaxTakesTheMask) {
  auto masked = quantizedKinds([](Function& f) { maskedSoftmax(f, -std::numeric_limits<float>::infinity()); },
                               {2, 6, 6});
  EXPECT_EQ(masked[OpKind::QuantizedSoftmax], 1);
  EXPECT_EQ(masked[OpKind::QuantizedAdd] + masked[OpKind::Add], 0) << "the mask Add is absorbed";
  // A finite bias (-3) is no mask: it stays an addition before the softmax.
  auto biased = quantizedKinds([](Function& f) { maskedSoftmax(f, -3.0f); }, {2, 6, 6});
  EXPECT_EQ(biased[OpKind::QuantizedSoftmax], 1);
  EXPECT_EQ(biased[OpKind::QuantizedAdd], 1);
}

/// Softmax(MatMul(x, W) + mask) with a [1, 6] row mask: the mask has the
/// shape of a MatMul's row bias, which the linear conversion would absorb.
void maskedSoftmaxAfterMatMul(Function& f, float maskValue) {
  G g{f};
  NodeValue x = f.createPlaceholder("x", Type(ElemKind::F32, {3, 4}))->result();
  Tensor mask(Type(ElemKind::F32, {1, 6}));
  for (int j = 0; j < 6; ++j) mask.as<float>()[j] = j >= 4 ? maskValue : 0.0f;
  NodeValue scores = g.op(OpKind::MatMul, {x, g.c(randomTensor({4, 6}, 7))});
  f.addOutput("y", g.op(OpKind::Softmax, {g.op(OpKind::Add, {scores, g.c(std::move(mask))})},
                        Attributes{{"axis", int64_t(1)}}));
}

TEST(TransformerPatterns, MaskAfterMatMulIsTheSoftmaxsNotABias) {
  // The -inf row used to be taken as the MatMul's bias, and the softmax then
  // asked the profile for the renamed MatMul ("no tensor '...f32'").
  auto masked = quantizedKinds(
      [](Function& f) { maskedSoftmaxAfterMatMul(f, -std::numeric_limits<float>::infinity()); }, {3, 4});
  EXPECT_EQ(masked[OpKind::QuantizedMatMul], 1);
  EXPECT_EQ(masked[OpKind::QuantizedSoftmax], 1);
  EXPECT_EQ(masked[OpKind::QuantizedAdd] + masked[OpKind::Add], 0) << "the mask Add is the softmax's";
  // A finite row is a bias: it folds into the MatMul, and the softmax has no mask.
  auto biased = quantizedKinds([](Function& f) { maskedSoftmaxAfterMatMul(f, -3.0f); }, {3, 4});
  EXPECT_EQ(biased[OpKind::QuantizedMatMul], 1);
  EXPECT_EQ(biased[OpKind::QuantizedSoftmax], 1);
  EXPECT_EQ(biased[OpKind::QuantizedAdd] + biased[OpKind::Add], 0) << "the bias Add is absorbed";
}

}  // namespace
