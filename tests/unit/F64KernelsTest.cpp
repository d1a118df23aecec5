// f64 reference kernels: they compute in double, never through f32. Expected
// values are numpy float64 results (the generating expression is noted next to
// them) or hand-derived; an f32 detour would miss them by about 1e-8.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ember/Kernels.h"

using namespace ember;

namespace {

Tensor f64(Dims dims, const std::vector<double>& v) {
  Tensor t(Type(ElemKind::F64, std::move(dims)));
  EXPECT_EQ(int64_t(v.size()), t.type().numElements());
  std::memcpy(t.data(), v.data(), v.size() * sizeof(double));
  return t;
}

std::vector<double> doubles(const Tensor& t) {
  EXPECT_EQ(t.type().kind, ElemKind::F64);
  return std::vector<double>(t.as<double>(), t.as<double>() + t.type().numElements());
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
  EXPECT_TRUE(kernelSupports(kind, types, *resultTypes)) << opName(kind);
  Error e = runKernel(kind, attrs, refs, outRefs);
  EXPECT_FALSE(e) << e.message();
  return outputs;
}

Tensor run1(OpKind kind, const std::vector<Tensor>& inputs, const Attributes& attrs = {}) {
  auto outs = run(kind, inputs, attrs);
  return outs.empty() ? Tensor() : std::move(outs[0]);
}

/// Within 4 ulp (libm may round differently from numpy's by an ulp or two).
void expectNearUlps(const std::vector<double>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], expected[i]) << "element " << i;
}

const std::vector<double> kX = {-2.5, -0.75, 0.1, 0.5, 1.25, 3.0};

TEST(F64Kernels, UnaryMathInDouble) {
  const Tensor x = f64({6}, kX);
  // np.exp(x)
  expectNearUlps(doubles(run1(OpKind::Exp, {x})),
                 {0.0820849986238988, 0.4723665527410147, 1.1051709180756477, 1.6487212707001282,
                  3.4903429574618414, 20.085536923187668});
  // np.tanh(x)
  expectNearUlps(doubles(run1(OpKind::Tanh, {x})),
                 {-0.9866142981514303, -0.6351489523872873, 0.09966799462495582, 0.46211715726000974,
                  0.8482836399575129, 0.9950547536867305});
  // np.sin(x)
  expectNearUlps(doubles(run1(OpKind::Sin, {x})),
                 {-0.5984721441039564, -0.6816387600233341, 0.09983341664682817, 0.47942553860420295,
                  0.9489846193555863, 0.1411200080598672});
  // 1 / (1 + np.exp(-x))
  expectNearUlps(doubles(run1(OpKind::Sigmoid, {x})),
                 {0.07585818002124355, 0.3208213008246071, 0.52497918747894, 0.6224593312018546,
                  0.7772998611746911, 0.9525741268224334});
  // [math.erf(v) for v in x]
  expectNearUlps(doubles(run1(OpKind::Erf, {x})),
                 {-0.999593047982555, -0.7111556336535151, 0.1124629160182849, 0.5204998778130465,
                  0.9229001282564582, 0.9999779095030014});
  const Tensor p = f64({6}, {0.1, 0.5, 1.25, 3.0, 7.5, 100.0});
  // np.log(p), np.sqrt(p)
  expectNearUlps(doubles(run1(OpKind::Log, {p})),
                 {-2.3025850929940455, -0.6931471805599453, 0.22314355131420974, 1.0986122886681096,
                  2.0149030205422647, 4.605170185988091});
  EXPECT_EQ(doubles(run1(OpKind::Sqrt, {p})),
            (std::vector<double>{0.31622776601683794, 0.7071067811865476, 1.118033988749895,
                                 1.7320508075688772, 2.7386127875258306, 10.0}));
}

TEST(F64Kernels, BroadcastArithmeticIsExactIeeeDouble) {
  const Tensor a = f64({2, 3}, {1.1, -2.2, 3.3, 4.4, 5.5, -6.6});
  const Tensor b = f64({3}, {0.3, -0.7, 1.9});
  // (a + b), (a * b), (a / b) in numpy float64: correctly rounded, so exact.
  EXPECT_EQ(doubles(run1(OpKind::Add, {a, b})),
            (std::vector<double>{1.4000000000000001, -2.9000000000000004, 5.199999999999999, 4.7, 4.8,
                                 -4.699999999999999}));
  EXPECT_EQ(doubles(run1(OpKind::Mul, {a, b})),
            (std::vector<double>{0.33, 1.54, 6.27, 1.32, -3.8499999999999996, -12.54}));
  EXPECT_EQ(doubles(run1(OpKind::Div, {a, b})),
            (std::vector<double>{3.666666666666667, 3.1428571428571432, 1.736842105263158, 14.666666666666668,
                                 -7.857142857142858, -3.473684210526316}));
}

TEST(F64Kernels, ModMaxMinCompare) {
  // ONNX's test_mod_mixed_sign_float64 data; np.fmod(x, y).
  const Tensor x = f64({6}, {-4.3, 7.2, 5.0, 4.3, -7.2, 8.0});
  const Tensor y = f64({6}, {2.1, -3.4, 8.0, -2.1, 3.4, 5.0});
  EXPECT_EQ(doubles(run1(OpKind::Mod, {x, y}, Attributes{{"fmod", int64_t(1)}})),
            (std::vector<double>{-0.09999999999999964, 0.40000000000000036, 5.0, 0.09999999999999964,
                                 -0.40000000000000036, 3.0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = f64({3}, {1.0 + 0x1p-40, nan, -3.0});
  const Tensor b = f64({3}, {1.0, 2.0, -2.0});
  std::vector<double> mx = doubles(run1(OpKind::Max, {a, b}));
  EXPECT_EQ(mx[0], 1.0 + 0x1p-40);  // an f32 detour would round this to 1
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -2.0);
  std::vector<double> mn = doubles(run1(OpKind::Min, {a, b}));
  EXPECT_EQ(mn[0], 1.0);
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], -3.0);
  Tensor greater = run1(OpKind::Greater, {a, b});
  ASSERT_EQ(greater.type().kind, ElemKind::Bool);
  EXPECT_EQ(greater.as<uint8_t>()[0], 1);  // 1 + 2^-40 > 1 only in double
  EXPECT_EQ(greater.as<uint8_t>()[1], 0);
  EXPECT_EQ(greater.as<uint8_t>()[2], 0);
}

TEST(F64Kernels, ReductionsKeepDoublePrecision) {
  // Hand-derived: 2^-30 survives 1 + 2^-30 in double (f32 has 24 bits).
  const double e = 0x1p-30;
  const Tensor x = f64({2, 3}, {1.0, e, e, 2.0, 3 * e, -e});
  EXPECT_EQ(doubles(run1(OpKind::ReduceSum, {x},
                         Attributes{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}})),
            (std::vector<double>{1.0 + 2 * e, 2.0 + 2 * e}));
  EXPECT_EQ(doubles(run1(OpKind::ReduceMax, {x},
                         Attributes{{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}})),
            (std::vector<double>{2.0, 3 * e, e}));
  EXPECT_EQ(doubles(run1(OpKind::ReduceProd, {x},
                         Attributes{{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(0)}})),
            (std::vector<double>{2.0, 3 * e * e, -e * e}));
  Tensor arg =
      run1(OpKind::ArgMax, {f64({4}, {1.0, 1.0 + 0x1p-40, 1.0 + 0x1p-41, 0.5})},
           Attributes{{"axis", int64_t(0)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(0)}});
  EXPECT_EQ(arg.as<int64_t>()[0], 1);
}

TEST(F64Kernels, MatMulAccumulatesInDouble) {
  // Hand-derived: [1+2^-30, 2; 3, 4] x [1, 2^-30; 1, 1] with dyadic values, so
  // every product and sum is exact in double.
  const double e = 0x1p-30;
  const Tensor a = f64({2, 2}, {1.0 + e, 2.0, 3.0, 4.0});
  const Tensor b = f64({2, 2}, {1.0, e, 1.0, 1.0});
  EXPECT_EQ(doubles(run1(OpKind::MatMul, {a, b})),
            (std::vector<double>{3.0 + e, (1.0 + e) * e + 2.0, 7.0, 3 * e + 4.0}));
}

TEST(F64Kernels, CastsToAndFromF64) {
  const Tensor x = f64({4}, {1.0 + 0x1p-40, -2.75, 1e300, std::numeric_limits<double>::quiet_NaN()});
  Tensor asF32 = run1(OpKind::Cast, {x}, Attributes{{"to", std::string("f32")}});
  ASSERT_EQ(asF32.type().kind, ElemKind::F32);
  EXPECT_EQ(asF32.as<float>()[0], 1.0f);
  EXPECT_EQ(asF32.as<float>()[1], -2.75f);
  EXPECT_EQ(asF32.as<float>()[2], std::numeric_limits<float>::infinity());  // numpy: inf
  EXPECT_TRUE(std::isnan(asF32.as<float>()[3]));
  Tensor asI64 = run1(OpKind::Cast, {x}, Attributes{{"to", std::string("i64")}});
  EXPECT_EQ(asI64.as<int64_t>()[0], 1);
  EXPECT_EQ(asI64.as<int64_t>()[1], -2);  // truncates toward zero

  // i64 -> f64 is exact up to 2^53; f32 -> f64 widens exactly.
  Tensor big(Type(ElemKind::I64, {1}));
  big.as<int64_t>()[0] = (int64_t(1) << 53) - 1;
  EXPECT_EQ(doubles(run1(OpKind::Cast, {big}, Attributes{{"to", std::string("f64")}}))[0], 0x1p53 - 1);
  Tensor small(Type(ElemKind::F32, {1}));
  small.as<float>()[0] = 0.1f;
  EXPECT_EQ(doubles(run1(OpKind::Cast, {small}, Attributes{{"to", std::string("f64")}}))[0], double(0.1f));
}

TEST(F64Kernels, CastsToHalfAndBFloat16RoundOnce) {
  const double inf = std::numeric_limits<double>::infinity();
  // np.array(x).astype(np.float16): 1 + 2^-11 + 2^-40 lies above the tie
  // between 1 and 1 + 2^-10; through f32 it would land on the tie and round to 1.
  const Tensor x = f64({6}, {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, -(1 + 0x1p-11 + 0x1p-40), 65520.0 - 0x1p-20,
                             1e300, 0x1p-25 + 0x1p-60});
  Tensor half = run1(OpKind::Cast, {x}, Attributes{{"to", std::string("f16")}});
  std::vector<double> got;
  for (int i = 0; i < 6; ++i) got.push_back(double(halfToFloat(half.as<uint16_t>()[i])));
  EXPECT_EQ(got,
            (std::vector<double>{1.0009765625, 1.0, -1.0009765625, 65504.0, inf, 5.960464477539063e-08}));
  // Hand-derived for bfloat16 (7 stored bits): 1 + 2^-8 + 2^-40 rounds up to
  // 1 + 2^-7. (PyTorch goes through f32 and gives 1.)
  const Tensor y = f64({3}, {1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-8, 1e300});
  Tensor bf = run1(OpKind::Cast, {y}, Attributes{{"to", std::string("bf16")}});
  EXPECT_EQ(bfloat16ToFloat(bf.as<uint16_t>()[0]), 1.0078125f);
  EXPECT_EQ(bfloat16ToFloat(bf.as<uint16_t>()[1]), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(bf.as<uint16_t>()[2]), std::numeric_limits<float>::infinity());
  // Tensor::setElementFromDouble (constants, folding) rounds the same way.
  Tensor c(Type(ElemKind::F16, {1}));
  c.setElementFromDouble(0, 1 + 0x1p-11 + 0x1p-40);
  EXPECT_EQ(halfToFloat(c.as<uint16_t>()[0]), 1.0009765625f);
}

TEST(F64Kernels, DataMovementAndSelectMoveEightByteElements) {
  const Tensor x = f64({2, 3}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  EXPECT_EQ(doubles(run1(OpKind::Transpose, {x}, Attributes{{"perm", std::vector<int64_t>{1, 0}}})),
            (std::vector<double>{0.1, 0.4, 0.2, 0.5, 0.3, 0.6}));
  Tensor padded = run1(
      OpKind::Pad, {x},
      Attributes{
          {"pads", std::vector<int64_t>{0, 1, 0, 0}}, {"mode", std::string("constant")}, {"value", 0.1}});
  EXPECT_EQ(doubles(padded), (std::vector<double>{0.1, 0.1, 0.2, 0.3, 0.1, 0.4, 0.5, 0.6}));
  Tensor cond(Type(ElemKind::Bool, {3}));
  cond.as<uint8_t>()[0] = 1;
  const Tensor other = f64({2, 3}, {-1, -2, -3, -4, -5, -6});
  EXPECT_EQ(doubles(run1(OpKind::Select, {cond, x, other})), (std::vector<double>{0.1, -2, -3, 0.4, -5, -6}));
}

TEST(F64Kernels, PoolsInDouble) {
  // Hand-derived: one 2x2 window over [1 + 2^-40, 2, 3, 4 + 2^-40] (NHWC 1x2x2x1).
  const double e = 0x1p-40;
  const Tensor x = f64({1, 2, 2, 1}, {1.0 + e, 2.0, 3.0, 4.0 + e});
  Attributes avg{{"kernel", std::vector<int64_t>{2, 2}},
                 {"strides", std::vector<int64_t>{1, 1}},
                 {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                 {"count_include_pad", int64_t(0)},
                 {"ceil_mode", int64_t(0)}};
  EXPECT_EQ(doubles(run1(OpKind::AvgPool, {x}, avg)), (std::vector<double>{2.5 + e / 2}));
  Attributes max{{"kernel", std::vector<int64_t>{2, 2}},
                 {"strides", std::vector<int64_t>{1, 1}},
                 {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                 {"dilations", std::vector<int64_t>{1, 1}},
                 {"ceil_mode", int64_t(0)}};
  EXPECT_EQ(doubles(run1(OpKind::MaxPool, {x}, max)), (std::vector<double>{4.0 + e}));
}

TEST(F64Kernels, ResizeLinearAndCubicInterpolateInDouble) {
  // torch.nn.functional.interpolate(x, size=(4, 6), mode='bilinear' / 'bicubic',
  // align_corners=False) in float64: ONNX's half_pixel, cubic a = -0.75. Scale 2
  // is exact in f32, in which ONNX gives scales; the order of the separable
  // passes differs from PyTorch's by a few ulp. An f32 detour would miss by 1e-8.
  const Tensor x = f64({1, 1, 2, 3}, {0.1, -1.3, 2.7, 1.0 + 0x1p-40, 0.5, -0.25});
  Attributes attrs{{"sizes", std::vector<int64_t>{1, 1, 4, 6}},
                   {"mode", std::string("linear")},
                   {"coordinate_transformation_mode", std::string("half_pixel")},
                   {"nearest_mode", std::string("round_prefer_floor")}};
  const std::vector<double> linear = {0.1,
                                      -0.25,
                                      -0.9500000000000001,
                                      -0.3,
                                      1.7000000000000004,
                                      2.7,
                                      0.3250000000002274,
                                      0.0312500000001705,
                                      -0.5562499999999432,
                                      -0.14687499999999992,
                                      1.2593750000000001,
                                      1.9625000000000004,
                                      0.7750000000006821,
                                      0.5937500000005116,
                                      0.2312500000001705,
                                      0.159375,
                                      0.37812500000000004,
                                      0.48750000000000004,
                                      1.0000000000009095,
                                      0.8750000000006821,
                                      0.6250000000002274,
                                      0.3125,
                                      -0.0625,
                                      -0.25};
  std::vector<double> got = doubles(run1(OpKind::Resize, {x}, attrs));
  ASSERT_EQ(got.size(), linear.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], linear[i], 1e-14) << i;
  attrs.set("mode", std::string("cubic"));
  attrs.set("cubic_coeff_a", -0.75);
  const std::vector<double> cubic = {
      0.16274566650380023, -0.49185256958015233, -1.625862884521506,   -0.6277587890624898,
      1.9388244628906284,  3.485845184326172,    0.4300567626955403,   -0.06987457275374687,
      -0.9295700073241718, -0.3559082031250217,  1.3271606445312427,   2.340013122558594,
      0.8703338623054652,  0.6251480102544503,   0.21726531982437816,  0.09184570312492582,
      0.3197143554687253,  0.45276031494140623,  1.1376449584972053,   1.047126007080856,
      0.9135581970217121,  0.363696289062394,    -0.29194946289066037, -0.6930717468261719};
  got = doubles(run1(OpKind::Resize, {x}, attrs));
  ASSERT_EQ(got.size(), cubic.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], cubic[i], 1e-14) << i;
}

TEST(F64Kernels, GridSampleInDouble) {
  // torch.nn.functional.grid_sample(x, g, mode=..., padding_mode='border',
  // align_corners=False) in float64, x NCHW 1x1x2x3 (NHWC here, C = 1).
  const Tensor x = f64({1, 2, 3, 1}, {0.1, -1.3, 2.7, 1.0 + 0x1p-40, 0.5, -0.25});
  const Tensor grid = f64({1, 2, 2, 2}, {-0.9, -0.7, 0.3, 0.1, 0.95, 0.8, -0.2, 0.6});
  Attributes attrs{{"mode", std::string("bilinear")},
                   {"padding_mode", std::string("border")},
                   {"align_corners", int64_t(0)}};
  std::vector<double> got = doubles(run1(OpKind::GridSample, {x, grid}, attrs));
  const std::vector<double> bilinear = {0.1, 0.2975000000000002, -0.25, 0.6500000000002728};
  ASSERT_EQ(got.size(), bilinear.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], bilinear[i], 1e-14) << i;
  attrs.set("mode", std::string("bicubic"));
  got = doubles(run1(OpKind::GridSample, {x, grid}, attrs));
  const std::vector<double> bicubic = {0.1784510499999033, 0.1999890499999432, -0.7094672463378913,
                                       0.848097190625269};
  ASSERT_EQ(got.size(), bicubic.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], bicubic[i], 1e-14) << i;
}

}  // namespace
