// Reference kernels: expected values are hand-computed, computed here by an
// independent naive formula, or literals from PyTorch/numpy (the generating
// expression is noted next to them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ember/Kernels.h"

using namespace ember;

namespace {

template <typename T>
Tensor make(ElemKind kind, Dims dims, const std::vector<T>& values) {
  Tensor t(Type(kind, std::move(dims)));
  EXPECT_EQ(int64_t(values.size()), t.type().numElements());
  EXPECT_EQ(sizeof(T), elemSize(kind));
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}
Tensor f32(Dims dims, const std::vector<float>& v) { return make<float>(ElemKind::F32, std::move(dims), v); }
Tensor i32(Dims dims, const std::vector<int32_t>& v) {
  return make<int32_t>(ElemKind::I32, std::move(dims), v);
}
Tensor i64(Dims dims, const std::vector<int64_t>& v) {
  return make<int64_t>(ElemKind::I64, std::move(dims), v);
}
Tensor boolean(Dims dims, const std::vector<uint8_t>& v) {
  return make<uint8_t>(ElemKind::Bool, std::move(dims), v);
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  EXPECT_EQ(sizeof(T), elemSize(t.type().kind));
  const T* p = t.as<T>();
  return std::vector<T>(p, p + t.type().numElements());
}

/// Runs `kind` with result types from the type rule; fails the test on error.
std::vector<Tensor> run(OpKind kind, const std::vector<Tensor>& inputs, const Attributes& attrs = {}) {
  std::vector<Type> types;
  std::vector<ConstTensorRef> refs;
  for (const Tensor& t : inputs) {
    types.push_back(t.type());
    refs.push_back(t.ref());
  }
  auto resultTypes = inferResultTypes(kind, types, attrs);
  EXPECT_TRUE(resultTypes.hasValue()) << resultTypes.error().message();
  if (!resultTypes) return {};
  std::vector<Tensor> outputs;
  for (const Type& t : *resultTypes) outputs.emplace_back(t);
  std::vector<TensorRef> outRefs;
  for (Tensor& t : outputs) outRefs.push_back(t.ref());
  EXPECT_TRUE(kernelSupports(kind, types, *resultTypes));
  Error e = runKernel(kind, attrs, refs, outRefs);
  EXPECT_FALSE(e) << e.message();
  return outputs;
}

Tensor run1(OpKind kind, const std::vector<Tensor>& inputs, const Attributes& attrs = {}) {
  auto outs = run(kind, inputs, attrs);
  return outs.empty() ? Tensor() : std::move(outs[0]);
}

/// Runs and returns the kernel's error message ("" on success).
std::string runError(OpKind kind, const std::vector<Tensor>& inputs, const Attributes& attrs) {
  std::vector<Type> types;
  std::vector<ConstTensorRef> refs;
  for (const Tensor& t : inputs) {
    types.push_back(t.type());
    refs.push_back(t.ref());
  }
  auto resultTypes = inferResultTypes(kind, types, attrs);
  if (!resultTypes) return resultTypes.error().message();
  std::vector<Tensor> outputs;
  std::vector<TensorRef> outRefs;
  for (const Type& t : *resultTypes) outputs.emplace_back(t);
  for (Tensor& t : outputs) outRefs.push_back(t.ref());
  return runKernel(kind, attrs, refs, outRefs).message();
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// NCHW literal (as PyTorch prints it) to NHWC.
std::vector<float> nchwToNhwc(const std::vector<float>& v, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[size_t(((a * h + y) * w + x) * c + ch)] = v[size_t(((a * c + ch) * h + y) * w + x)];
  return out;
}

}  // namespace

// ---- Binary elementwise -----------------------------------------------------------

TEST(Kernels, AddBroadcastsRowAndColumn) {
  // [2,1] + [1,3] -> [2,3]
  Tensor out = run1(OpKind::Add, {f32({2, 1}, {10, 20}), f32({1, 3}, {1, 2, 3})});
  EXPECT_EQ(out.type().dims, (Dims{2, 3}));
  expectNear(values<float>(out), {11, 12, 13, 21, 22, 23});
  // [2,3] + [3] (rank extension)
  out = run1(OpKind::Sub, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 2})});
  expectNear(values<float>(out), {0, 1, 1, 3, 4, 4});
  // scalar broadcast
  out = run1(OpKind::Mul, {f32({}, {2}), f32({2, 2}, {1, 2, 3, 4})});
  expectNear(values<float>(out), {2, 4, 6, 8});
}

TEST(Kernels, FloatBinaryMath) {
  Tensor a = f32({4}, {1, -2, 9, 0.5f});
  Tensor b = f32({4}, {2, 4, 0.5f, -3});
  expectNear(values<float>(run1(OpKind::Div, {a, b})), {0.5f, -0.5f, 18, -0.5f / 3});
  expectNear(values<float>(run1(OpKind::Pow, {f32({3}, {2, 9, 4}), f32({3}, {3, 0.5f, -1})})), {8, 3, 0.25f});
  expectNear(values<float>(run1(OpKind::Max, {a, b})), {2, 4, 9, 0.5f});
  expectNear(values<float>(run1(OpKind::Min, {a, b})), {1, -2, 0.5f, -3});
}

TEST(Kernels, IntegerArithmeticWrapsAndDivisionIsDefined) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(values<int32_t>(run1(OpKind::Add, {i32({2}, {kMax, 5}), i32({2}, {1, -7})})),
            (std::vector<int32_t>{kMin, -2}));
  EXPECT_EQ(values<int32_t>(run1(OpKind::Mul, {i32({1}, {65536}), i32({1}, {65536})})),
            (std::vector<int32_t>{0}));
  EXPECT_EQ(values<int32_t>(run1(OpKind::Sub, {i32({1}, {kMin}), i32({1}, {1})})),
            (std::vector<int32_t>{kMax}));
  // Truncation toward zero; x / 0 = 0; MIN / -1 wraps.
  EXPECT_EQ(values<int32_t>(run1(OpKind::Div, {i32({5}, {7, -7, 7, 5, kMin}), i32({5}, {-2, 2, 2, 0, -1})})),
            (std::vector<int32_t>{-3, -3, 3, 0, kMin}));
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(values<int64_t>(run1(OpKind::Div, {i64({2}, {kMin64, 9}), i64({2}, {-1, 0})})),
            (std::vector<int64_t>{kMin64, 0}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::Max, {i64({2, 1}, {3, -4}), i64({2}, {0, 5})})),
            (std::vector<int64_t>{3, 5, 0, 5}));
  EXPECT_EQ(values<int32_t>(run1(OpKind::Neg, {i32({2}, {kMin, 3})})), (std::vector<int32_t>{kMin, -3}));
  EXPECT_EQ(values<int32_t>(run1(OpKind::Abs, {i32({3}, {kMin, -3, 4})})),
            (std::vector<int32_t>{kMin, 3, 4}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::Sign, {i64({3}, {-9, 0, 4})})), (std::vector<int64_t>{-1, 0, 1}));
}

TEST(Kernels, ComparisonsProduceBool) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  Tensor b = f32({2}, {2, 3});
  Tensor less = run1(OpKind::Less, {a, b});
  EXPECT_EQ(less.type().kind, ElemKind::Bool);
  EXPECT_EQ(values<uint8_t>(less), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::GreaterEqual, {a, b})), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Equal, {i32({3}, {1, 2, 3}), i32({1}, {2})})),
            (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::LessEqual, {i64({3}, {1, 2, 3}), i64({1}, {2})})),
            (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Greater, {i64({3}, {1, 2, 3}), i64({1}, {2})})),
            (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Equal, {boolean({2}, {1, 0}), boolean({2}, {1, 1})})),
            (std::vector<uint8_t>{1, 0}));
}

TEST(Kernels, Logic) {
  Tensor a = boolean({4}, {0, 0, 1, 1});
  Tensor b = boolean({4}, {0, 1, 0, 1});
  EXPECT_EQ(values<uint8_t>(run1(OpKind::And, {a, b})), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Or, {a, b})), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Xor, {a, b})), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Not, {a})), (std::vector<uint8_t>{1, 1, 0, 0}));
}

TEST(Kernels, SelectBroadcastsAllThree) {
  Tensor cond = boolean({2, 1}, {1, 0});
  Tensor out = run1(OpKind::Select, {cond, i64({3}, {1, 2, 3}), i64({}, {-1})});
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  // Generic over element size: f16 bit patterns move untouched.
  Tensor h = make<uint16_t>(ElemKind::F16, {2}, {0x3C00, 0x4000});
  Tensor g = make<uint16_t>(ElemKind::F16, {2}, {0xBC00, 0xC000});
  EXPECT_EQ(values<uint16_t>(run1(OpKind::Select, {boolean({2}, {0, 1}), h, g})),
            (std::vector<uint16_t>{0xBC00, 0x4000}));
}

// ---- Unary ------------------------------------------------------------------------

TEST(Kernels, UnaryFloatMath) {
  std::vector<float> x = {-2.5f, -0.5f, 0.0f, 0.7f, 3.0f};
  Tensor in = f32({5}, x);
  auto apply = [&](OpKind kind, float (*f)(float)) {
    std::vector<float> want;
    for (float v : x) want.push_back(f(v));
    std::vector<float> got = values<float>(run1(kind, {in}));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]))
        EXPECT_TRUE(std::isnan(got[i])) << opName(kind);
      else if (std::isinf(want[i]))
        EXPECT_EQ(got[i], want[i]) << opName(kind);
      else
        EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i])))
            << opName(kind) << " at " << i;
    }
  };
  apply(OpKind::Neg, [](float v) { return -v; });
  apply(OpKind::Abs, [](float v) { return v < 0 ? -v : v; });
  apply(OpKind::Exp, [](float v) { return float(std::exp(double(v))); });
  apply(OpKind::Log, [](float v) { return float(std::log(double(v))); });
  apply(OpKind::Sqrt, [](float v) { return float(std::sqrt(double(v))); });
  apply(OpKind::Sin, [](float v) { return float(std::sin(double(v))); });
  apply(OpKind::Cos, [](float v) { return float(std::cos(double(v))); });
  apply(OpKind::Tanh, [](float v) { return float(std::tanh(double(v))); });
  apply(OpKind::Erf, [](float v) { return float(std::erf(double(v))); });
  apply(OpKind::Sigmoid, [](float v) { return float(1 / (1 + std::exp(-double(v)))); });
  apply(OpKind::Relu, [](float v) { return v > 0 ? v : 0.0f; });
  apply(OpKind::Floor, [](float v) { return float(std::floor(double(v))); });
  apply(OpKind::Ceil, [](float v) { return float(std::ceil(double(v))); });
  apply(OpKind::Sign, [](float v) { return v > 0 ? 1.0f : (v < 0 ? -1.0f : 0.0f); });
  expectNear(values<float>(run1(OpKind::Reciprocal, {f32({2}, {4, -0.5f})})), {0.25f, -2});
}

TEST(Kernels, Clip) {
  Attributes attrs{{"min", -1.0}, {"max", 2.0}};
  expectNear(values<float>(run1(OpKind::Clip, {f32({4}, {-3, 0.5f, 2, 7})}, attrs)), {-1, 0.5f, 2, 2});
  EXPECT_EQ(values<int32_t>(run1(OpKind::Clip, {i32({3}, {-5, 1, 9})}, attrs)),
            (std::vector<int32_t>{-1, 1, 2}));
}

TEST(Kernels, CastSaturatesAndTruncates) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor in = f32({6}, {3e9f, -3e9f, -3.7f, 2.9f, nan, 0.0f});
  EXPECT_EQ(values<int32_t>(run1(OpKind::Cast, {in}, {{"to", std::string("i32")}})),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
                                  -3, 2, 0, 0}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::Cast, {f32({2}, {1e30f, -2.5f})}, {{"to", std::string("i64")}})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -2}));
  EXPECT_EQ(values<uint8_t>(run1(OpKind::Cast, {in}, {{"to", std::string("bool")}})),
            (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  // int64 -> int32 wraps as numpy's astype does: 2^32 + 5 -> 5.
  EXPECT_EQ(values<int32_t>(
                run1(OpKind::Cast, {i64({2}, {(int64_t(1) << 32) + 5, -1})}, {{"to", std::string("i32")}})),
            (std::vector<int32_t>{5, -1}));
  expectNear(values<float>(run1(OpKind::Cast, {boolean({2}, {1, 0})}, {{"to", std::string("f32")}})), {1, 0});
  // f32 -> f16 -> f32: 1.5 is 0x3E00 in IEEE half; 1/3 rounds to 0x3555.
  Tensor half = run1(OpKind::Cast, {f32({2}, {1.5f, 1.0f / 3})}, {{"to", std::string("f16")}});
  EXPECT_EQ(values<uint16_t>(half), (std::vector<uint16_t>{0x3E00, 0x3555}));
  expectNear(values<float>(run1(OpKind::Cast, {half}, {{"to", std::string("f32")}})), {1.5f, 0.333251953125f},
             0);
}

// ---- MatMul -------------------------------------------------------------------------

TEST(Kernels, MatMulBatchBroadcastMatchesNaive) {
  // lhs [2,1,2,3] x rhs [3,3,4] -> [2,3,2,4]
  std::vector<float> a = randomFloats(2 * 1 * 2 * 3, 1), b = randomFloats(3 * 3 * 4, 2);
  Tensor out = run1(OpKind::MatMul, {f32({2, 1, 2, 3}, a), f32({3, 3, 4}, b)});
  ASSERT_EQ(out.type().dims, (Dims{2, 3, 2, 4}));
  std::vector<float> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = 0;
          for (int k = 0; k < 3; ++k)
            s += double(a[size_t(p * 6 + i * 3 + k)]) * double(b[size_t(q * 12 + k * 4 + j)]);
          want.push_back(float(s));
        }
  expectNear(values<float>(out), want);
}

TEST(Kernels, MatMulIntegers) {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]
  EXPECT_EQ(values<int32_t>(run1(OpKind::MatMul, {i32({2, 2}, {1, 2, 3, 4}), i32({2, 2}, {5, 6, 7, 8})})),
            (std::vector<int32_t>{19, 22, 43, 50}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::MatMul, {i64({1, 3}, {1, 2, 3}), i64({3, 1}, {4, 5, 6})})),
            (std::vector<int64_t>{32}));
}

// ---- Conv -----------------------------------------------------------------------------

namespace {
struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, group;
  std::vector<int64_t> strides, pads, dilations;  // pads: top, left, bottom, right
};

/// Naive NCHW convolution with OIHW filters (ONNX's own layout), written
/// independently of the NHWC kernel; returns NCHW output.
std::vector<float> naiveConvNchw(const ConvCase& cc, const std::vector<float>& x,
                                 const std::vector<float>& wOihw, const std::vector<float>& bias, int64_t oh,
                                 int64_t ow) {
  int64_t cg = cc.c / cc.group, og = cc.o / cc.group;
  std::vector<float> out(size_t(cc.n * cc.o * oh * ow));
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = bias[size_t(o)];
          int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < cc.kh; ++ky)
              for (int64_t kx = 0; kx < cc.kw; ++kx) {
                int64_t iy = y * cc.strides[0] + ky * cc.dilations[0] - cc.pads[0];
                int64_t ix = xx * cc.strides[1] + kx * cc.dilations[1] - cc.pads[1];
                if (iy < 0 || iy >= cc.h || ix < 0 || ix >= cc.w) continue;
                s += double(x[size_t(((n * cc.c + g * cg + ci) * cc.h + iy) * cc.w + ix)]) *
                     double(wOihw[size_t(((o * cg + ci) * cc.kh + ky) * cc.kw + kx)]);
              }
          out[size_t(((n * cc.o + o) * oh + y) * ow + xx)] = float(s);
        }
  return out;
}

void checkConv(const ConvCase& cc) {
  int64_t cg = cc.c / cc.group;
  std::vector<float> xNchw = randomFloats(size_t(cc.n * cc.c * cc.h * cc.w), 11);
  std::vector<float> wOihw = randomFloats(size_t(cc.o * cg * cc.kh * cc.kw), 12);
  std::vector<float> bias = randomFloats(size_t(cc.o), 13);
  // Ember layouts: input NHWC, filter [O,KH,KW,Cg].
  std::vector<float> xNhwc = nchwToNhwc(xNchw, cc.n, cc.c, cc.h, cc.w);
  std::vector<float> wOhwi = nchwToNhwc(wOihw, cc.o, cg, cc.kh, cc.kw);
  Attributes attrs{
      {"strides", cc.strides}, {"pads", cc.pads}, {"dilations", cc.dilations}, {"group", cc.group}};
  Tensor out = run1(
      OpKind::Conv,
      {f32({cc.n, cc.h, cc.w, cc.c}, xNhwc), f32({cc.o, cc.kh, cc.kw, cg}, wOhwi), f32({cc.o}, bias)}, attrs);
  int64_t oh = out.type().dims[1], ow = out.type().dims[2];
  // ONNX output size, computed independently of the type rule.
  EXPECT_EQ(oh, (cc.h + cc.pads[0] + cc.pads[2] - cc.dilations[0] * (cc.kh - 1) - 1) / cc.strides[0] + 1);
  EXPECT_EQ(ow, (cc.w + cc.pads[1] + cc.pads[3] - cc.dilations[1] * (cc.kw - 1) - 1) / cc.strides[1] + 1);
  std::vector<float> want = nchwToNhwc(naiveConvNchw(cc, xNchw, wOihw, bias, oh, ow), cc.n, cc.o, oh, ow);
  expectNear(values<float>(out), want, 1e-4f);
}
}  // namespace

TEST(Kernels, ConvPlain) { checkConv({1, 3, 5, 5, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}); }
TEST(Kernels, ConvStrideAsymmetricPads) { checkConv({2, 3, 7, 6, 5, 3, 2, 1, {2, 3}, {0, 1, 2, 0}, {1, 1}}); }
TEST(Kernels, ConvGroupsAndDilation) { checkConv({1, 4, 9, 8, 6, 3, 3, 2, {1, 2}, {2, 1, 1, 2}, {2, 3}}); }
TEST(Kernels, ConvDepthwise) { checkConv({1, 3, 6, 6, 3, 3, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}}); }
TEST(Kernels, ConvPointwise) { checkConv({2, 8, 3, 4, 16, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}}); }

TEST(Kernels, ConvTransposeMatchesPyTorch) {
  // x = tensor([1,2,3,4, -1,0,2,1, 0.5,1,1.5,2, 3,-2,1,0]).reshape(1,4,2,2)   (NCHW)
  // w = tensor([1,2,3,4, 0,1,-1,2, 2,0,1,1, -1,1,0,3]).reshape(4,1,2,2)      (torch [C, O/g, KH, KW])
  // b = tensor([0.5,-1.])
  std::vector<float> x = {1, 2, 3, 4, -1, 0, 2, 1, 0.5f, 1, 1.5f, 2, 3, -2, 1, 0};
  // With O/g = 1, torch's [C,1,KH,KW] has the same element order as Ember's [C,KH,KW,1].
  std::vector<float> w = {1, 2, 3, 4, 0, 1, -1, 2, 2, 0, 1, 1, -1, 1, 0, 3};
  Tensor input = f32({1, 2, 2, 4}, nchwToNhwc(x, 1, 4, 2, 2));
  Tensor filter = f32({4, 2, 2, 1}, w);
  Tensor bias = f32({2}, {0.5f, -1});
  {
    // conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    Attributes attrs{{"strides", std::vector<int64_t>{2, 2}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"group", int64_t(2)},
                     {"output_padding", std::vector<int64_t>{1, 1}}};
    Tensor out = run1(OpKind::ConvTranspose, {input, filter, bias}, attrs);
    ASSERT_EQ(out.type().dims, (Dims{1, 3, 3, 2}));
    std::vector<float> want = {2.5f, 6.5f, 8.5f,  8.5f, 4.5f, 9.5f,  16.5f, 11.5f, 18.5f,
                               8.5f, 0.0f, -6.0f, 0.0f, 3.0f, -1.0f, 3.5f,  1.0f,  1.0f};
    expectNear(values<float>(out), nchwToNhwc(want, 1, 2, 3, 3));
  }
  {
    // conv_transpose2d(x, w, b, stride=1, padding=0, groups=2, dilation=2)
    Attributes attrs{{"strides", std::vector<int64_t>{1, 1}},
                     {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                     {"dilations", std::vector<int64_t>{2, 2}},
                     {"group", int64_t(2)},
                     {"output_padding", std::vector<int64_t>{0, 0}}};
    Tensor out = run1(OpKind::ConvTranspose, {input, filter, bias}, attrs);
    ASSERT_EQ(out.type().dims, (Dims{1, 4, 4, 2}));
    std::vector<float> want = {1.5f, 2.5f, 1.5f,  4.5f,  3.5f,  4.5f, 8.5f, 9.5f, 4.5f, 6.5f, 2.5f,
                               8.5f, 7.5f, 11.5f, 16.5f, 18.5f, -3,   3,    2,    -3,   1,    3,
                               0,    -1,   -0.5f, 0,     8.5f,  -6,   0.5f, 1,    3.5f, 1};
    expectNear(values<float>(out), nchwToNhwc(want, 1, 2, 4, 4));
  }
}

// ---- Pooling ----------------------------------------------------------------------------

namespace {
Attributes maxPoolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                        int64_t ceil, std::vector<int64_t> dilations = {1, 1}) {
  return Attributes{{"kernel", kernel},
                    {"strides", strides},
                    {"pads", pads},
                    {"dilations", dilations},
                    {"ceil_mode", ceil}};
}
Attributes avgPoolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                        int64_t ceil, int64_t includePad) {
  return Attributes{{"kernel", kernel},
                    {"strides", strides},
                    {"pads", pads},
                    {"ceil_mode", ceil},
                    {"count_include_pad", includePad}};
}
std::vector<float> iota(int n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = start + float(i);
  return v;
}
}  // namespace

TEST(Kernels, MaxPoolCeilMode) {
  // 5x5 image of 0..24, 2x2 window, stride 2: floor gives 2x2, ceil 3x3 with
  // partial windows: max at (min(2i+1,4), min(2j+1,4)).
  Tensor in = f32({1, 5, 5, 1}, iota(25));
  Tensor floorOut = run1(OpKind::MaxPool, {in}, maxPoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 0));
  expectNear(values<float>(floorOut), {6, 8, 16, 18});
  Tensor ceilOut = run1(OpKind::MaxPool, {in}, maxPoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 1));
  ASSERT_EQ(ceilOut.type().dims, (Dims{1, 3, 3, 1}));
  expectNear(values<float>(ceilOut), {6, 8, 9, 16, 18, 19, 21, 23, 24});
  // torch max_pool1d(arange(3.), 2, 2, padding=1, ceil_mode=True) = [0, 2]: the
  // third window would start in the end padding and is dropped.
  Tensor dropped =
      run1(OpKind::MaxPool, {f32({1, 1, 3, 1}, {0, 1, 2})}, maxPoolAttrs({1, 2}, {1, 2}, {0, 1, 0, 1}, 1));
  ASSERT_EQ(dropped.type().dims, (Dims{1, 1, 2, 1}));
  expectNear(values<float>(dropped), {0, 2});
}

TEST(Kernels, MaxPoolDilationChannelsAndPadding) {
  // 1x4x4x2: channel 0 = 0..15, channel 1 = -(0..15). 2x2 window, dilation 2, stride 1, pad 1 top/left.
  std::vector<float> v;
  for (int i = 0; i < 16; ++i) {
    v.push_back(float(i));
    v.push_back(-float(i));
  }
  Tensor out =
      run1(OpKind::MaxPool, {f32({1, 4, 4, 2}, v)}, maxPoolAttrs({2, 2}, {1, 1}, {1, 1, 0, 0}, 0, {2, 2}));
  // OH = (4 + 1 - 2*1 - 1)/1 + 1 = 3. Taps rows {oy-1, oy+1}, cols {ox-1, ox+1}.
  ASSERT_EQ(out.type().dims, (Dims{1, 3, 3, 2}));
  std::vector<float> want;
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 3; ++ox) {
      float m0 = -1e9f, m1 = -1e9f;
      for (int dy : {-1, 1})
        for (int dx : {-1, 1}) {
          int y = oy + dy, x = ox + dx;
          if (y < 0 || x < 0) continue;
          m0 = std::max(m0, float(y * 4 + x));
          m1 = std::max(m1, -float(y * 4 + x));
        }
      want.push_back(m0);
      want.push_back(m1);
    }
  expectNear(values<float>(out), want);
}

TEST(Kernels, MaxPoolQuantizedKeepsScale) {
  Tensor in(Type(ElemKind::Int8Q, {1, 2, 2, 1}, 0.5f, 3));
  int8_t raw[] = {-5, 7, 2, -128};
  std::memcpy(in.data(), raw, 4);
  Tensor out = run1(OpKind::MaxPool, {in}, maxPoolAttrs({2, 2}, {1, 1}, {0, 0, 0, 0}, 0));
  EXPECT_EQ(out.type(), Type(ElemKind::Int8Q, {1, 1, 1, 1}, 0.5f, 3));
  EXPECT_EQ(out.as<int8_t>()[0], 7);
}

TEST(Kernels, AvgPoolPaddingAndCeilMode) {
  Tensor in = f32({1, 3, 3, 1}, iota(9, 1));
  // torch avg_pool2d(arange(1,10).reshape(1,1,3,3), 2, 2, padding=1, count_include_pad=True/False)
  expectNear(values<float>(run1(OpKind::AvgPool, {in}, avgPoolAttrs({2, 2}, {2, 2}, {1, 1, 1, 1}, 0, 1))),
             {0.25f, 1.25f, 2.75f, 7.0f});
  expectNear(values<float>(run1(OpKind::AvgPool, {in}, avgPoolAttrs({2, 2}, {2, 2}, {1, 1, 1, 1}, 0, 0))),
             {1.0f, 2.5f, 5.5f, 7.0f});
  // avg_pool2d(..., 2, 2, ceil_mode=True, count_include_pad=True): the overhang never counts.
  expectNear(values<float>(run1(OpKind::AvgPool, {in}, avgPoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 1, 1))),
             {3.0f, 4.5f, 7.5f, 9.0f});
  expectNear(values<float>(run1(OpKind::AvgPool, {in}, avgPoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 1, 0))),
             {3.0f, 4.5f, 7.5f, 9.0f});
}

// ---- Reductions ---------------------------------------------------------------------------

TEST(Kernels, ReduceSumOverAxesWithAndWithoutKeepdims) {
  // x[i][j][k] = 12i + 4j + k over [2,3,4]; sum over axes {0,2}: for each j,
  // sum_{i,k} = 4*(0+12) + 2*(4j*4) + 2*(0+1+2+3)... computed naively below.
  std::vector<float> x = iota(24);
  std::vector<float> want(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[size_t(j)] += x[size_t(i * 12 + j * 4 + k)];
  Attributes keep{{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t(1)}};
  Tensor out = run1(OpKind::ReduceSum, {f32({2, 3, 4}, x)}, keep);
  EXPECT_EQ(out.type().dims, (Dims{1, 3, 1}));
  expectNear(values<float>(out), want);
  Attributes drop{{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t(0)}};
  out = run1(OpKind::ReduceSum, {f32({2, 3, 4}, x)}, drop);
  EXPECT_EQ(out.type().dims, (Dims{3}));
  expectNear(values<float>(out), want);
}

TEST(Kernels, ReduceMaxMinProd) {
  Attributes axis1{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}};
  Tensor x = f32({2, 3}, {1, -4, 2, 0.5f, 3, -1});
  expectNear(values<float>(run1(OpKind::ReduceMax, {x}, axis1)), {2, 3});
  expectNear(values<float>(run1(OpKind::ReduceMin, {x}, axis1)), {-4, -1});
  expectNear(values<float>(run1(OpKind::ReduceProd, {x}, axis1)), {-8, -1.5f});
  EXPECT_EQ(values<int32_t>(run1(OpKind::ReduceSum, {i32({2, 2}, {1, 2, 3, 4})}, axis1)),
            (std::vector<int32_t>{3, 7}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ReduceMax, {i64({2, 2}, {-1, -2, 3, 4})}, axis1)),
            (std::vector<int64_t>{-1, 4}));
}

TEST(Kernels, ArgMaxArgMinFirstAndLast) {
  Tensor x = f32({2, 4}, {1, 5, 5, 0, 2, 2, 2, 7});
  auto attrs = [](int64_t axis, int64_t keep, int64_t last) {
    return Attributes{{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}};
  };
  Tensor first = run1(OpKind::ArgMax, {x}, attrs(1, 0, 0));
  EXPECT_EQ(first.type(), Type(ElemKind::I64, {2}));
  EXPECT_EQ(values<int64_t>(first), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ArgMax, {x}, attrs(1, 1, 1))), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ArgMin, {x}, attrs(-1, 0, 0))), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ArgMin, {x}, attrs(1, 0, 1))), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ArgMax, {x}, attrs(0, 0, 0))), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::ArgMax, {i32({3}, {4, 9, 9})}, attrs(0, 0, 1))),
            (std::vector<int64_t>{2}));
}

TEST(Kernels, TopKSortedWithTiesLowerIndexFirst) {
  Tensor x = f32({2, 5}, {3, 1, 3, 2, 1, 0, 9, 9, 4, 9});
  Attributes largest{{"k", int64_t(3)}, {"axis", int64_t(1)}, {"largest", int64_t(1)}};
  auto outs = run(OpKind::TopK, {x}, largest);
  ASSERT_EQ(outs.size(), 2u);
  expectNear(values<float>(outs[0]), {3, 3, 2, 9, 9, 9});
  EXPECT_EQ(values<int64_t>(outs[1]), (std::vector<int64_t>{0, 2, 3, 1, 2, 4}));
  Attributes smallest{{"k", int64_t(2)}, {"axis", int64_t(-1)}, {"largest", int64_t(0)}};
  outs = run(OpKind::TopK, {x}, smallest);
  expectNear(values<float>(outs[0]), {1, 1, 0, 4});
  EXPECT_EQ(values<int64_t>(outs[1]), (std::vector<int64_t>{1, 4, 0, 3}));
  // Along axis 0 of an i64 tensor.
  outs = run(OpKind::TopK, {i64({3, 2}, {1, 6, 5, 2, 3, 4})},
             {{"k", int64_t(1)}, {"axis", int64_t(0)}, {"largest", int64_t(1)}});
  EXPECT_EQ(values<int64_t>(outs[0]), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(values<int64_t>(outs[1]), (std::vector<int64_t>{1, 0}));
}

// ---- Data movement ----------------------------------------------------------------------

TEST(Kernels, TransposeMatchesIndexFormula) {
  std::vector<float> x = iota(24);
  Tensor out = run1(OpKind::Transpose, {f32({2, 3, 4}, x)}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ASSERT_EQ(out.type().dims, (Dims{4, 2, 3}));
  std::vector<float> got = values<float>(out);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[size_t((k * 2 + i) * 3 + j)], x[size_t(i * 12 + j * 4 + k)]);
}

TEST(Kernels, TransposeKeepsQuantization) {
  Tensor in(Type(ElemKind::UInt8Q, {2, 2}, 0.25f, 128));
  uint8_t raw[] = {1, 2, 3, 4};
  std::memcpy(in.data(), raw, 4);
  Tensor out = run1(OpKind::Transpose, {in}, {{"perm", std::vector<int64_t>{1, 0}}});
  EXPECT_EQ(out.type(), Type(ElemKind::UInt8Q, {2, 2}, 0.25f, 128));
  EXPECT_EQ(values<uint8_t>(out), (std::vector<uint8_t>{1, 3, 2, 4}));
}

TEST(Kernels, ReshapeAndCopy) {
  Tensor out =
      run1(OpKind::Reshape, {i64({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"shape", std::vector<int64_t>{3, 2}}});
  EXPECT_EQ(out.type().dims, (Dims{3, 2}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::Copy, {out})), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Kernels, SliceWithNegativeStep) {
  // x = arange(12).reshape(3,4); x[0:3:2, 3:0:-2] = [[3,1],[11,9]]
  Attributes attrs{{"starts", std::vector<int64_t>{0, 3}},
                   {"ends", std::vector<int64_t>{3, 0}},
                   {"steps", std::vector<int64_t>{2, -2}}};
  Tensor out = run1(OpKind::Slice, {i32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})}, attrs);
  EXPECT_EQ(out.type().dims, (Dims{2, 2}));
  EXPECT_EQ(values<int32_t>(out), (std::vector<int32_t>{3, 1, 11, 9}));
  // x[::-1] over the whole axis: end -1 means "before index 0".
  Attributes reverse{{"starts", std::vector<int64_t>{3}},
                     {"ends", std::vector<int64_t>{-1}},
                     {"steps", std::vector<int64_t>{-1}}};
  EXPECT_EQ(values<int32_t>(run1(OpKind::Slice, {i32({4}, {1, 2, 3, 4})}, reverse)),
            (std::vector<int32_t>{4, 3, 2, 1}));
}

TEST(Kernels, ConcatMiddleAxis) {
  Tensor a = f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = f32({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  Tensor out = run1(OpKind::Concat, {a, b, a}, {{"axis", int64_t(1)}});
  EXPECT_EQ(out.type().dims, (Dims{2, 4, 2}));
  expectNear(values<float>(out), {1, 2, 5, 6, 7, 8, 1, 2, 3, 4, 9, 10, 11, 12, 3, 4});
  EXPECT_EQ(values<int64_t>(run1(OpKind::Concat, {i64({1}, {7}), i64({2}, {8, 9})}, {{"axis", int64_t(-1)}})),
            (std::vector<int64_t>{7, 8, 9}));
}

TEST(Kernels, PadModes) {
  // numpy: np.pad([1,2,3], (2,1), mode) and constant 9
  auto pad1d = [](const std::string& mode, std::vector<int64_t> pads) {
    return values<float>(
        run1(OpKind::Pad, {f32({3}, {1, 2, 3})}, {{"pads", pads}, {"mode", mode}, {"value", 9.0}}));
  };
  expectNear(pad1d("constant", {2, 1}), {9, 9, 1, 2, 3, 9});
  expectNear(pad1d("edge", {2, 1}), {1, 1, 1, 2, 3, 3});
  expectNear(pad1d("reflect", {2, 1}), {3, 2, 1, 2, 3, 2});
  // Negative pads crop: crop one at the start, pad two at the end.
  expectNear(pad1d("constant", {-1, 2}), {2, 3, 9, 9});
  expectNear(pad1d("edge", {-1, 2}), {2, 3, 3, 3});
  // 2-D: np.pad([[1,2],[3,4]], ((1,0),(0,1)), 'constant') (value 0), on i64.
  Tensor out =
      run1(OpKind::Pad, {i64({2, 2}, {1, 2, 3, 4})},
           {{"pads", std::vector<int64_t>{1, 0, 0, 1}}, {"mode", std::string("constant")}, {"value", 0.0}});
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  // Quantized constant padding stores the quantized value: round(1.0 / 0.5) + 10 = 12.
  Tensor q(Type(ElemKind::Int8Q, {1}, 0.5f, 10));
  q.as<int8_t>()[0] = -3;
  Tensor qp = run1(OpKind::Pad, {q},
                   {{"pads", std::vector<int64_t>{1, 0}}, {"mode", std::string("constant")}, {"value", 1.0}});
  EXPECT_EQ(values<int8_t>(qp), (std::vector<int8_t>{12, -3}));
}

TEST(Kernels, TileAndBroadcast) {
  // np.tile([[1,2],[3,4]], (2,3))
  Tensor out = run1(OpKind::Tile, {i32({2, 2}, {1, 2, 3, 4})}, {{"repeats", std::vector<int64_t>{2, 3}}});
  EXPECT_EQ(out.type().dims, (Dims{4, 6}));
  EXPECT_EQ(values<int32_t>(out),
            (std::vector<int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  // np.broadcast_to([[1],[2]], (2,2,3)) via Expand semantics.
  Tensor b = run1(OpKind::Broadcast, {f32({2, 1}, {1, 2})}, {{"shape", std::vector<int64_t>{2, 1, 3}}});
  EXPECT_EQ(b.type().dims, (Dims{2, 2, 3}));
  expectNear(values<float>(b), {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
}

TEST(Kernels, GatherNegativeIndicesAndErrors) {
  Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor out = run1(OpKind::Gather, {data, i64({2, 2}, {2, -3, -1, 1})}, {{"axis", int64_t(0)}});
  EXPECT_EQ(out.type().dims, (Dims{2, 2, 2}));
  expectNear(values<float>(out), {5, 6, 1, 2, 5, 6, 3, 4});
  Tensor cols = run1(OpKind::Gather, {data, i32({1}, {1})}, {{"axis", int64_t(1)}});
  EXPECT_EQ(cols.type().dims, (Dims{3, 1}));
  expectNear(values<float>(cols), {2, 4, 6});
  std::string error = runError(OpKind::Gather, {data, i32({2}, {0, 3})}, {{"axis", int64_t(0)}});
  EXPECT_NE(error.find("index 3"), std::string::npos) << error;
  error = runError(OpKind::Gather, {data, i64({1}, {-4})}, {{"axis", int64_t(0)}});
  EXPECT_NE(error.find("index -4"), std::string::npos) << error;
}

// ---- Resize --------------------------------------------------------------------------------

namespace {
Attributes resizeAttrs(std::vector<int64_t> sizes, std::string mode, std::string transform,
                       std::string nearest = "round_prefer_floor") {
  return Attributes{{"sizes", sizes},
                    {"mode", mode},
                    {"coordinate_transformation_mode", transform},
                    {"nearest_mode", nearest}};
}
}  // namespace

TEST(Kernels, ResizeLinear1D) {
  Tensor x = f32({2}, {1, 2});
  // half_pixel 2 -> 4: coordinates -0.25, 0.25, 0.75, 1.25, clamped to [0, 1].
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({4}, "linear", "half_pixel"))),
             {1, 1.25f, 1.75f, 2});
  // align_corners 2 -> 3: 0, 0.5, 1.
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({3}, "linear", "align_corners"))),
             {1, 1.5f, 2});
  // asymmetric 2 -> 4: coordinates 0, 0.5, 1, 1.5 (clamped to 1).
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({4}, "linear", "asymmetric"))),
             {1, 1.5f, 2, 2});
  // pytorch_half_pixel to one element: coordinate 0.
  expectNear(values<float>(run1(OpKind::Resize, {f32({3}, {4, 5, 6})},
                                resizeAttrs({1}, "linear", "pytorch_half_pixel"))),
             {4});
  // Downsampling 4 -> 2 with half_pixel: coordinates 0.5 and 2.5.
  expectNear(
      values<float>(run1(OpKind::Resize, {f32({4}, {1, 2, 3, 4})}, resizeAttrs({2}, "linear", "half_pixel"))),
      {1.5f, 3.5f});
}

TEST(Kernels, ResizeBilinearMatchesPyTorch) {
  // y = tensor([[1.,2.,4.],[3.,7.,5.]]).reshape(1,1,2,3)
  Tensor y = f32({1, 2, 3, 1}, {1, 2, 4, 3, 7, 5});
  // F.interpolate(y, size=(3,5), mode='bilinear', align_corners=False)  (= pytorch_half_pixel)
  expectNear(
      values<float>(run1(OpKind::Resize, {y}, resizeAttrs({1, 3, 5, 1}, "linear", "pytorch_half_pixel"))),
      {1, 1.4f, 2, 3.2f, 4, 2, 3, 4.5f, 4.5f, 4.5f, 3, 4.6f, 7, 5.8f, 5});
  // F.interpolate(y, size=(3,5), mode='bilinear', align_corners=True)
  expectNear(values<float>(run1(OpKind::Resize, {y}, resizeAttrs({1, 3, 5, 1}, "linear", "align_corners"))),
             {1, 1.5f, 2, 3, 4, 2, 3.25f, 4.5f, 4.5f, 4.5f, 3, 5, 7, 6, 5});
}

TEST(Kernels, ResizeTrilinearMatchesNaiveFormula) {
  // Three resized axes (2x3x2 -> 3x4x5), half_pixel, against a direct
  // product-of-weights formula over the 8 corners.
  std::vector<float> x = randomFloats(12, 5);
  Tensor out = run1(OpKind::Resize, {f32({2, 3, 2}, x)}, resizeAttrs({3, 4, 5}, "linear", "half_pixel"));
  Dims in = {2, 3, 2}, o = {3, 4, 5};
  auto coord = [&](int axis, int64_t i) {
    double c = (double(i) + 0.5) * double(in[size_t(axis)]) / double(o[size_t(axis)]) - 0.5;
    return std::min(std::max(c, 0.0), double(in[size_t(axis)] - 1));
  };
  std::vector<float> want;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 5; ++c) {
        double ca = coord(0, a), cb = coord(1, b), cc = coord(2, c);
        double s = 0;
        for (int64_t i = 0; i < in[0]; ++i)
          for (int64_t j = 0; j < in[1]; ++j)
            for (int64_t k = 0; k < in[2]; ++k) {
              double w = std::max(0.0, 1 - std::fabs(ca - double(i))) *
                         std::max(0.0, 1 - std::fabs(cb - double(j))) *
                         std::max(0.0, 1 - std::fabs(cc - double(k)));
              s += w * double(x[size_t((i * 3 + j) * 2 + k)]);
            }
        want.push_back(float(s));
      }
  expectNear(values<float>(out), want, 1e-5f);
}

TEST(Kernels, ResizeNearestModes) {
  Tensor x = f32({4}, {10, 20, 30, 40});
  // asymmetric 4 -> 8 (scale 2): coordinates 0, 0.5, 1, 1.5, ...
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({8}, "nearest", "asymmetric", "floor"))),
             {10, 10, 20, 20, 30, 30, 40, 40});
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({8}, "nearest", "asymmetric", "ceil"))),
             {10, 20, 20, 30, 30, 40, 40, 40});
  expectNear(values<float>(
                 run1(OpKind::Resize, {x}, resizeAttrs({8}, "nearest", "asymmetric", "round_prefer_floor"))),
             {10, 10, 20, 20, 30, 30, 40, 40});
  expectNear(values<float>(
                 run1(OpKind::Resize, {x}, resizeAttrs({8}, "nearest", "asymmetric", "round_prefer_ceil"))),
             {10, 20, 20, 30, 30, 40, 40, 40});
  // half_pixel 4 -> 8: (i + 0.5)/2 - 0.5 = -0.25, 0.25, 0.75, 1.25, ... rounded.
  expectNear(values<float>(
                 run1(OpKind::Resize, {x}, resizeAttrs({8}, "nearest", "half_pixel", "round_prefer_floor"))),
             {10, 10, 20, 20, 30, 30, 40, 40});
  // tf_half_pixel_for_nn 4 -> 3: (i + 0.5) * 4/3 = 0.667, 2, 3.333 -> 1, 2, 3.
  expectNear(values<float>(run1(OpKind::Resize, {x}, resizeAttrs({3}, "nearest", "tf_half_pixel_for_nn"))),
             {20, 30, 40});
  // align_corners 4 -> 3: 0, 1.5, 3 with round_prefer_ceil -> 0, 2, 3.
  expectNear(values<float>(run1(OpKind::Resize, {x},
                                resizeAttrs({3}, "nearest", "align_corners", "round_prefer_ceil"))),
             {10, 30, 40});
  // Explicit scales drive the transform: asymmetric with scale 3 for 4 -> 8
  // maps i to i/3: 0,0.33,0.67,1,1.33,1.67,2,2.33 -> floor.
  Attributes scaled = resizeAttrs({8}, "nearest", "asymmetric", "floor");
  scaled.set("scales", std::vector<double>{3.0});
  expectNear(values<float>(run1(OpKind::Resize, {x}, scaled)), {10, 10, 10, 20, 20, 20, 30, 30});
  // Nearest works on integer kinds too.
  EXPECT_EQ(values<int64_t>(
                run1(OpKind::Resize, {i64({2}, {5, 6})}, resizeAttrs({4}, "nearest", "asymmetric", "floor"))),
            (std::vector<int64_t>{5, 5, 6, 6}));
}

// ---- runKernel contract ---------------------------------------------------------------------

TEST(Kernels, RunKernelRejectsMismatchedOutputsAndUnsupportedKinds) {
  Tensor a = f32({2}, {1, 2});
  Tensor wrong(Type(ElemKind::F32, {3}));
  std::vector<ConstTensorRef> in = {a.ref(), a.ref()};
  std::vector<TensorRef> out = {wrong.ref()};
  Error e = runKernel(OpKind::Add, {}, in, out);
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("type rule"), std::string::npos) << e.message();
  // Not a primitive.
  std::vector<ConstTensorRef> one = {a.ref()};
  Tensor softmaxOut(a.type());
  std::vector<TensorRef> sOut = {softmaxOut.ref()};
  EXPECT_TRUE(runKernel(OpKind::Softmax, {{"axis", int64_t(0)}}, one, sOut));
  // Exp on i32 is rejected by the type rule; Exp on f16 has no kernel.
  std::vector<Type> f16 = {Type(ElemKind::F16, {2})};
  EXPECT_FALSE(kernelSupports(OpKind::Exp, f16, f16));
  EXPECT_TRUE(kernelSupports(OpKind::Exp, std::vector<Type>{a.type()}, std::vector<Type>{a.type()}));
  EXPECT_FALSE(kernelSupports(OpKind::Exp, std::vector<Type>{}, std::vector<Type>{a.type()}));
  EXPECT_TRUE(kernelSupports(OpKind::Transpose, f16, f16));
  // Wrong operand count is an error, not a crash.
  Tensor addResult(a.type());
  std::vector<TensorRef> addOut = {addResult.ref()};
  EXPECT_TRUE(runKernel(OpKind::Add, {}, one, addOut));
}

TEST(Kernels, ConvResNetSizedLayerIsFast) {
  // A 3x3 conv of ResNet-50's second stage (56x56x64 -> 64): 116M MACs. The
  // loop order must let this run in well under a second in optimised builds.
  Tensor x(Type(ElemKind::F32, {1, 56, 56, 64})), w(Type(ElemKind::F32, {64, 3, 3, 64})),
      b(Type(ElemKind::F32, {64}));
  Attributes attrs{{"strides", std::vector<int64_t>{1, 1}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                   {"dilations", std::vector<int64_t>{1, 1}},
                   {"group", int64_t(1)}};
  Tensor out = run1(OpKind::Conv, {x, w, b}, attrs);
  EXPECT_EQ(out.type().dims, (Dims{1, 56, 56, 64}));
}

// ---- Model-coverage kernels: values from the ONNX operator spec's examples -----------

TEST(Kernels, ModFollowsTheDivisorOrTheDividendSign) {
  Tensor x = i64({6}, {-4, 7, 5, 4, -7, 8}), y = i64({6}, {2, -3, 8, -2, 3, 5});
  EXPECT_EQ(values<int64_t>(run1(OpKind::Mod, {x, y}, {{"fmod", int64_t(0)}})),
            (std::vector<int64_t>{0, -2, 5, 0, 2, 3}));
  EXPECT_EQ(values<int64_t>(run1(OpKind::Mod, {x, y}, {{"fmod", int64_t(1)}})),
            (std::vector<int64_t>{0, 1, 5, 0, -1, 3}));
  // A remainder by 0 is 0; INT32_MIN % -1 does not trap.
  EXPECT_EQ(values<int32_t>(
                run1(OpKind::Mod, {i32({2}, {5, INT32_MIN}), i32({2}, {0, -1})}, {{"fmod", int64_t(0)}})),
            (std::vector<int32_t>{0, 0}));
  expectNear(values<float>(run1(OpKind::Mod,
                                {f32({6}, {-4.3f, 7.2f, 5.0f, 4.3f, -7.2f, 8.0f}),
                                 f32({6}, {2.1f, -3.4f, 8.0f, -2.1f, 3.4f, 5.0f})},
                                {{"fmod", int64_t(1)}})),
             {-0.1f, 0.4f, 5.0f, 0.1f, -0.4f, 3.0f}, 1e-5f);
  EXPECT_NE(runError(OpKind::Mod, {f32({1}, {1}), f32({1}, {1})}, {{"fmod", int64_t(0)}}), "");
}

TEST(Kernels, GatherElementsAlongEitherAxis) {
  EXPECT_EQ(values<float>(run1(OpKind::GatherElements, {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                               {{"axis", int64_t(1)}})),
            (std::vector<float>{1, 1, 4, 3}));
  EXPECT_EQ(values<float>(run1(OpKind::GatherElements,
                               {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i32({2, 3}, {1, 2, 0, 2, 0, -3})},
                               {{"axis", int64_t(0)}})),
            (std::vector<float>{4, 8, 3, 7, 2, 3}));
  EXPECT_NE(
      runError(OpKind::GatherElements, {f32({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {2})}, {{"axis", int64_t(1)}})
          .find("index 2 is out of range for axis 1 of size 2"),
      std::string::npos);
}

TEST(Kernels, ScatterElementsWithEveryReduction) {
  Tensor zeros = f32({3, 3}, std::vector<float>(9, 0));
  Attributes none{{"axis", int64_t(0)}, {"reduction", std::string("none")}};
  expectNear(
      values<float>(
          run1(OpKind::ScatterElements,
               {zeros, i64({2, 3}, {1, 0, 2, 0, 2, 1}), f32({2, 3}, {1, 1.1f, 1.2f, 2, 2.1f, 2.2f})}, none)),
      {2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f});
  // Duplicate indices combine in order.
  Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor twice = i64({1, 2}, {1, 1});
  Tensor updates = f32({1, 2}, {1.1f, 2.1f});
  auto scatter = [&](const char* reduction) {
    return values<float>(run1(OpKind::ScatterElements, {row, twice, updates},
                              {{"axis", int64_t(1)}, {"reduction", std::string(reduction)}}));
  };
  expectNear(scatter("none"), {1, 2.1f, 3, 4, 5});
  expectNear(scatter("add"), {1, 5.2f, 3, 4, 5});
  expectNear(scatter("mul"), {1, 4.62f, 3, 4, 5});
  expectNear(scatter("max"), {1, 2.1f, 3, 4, 5});
  expectNear(scatter("min"), {1, 1.1f, 3, 4, 5});
}

TEST(Kernels, GatherNDWithAndWithoutBatchDims) {
  Tensor data = i32({2, 2}, {0, 1, 2, 3});
  EXPECT_EQ(values<int32_t>(
                run1(OpKind::GatherND, {data, i64({2, 2}, {0, 0, 1, 1})}, {{"batch_dims", int64_t(0)}})),
            (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(
      values<int32_t>(run1(OpKind::GatherND, {data, i64({2, 1}, {1, 0})}, {{"batch_dims", int64_t(0)}})),
      (std::vector<int32_t>{2, 3, 0, 1}));
  Tensor batched = i32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor out = run1(OpKind::GatherND, {batched, i64({2, 1}, {1, 0})}, {{"batch_dims", int64_t(1)}});
  EXPECT_EQ(out.type().dims, (Dims{2, 2}));
  EXPECT_EQ(values<int32_t>(out), (std::vector<int32_t>{2, 3, 4, 5}));
}

TEST(Kernels, ScatterNDReplacesAndCombinesSlices) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor indices = i64({4, 1}, {4, 3, 1, 7});
  Tensor updates = f32({4}, {9, 10, 11, 12});
  EXPECT_EQ(
      values<float>(run1(OpKind::ScatterND, {data, indices, updates}, {{"reduction", std::string("none")}})),
      (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  EXPECT_EQ(values<float>(run1(OpKind::ScatterND, {data, i64({2, 1}, {0, 0}), f32({2}, {5, 6})},
                               {{"reduction", std::string("add")}})),
            (std::vector<float>{12, 2, 3, 4, 5, 6, 7, 8}));
  // Whole rows of a matrix; a negative index counts from the end.
  EXPECT_EQ(values<float>(run1(OpKind::ScatterND,
                               {f32({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {-1}), f32({1, 2}, {8, 9})},
                               {{"reduction", std::string("none")}})),
            (std::vector<float>{1, 2, 8, 9}));
}

TEST(Kernels, RoundHalvesToEvenAndIsNaN) {
  expectNear(values<float>(run1(OpKind::Round, {f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})})),
             {0, 2, 2, -0.0f, -2, 2});
  Tensor nan = run1(OpKind::IsNaN, {f32({3}, {1, std::nanf(""), INFINITY})});
  EXPECT_EQ(values<uint8_t>(nan), (std::vector<uint8_t>{0, 1, 0}));
}

TEST(Kernels, IntegerPowIsExactAndTruncatesNegativeExponents) {
  EXPECT_EQ(
      values<int64_t>(run1(OpKind::Pow, {i64({6}, {2, 3, -2, 1, -1, 5}), i64({6}, {10, 3, 3, -4, -3, -1})})),
      (std::vector<int64_t>{1024, 27, -8, 1, -1, 0}));
  EXPECT_EQ(values<int32_t>(run1(OpKind::Pow, {i32({2}, {7, 0}), i32({2}, {0, 0})})),
            (std::vector<int32_t>{1, 1}));
}
