// The int8 arithmetic (QuantMath.h) and the reference quantized kernels,
// checked against an independent scalar implementation written here from
// docs/quantization.md (128-bit exact division instead of shifts), and hand-
// computed golden values, on rounding edge cases: ties, saturation, large and
// small multipliers, negative values, zero points.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ember/Kernels.h"
#include "ember/QuantMath.h"

namespace ember {
namespace {

using quant::FixedPointMultiplier;

// ---- Independent model of the spec -------------------------------------------------

/// round(p / 2^bits), ties away from zero, by exact 128-bit division.
__int128 divRoundAway(__int128 p, int bits) {
  __int128 d = __int128(1) << bits;
  __int128 q = p / d, r = p % d;  // truncates toward zero
  if (2 * (r < 0 ? -r : r) >= d) q += p < 0 ? -1 : 1;
  return q;
}

/// clamp(zp + round(acc * m * 2^-(31 + shift)), lo, hi).
int32_t specRequantize(int32_t acc, FixedPointMultiplier m, int32_t zp, int32_t lo, int32_t hi) {
  __int128 p = __int128(acc) * m.multiplier;
  int bits = 31 + m.shift;
  __int128 v = bits > 0 ? divRoundAway(p, bits) : p * (__int128(1) << -bits);
  v += zp;
  return int32_t(v < lo ? lo : v > hi ? hi : v);
}

int32_t specQuantize(double x, double scale, int32_t zp, int32_t lo, int32_t hi) {
  if (std::isnan(x)) return std::clamp(zp, lo, hi);
  double r = x / scale;
  double q = r < 0 ? -std::floor(-r + 0.5) : std::floor(r + 0.5);  // half away from zero
  q += zp;
  return q < lo ? lo : q > hi ? hi : int32_t(q);
}

// ---- QuantMath ------------------------------------------------------------------------

TEST(QuantMathTest, MultiplierIsNormalisedAndAccurate) {
  for (double real : {1e-12, 3.7e-9, 1e-5, 0.0003, 0.25, 0.5, 0.7071, 0.999999999, 1.0, 1.5, 1000.0, 3e8}) {
    FixedPointMultiplier m = quant::quantizeMultiplier(real);
    EXPECT_GE(m.shift, -31) << real;
    EXPECT_LE(m.shift, 30) << real;
    if (m.shift < 30) {
      EXPECT_GE(m.multiplier, int32_t(1) << 30) << real;
    }
    double represented = double(m.multiplier) * std::ldexp(1.0, -(31 + m.shift));
    EXPECT_LE(std::fabs(represented - real), std::ldexp(1.0, -(31 + m.shift)) * 0.5 + 1e-300) << real;
  }
  EXPECT_EQ(quant::quantizeMultiplier(0.0).multiplier, 0);
  // 1 - 2^-33 rounds up into the next power of two.
  FixedPointMultiplier carry = quant::quantizeMultiplier(1.0 - std::ldexp(1.0, -33));
  EXPECT_EQ(carry.multiplier, int32_t(1) << 30);
  EXPECT_EQ(carry.shift, -1);
}

TEST(QuantMathTest, RequantizeGoldenTies) {
  const FixedPointMultiplier half = quant::quantizeMultiplier(0.5);
  // Hand-computed: round half away from zero.
  EXPECT_EQ(quant::requantize(5, half, 0, -128, 127), 3);    // 2.5 -> 3
  EXPECT_EQ(quant::requantize(-5, half, 0, -128, 127), -3);  // -2.5 -> -3
  EXPECT_EQ(quant::requantize(3, half, 0, -128, 127), 2);    // 1.5 -> 2
  EXPECT_EQ(quant::requantize(-3, half, 0, -128, 127), -2);  // -1.5 -> -2
  EXPECT_EQ(quant::requantize(-1, half, 0, -128, 127), -1);  // -0.5 -> -1
  EXPECT_EQ(quant::requantize(1, half, 10, -128, 127), 11);  // 0.5 -> 1, then + zero point
  EXPECT_EQ(quant::requantize(-3, half, -7, -128, 127), -9);
  const FixedPointMultiplier quarter = quant::quantizeMultiplier(0.25);
  EXPECT_EQ(quant::requantize(6, quarter, 0, -128, 127), 2);    // 1.5 -> 2
  EXPECT_EQ(quant::requantize(-6, quarter, 0, -128, 127), -2);  // -1.5 -> -2
  EXPECT_EQ(quant::requantize(-7, quarter, 0, -128, 127), -2);  // -1.75 -> -2
  EXPECT_EQ(quant::requantize(-5, quarter, 0, -128, 127), -1);  // -1.25 -> -1
}

TEST(QuantMathTest, RequantizeSaturates) {
  const FixedPointMultiplier one = quant::quantizeMultiplier(1.0);
  EXPECT_EQ(quant::requantize(1000, one, 0, -128, 127), 127);
  EXPECT_EQ(quant::requantize(-1000, one, 0, -128, 127), -128);
  EXPECT_EQ(quant::requantize(INT32_MAX, quant::quantizeMultiplier(3e8), 0, -128, 127), 127);
  EXPECT_EQ(quant::requantize(INT32_MIN, quant::quantizeMultiplier(3e8), 0, -128, 127), -128);
  EXPECT_EQ(quant::requantize(200, one, 0, 0, 255), 200);  // uint8
  EXPECT_EQ(quant::requantize(-1, one, 0, 0, 255), 0);
  // ReLU fused: lo = zero point.
  EXPECT_EQ(quant::requantize(-50, one, -20, -20, 127), -20);
}

TEST(QuantMathTest, RequantizeMatchesIndependentModel) {
  std::mt19937_64 rng(42);
  std::vector<double> reals = {1e-10, 2.3e-7, 1e-4, 0.0123, 0.333, 0.5, 0.9999, 1.0, 1.7, 64.0, 1234.5, 2e6};
  std::uniform_int_distribution<int32_t> accs(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int32_t> small(-100000, 100000);
  for (double real : reals) {
    FixedPointMultiplier m = quant::quantizeMultiplier(real);
    for (int i = 0; i < 20000; ++i) {
      int32_t acc = i % 2 ? accs(rng) : small(rng);
      int32_t zp = int32_t(i % 256) - 128;
      ASSERT_EQ(quant::requantize(acc, m, zp, -128, 127), specRequantize(acc, m, zp, -128, 127))
          << "acc " << acc << " real " << real << " zp " << zp;
    }
    // Exact ties: acc * m a half-integer multiple of 2^(31+shift).
    if (31 + m.shift >= 1 && 31 + m.shift <= 62) {
      for (int32_t acc : {1, -1, 3, -3, 5, -5, 127, -127}) {
        ASSERT_EQ(quant::requantize(acc, m, 0, INT32_MIN, INT32_MAX),
                  specRequantize(acc, m, 0, INT32_MIN, INT32_MAX));
      }
    }
  }
}

TEST(QuantMathTest, QuantizeValueTiesAndSaturation) {
  EXPECT_EQ(quant::quantizeValue(0.5f, 1.0f, 0, -128, 127), 1);
  EXPECT_EQ(quant::quantizeValue(-0.5f, 1.0f, 0, -128, 127), -1);
  EXPECT_EQ(quant::quantizeValue(2.5f, 1.0f, 3, -128, 127), 6);
  EXPECT_EQ(quant::quantizeValue(-2.5f, 1.0f, 3, -128, 127), 0);
  EXPECT_EQ(quant::quantizeValue(1e30f, 0.1f, 0, -128, 127), 127);
  EXPECT_EQ(quant::quantizeValue(-1e30f, 0.1f, 0, -128, 127), -128);
  EXPECT_EQ(quant::quantizeValue(-INFINITY, 0.1f, 0, -128, 127), -128);
  EXPECT_EQ(quant::quantizeValue(NAN, 0.1f, 5, -128, 127), 5);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> xs(-20, 20);
  for (int i = 0; i < 10000; ++i) {
    float x = xs(rng), scale = 0.05f + float(i % 7) * 0.01f;
    int32_t zp = i % 50 - 25;
    ASSERT_EQ(quant::quantizeValue(x, scale, zp, -128, 127), specQuantize(x, scale, zp, -128, 127)) << x;
  }
}

TEST(QuantMathTest, ActivationRange) {
  auto r = quant::activationRange(quant::int8Range(), 0.1f, -20, 0.0f, INFINITY);
  EXPECT_EQ(r.lo, -20);
  EXPECT_EQ(r.hi, 127);
  r = quant::activationRange(quant::int8Range(), 0.05f, -128, 0.0f, 6.0f);  // ReLU6
  EXPECT_EQ(r.lo, -128);
  EXPECT_EQ(r.hi, -8);  // 6 / 0.05 = 120 -> -128 + 120
}

// ---- Kernels ----------------------------------------------------------------------------

Tensor q8(ElemKind kind, Dims dims, float scale, int32_t offset, const std::vector<int32_t>& values) {
  Tensor t(Type(kind, std::move(dims), scale, offset));
  for (size_t i = 0; i < values.size(); ++i) {
    if (kind == ElemKind::UInt8Q)
      t.as<uint8_t>()[i] = uint8_t(values[i]);
    else if (kind == ElemKind::Int8Q)
      t.as<int8_t>()[i] = int8_t(values[i]);
    else
      t.as<int32_t>()[i] = values[i];
  }
  return t;
}

int32_t at(const Tensor& t, int64_t i) {
  switch (t.type().kind) {
    case ElemKind::UInt8Q:
      return t.as<uint8_t>()[i];
    case ElemKind::Int8Q:
      return t.as<int8_t>()[i];
    default:
      return t.as<int32_t>()[i];
  }
}

/// Runs `kind` with the result type the type rule gives.
Tensor run(OpKind kind, const Attributes& attrs, const std::vector<const Tensor*>& inputs) {
  std::vector<Type> types;
  std::vector<ConstTensorRef> refs;
  for (const Tensor* t : inputs) {
    types.push_back(t->type());
    refs.push_back(t->ref());
  }
  auto resultTypes = inferResultTypes(kind, types, attrs);
  EXPECT_TRUE(bool(resultTypes)) << (resultTypes ? "" : resultTypes.error().message());
  Tensor out((*resultTypes)[0]);
  std::vector<TensorRef> outs = {out.ref()};
  Error e = runKernel(kind, attrs, refs, outs);
  EXPECT_FALSE(e) << e.message();
  return out;
}

Attributes outAttrs(const char* kind, double scale, int64_t offset) {
  return Attributes{{"kind", std::string(kind)}, {"scale", scale}, {"offset", offset}};
}

std::vector<int32_t> randomInts(size_t n, int32_t lo, int32_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(QuantKernelsTest, QuantizeDequantize) {
  std::vector<float> xs = {0.05f, -0.05f, 0.15f, -0.15f, 100.f, -100.f, 0.f, NAN};
  Tensor x = Tensor::fromValues<float>(ElemKind::F32, {8}, xs);
  Tensor q = run(OpKind::Quantize, outAttrs("i8q", 0.1, 3), {&x});
  // 0.5 -> 1 (+3), -0.5 -> -1 (+3), 1.5 -> 2, -1.5 -> -2, saturation, zero, NaN -> offset.
  std::vector<int32_t> expected = {4, 2, 5, 1, 127, -128, 3, 3};
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(at(q, int64_t(i)), expected[i]) << i;
  Tensor u = run(OpKind::Quantize, outAttrs("u8q", 0.1, 128), {&x});
  EXPECT_EQ(at(u, 4), 255);
  EXPECT_EQ(at(u, 5), 0);
  Tensor d = run(OpKind::Dequantize, {}, {&q});
  EXPECT_FLOAT_EQ(d.as<float>()[0], 0.1f);
  EXPECT_FLOAT_EQ(d.as<float>()[5], 0.1f * -131);
  Tensor b = run(OpKind::Quantize, outAttrs("i32q", 0.001, 0), {&x});
  EXPECT_EQ(at(b, 4), 100000);
  EXPECT_EQ(at(b, 1), -50);
}

TEST(QuantKernelsTest, RequantizeMatchesModel) {
  std::vector<int32_t> v = randomInts(200, -128, 127, 1);
  v[0] = -128, v[1] = 127;
  Tensor x = q8(ElemKind::Int8Q, {200}, 0.07f, -5, v);
  for (auto [scale, offset] :
       std::vector<std::pair<double, int>>{{0.07, -5}, {0.035, 10}, {0.5, 0}, {0.0001, -128}}) {
    Tensor y = run(OpKind::Requantize, outAttrs("i8q", scale, offset), {&x});
    FixedPointMultiplier m = quant::quantizeMultiplier(double(0.07f) / double(float(scale)));
    for (int i = 0; i < 200; ++i) ASSERT_EQ(at(y, i), specRequantize(v[size_t(i)] + 5, m, offset, -128, 127));
  }
}

/// Independent QuantizedConv: plain loops, 64-bit exact sums, spec requant.
TEST(QuantKernelsTest, QuantizedConvMatchesModel) {
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n = 2, h = 5, w = 6, c = 4, o = 6, kh = 3, kw = 2, group = trial == 2 ? 2 : 1;
    const int64_t cg = c / group;
    const int32_t inZero = trial == 1 ? 0 : -17;
    const float inScale = 0.02f, outScale = trial == 0 ? 0.05f : 0.0013f;
    auto inVals = randomInts(size_t(n * h * w * c), -128, 127, 10 + trial);
    auto fVals = randomInts(size_t(o * kh * kw * cg), -127, 127, 20 + trial);
    auto bVals = randomInts(size_t(o), -3000, 3000, 30 + trial);
    Tensor input = q8(ElemKind::Int8Q, {n, h, w, c}, inScale, inZero, inVals);
    Tensor filter = q8(ElemKind::Int8Q, {o, kh, kw, cg}, 0.01f, 0, fVals);
    Tensor bias = q8(ElemKind::Int32Q, {o}, inScale * 0.01f, 0, bVals);
    std::vector<float> fs = {0.01f, 0.002f, 0.03f, 0.0005f, 0.01f, 0.2f};
    Tensor scales = Tensor::fromValues<float>(ElemKind::F32, {o}, fs);
    Attributes attrs = outAttrs("i8q", outScale, 4);
    attrs.set("strides", std::vector<int64_t>{2, 1});
    attrs.set("pads", std::vector<int64_t>{1, 0, 1, 1});
    attrs.set("dilations", std::vector<int64_t>{1, 2});
    attrs.set("group", group);
    if (trial == 1) attrs.set("clip_min", 0.0);  // fused ReLU
    Tensor out = run(OpKind::QuantizedConv, attrs, {&input, &filter, &bias, &scales});
    const Dims& od = out.type().dims;
    int32_t lo = trial == 1 ? 4 : -128;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < od[1]; ++oy)
        for (int64_t ox = 0; ox < od[2]; ++ox)
          for (int64_t k = 0; k < o; ++k) {
            int64_t acc = bVals[size_t(k)];
            int64_t g = k / (o / group);
            for (int64_t y = 0; y < kh; ++y)
              for (int64_t x = 0; x < kw; ++x) {
                int64_t iy = oy * 2 - 1 + y, ix = ox * 1 - 0 + x * 2;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                for (int64_t ci = 0; ci < cg; ++ci)
                  acc += int64_t(inVals[size_t(((b * h + iy) * w + ix) * c + g * cg + ci)] - inZero) *
                         fVals[size_t(((k * kh + y) * kw + x) * cg + ci)];
              }
            FixedPointMultiplier m =
                quant::quantizeMultiplier(double(inScale) * double(fs[size_t(k)]) / double(outScale));
            int32_t expected = specRequantize(int32_t(acc), m, 4, lo, 127);
            ASSERT_EQ(at(out, ((b * od[1] + oy) * od[2] + ox) * o + k), expected)
                << "trial " << trial << " at " << b << "," << oy << "," << ox << "," << k;
          }
  }
}

TEST(QuantKernelsTest, QuantizedMatMulMatchesModel) {
  const int64_t batch = 2, m = 3, k = 7, n = 5;
  auto a = randomInts(size_t(batch * m * k), 0, 255, 3);
  auto b = randomInts(size_t(k * n), -128, 127, 4);
  auto bias = randomInts(size_t(n), -500, 500, 5);
  Tensor lhs = q8(ElemKind::UInt8Q, {batch, m, k}, 0.1f, 128, a);
  Tensor rhs = q8(ElemKind::Int8Q, {k, n}, 0.05f, 9, b);  // activation rhs: non-zero offset
  Tensor tb = q8(ElemKind::Int32Q, {n}, 0.005f, 0, bias);
  std::vector<float> rs(size_t(n), 0.05f);
  Tensor scales = Tensor::fromValues<float>(ElemKind::F32, {n}, rs);
  Attributes attrs = outAttrs("i8q", 0.7, -3);
  attrs.set("clip_max", 6.0);
  Tensor out = run(OpKind::QuantizedMatMul, attrs, {&lhs, &rhs, &tb, &scales});
  ASSERT_EQ(out.type().dims, (Dims{batch, m, n}));
  FixedPointMultiplier mult = quant::quantizeMultiplier(double(0.1f) * double(0.05f) / double(0.7f));
  int32_t hi = std::min<int32_t>(127, int32_t(std::floor(6.0 / double(0.7f) + 0.5)) - 3);
  for (int64_t bb = 0; bb < batch; ++bb)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = bias[size_t(j)];
        for (int64_t p = 0; p < k; ++p)
          acc += int64_t(a[size_t((bb * m + i) * k + p)] - 128) * (b[size_t(p * n + j)] - 9);
        ASSERT_EQ(at(out, (bb * m + i) * n + j), specRequantize(int32_t(acc), mult, -3, -128, hi));
      }
}

TEST(QuantKernelsTest, QuantizedAddMatchesModel) {
  auto a = randomInts(24, -128, 127, 6);
  auto b = randomInts(4, -128, 127, 7);
  a[0] = 127, b[0] = 127;  // saturation
  Tensor lhs = q8(ElemKind::Int8Q, {2, 3, 4}, 0.1f, -10, a);
  Tensor rhs = q8(ElemKind::Int8Q, {4}, 0.03f, 5, b);  // broadcast, mismatched scales
  Tensor out = run(OpKind::QuantizedAdd, outAttrs("i8q", 0.08, 2), {&lhs, &rhs});
  const double twiceMax = 2.0 * double(0.1f);
  FixedPointMultiplier ma = quant::quantizeMultiplier(double(0.1f) / twiceMax);
  FixedPointMultiplier mb = quant::quantizeMultiplier(double(0.03f) / twiceMax);
  FixedPointMultiplier mo = quant::quantizeMultiplier(twiceMax / (double(1 << 20) * double(0.08f)));
  for (int64_t i = 0; i < 24; ++i) {
    int32_t ra = specRequantize((a[size_t(i)] + 10) * (1 << 20), ma, 0, INT32_MIN, INT32_MAX);
    int32_t rb = specRequantize((b[size_t(i % 4)] - 5) * (1 << 20), mb, 0, INT32_MIN, INT32_MAX);
    ASSERT_EQ(at(out, i), specRequantize(ra + rb, mo, 2, -128, 127)) << i;
  }
  // Same scales: the sum of reals, rounded once. 0.1*(3) + 0.1*(4) = 0.7 -> 7 at scale 0.1.
  Tensor x = q8(ElemKind::Int8Q, {1}, 0.1f, 0, {3}), y = q8(ElemKind::Int8Q, {1}, 0.1f, 0, {4});
  EXPECT_EQ(at(run(OpKind::QuantizedAdd, outAttrs("i8q", 0.1, 0), {&x, &y}), 0), 7);
}

TEST(QuantKernelsTest, QuantizedAvgPoolRoundsOnce) {
  // 2x2 window of one channel: sum of (q - zp).
  Tensor in = q8(ElemKind::Int8Q, {1, 2, 2, 1}, 0.5f, 1, {2, 2, 2, 3});  // centred 1,1,1,2: mean 1.25
  Attributes attrs = outAttrs("i8q", 0.5, 1);
  attrs.set("kernel", std::vector<int64_t>{2, 2});
  attrs.set("strides", std::vector<int64_t>{1, 1});
  attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  attrs.set("ceil_mode", int64_t(0));
  attrs.set("count_include_pad", int64_t(0));
  EXPECT_EQ(at(run(OpKind::QuantizedAvgPool, attrs, {&in}), 0), 2);       // round(1.25) + 1
  Tensor tie = q8(ElemKind::Int8Q, {1, 2, 2, 1}, 0.5f, 1, {0, 0, 0, 1});  // -1,-1,-1,0: -0.75 -> -1
  EXPECT_EQ(at(run(OpKind::QuantizedAvgPool, attrs, {&tie}), 0), 0);
  Tensor half = q8(ElemKind::Int8Q, {1, 2, 2, 1}, 0.5f, 1, {-1, -1, 1, 1});  // -2,-2,0,0: -1 exactly
  EXPECT_EQ(at(run(OpKind::QuantizedAvgPool, attrs, {&half}), 0), 0);
  Tensor half2 = q8(ElemKind::Int8Q, {1, 2, 2, 1}, 0.5f, 1, {-1, 1, 1, 1});  // -2,0,0,0: -0.5 -> -1
  EXPECT_EQ(at(run(OpKind::QuantizedAvgPool, attrs, {&half2}), 0), 0);
  // Padding: count excludes the pads (3x3 window, padded by 1, corner sees 4 taps).
  auto v = randomInts(9, -128, 127, 8);
  Tensor big = q8(ElemKind::Int8Q, {1, 3, 3, 1}, 0.1f, -3, v);
  attrs.set("kernel", std::vector<int64_t>{3, 3});
  attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  attrs.set("scale", 0.3);
  Tensor out = run(OpKind::QuantizedAvgPool, attrs, {&big});
  int32_t sum = (v[0] + 3) + (v[1] + 3) + (v[3] + 3) + (v[4] + 3);
  FixedPointMultiplier m = quant::quantizeMultiplier(double(0.1f) / double(0.3f) / 4.0);
  EXPECT_EQ(at(out, 0), specRequantize(sum, m, 1, -128, 127));
}

TEST(QuantKernelsTest, LookupIndexesFromTheKindMinimum) {
  std::vector<int32_t> table(256);
  for (int i = 0; i < 256; ++i) table[size_t(i)] = 127 - i;
  Tensor t = q8(ElemKind::Int8Q, {256}, 0.5f, 0, table);
  Tensor in = q8(ElemKind::Int8Q, {3}, 1.0f, 0, {-128, 0, 127});
  Tensor out = run(OpKind::Lookup, {}, {&in, &t});
  EXPECT_EQ(at(out, 0), 127);
  EXPECT_EQ(at(out, 1), -1);
  EXPECT_EQ(at(out, 2), -128);
  EXPECT_EQ(out.type().scale, 0.5f);
  Tensor u = q8(ElemKind::UInt8Q, {2}, 1.0f, 0, {0, 255});
  Tensor out2 = run(OpKind::Lookup, {}, {&u, &t});
  EXPECT_EQ(at(out2, 0), 127);
  EXPECT_EQ(at(out2, 1), -128);
  // A sigmoid table built by the spec's rule.
  int32_t sig[256];
  quant::buildLookupTable([](float x) { return 1.0 / (1.0 + std::exp(-double(x))); }, 0.1f, 0,
                          quant::int8Range(), 1.0f / 256, -128, quant::int8Range(), sig);
  EXPECT_EQ(sig[128], 0);    // sigmoid(0) = 0.5 -> 128 - 128
  EXPECT_EQ(sig[255], 127);  // sigmoid(12.7) saturates
  EXPECT_EQ(sig[0], -128);   // sigmoid(-12.8) ~ 0
}

TEST(QuantKernelsTest, TypeRulesRejectBadQuantization) {
  Type f(ElemKind::F32, {4});
  EXPECT_FALSE(inferResultTypes(OpKind::Quantize, std::vector<Type>{f}, outAttrs("i8q", 0.0, 0)));
  EXPECT_FALSE(inferResultTypes(OpKind::Quantize, std::vector<Type>{f}, outAttrs("i8q", 0.1, 200)));
  EXPECT_FALSE(inferResultTypes(OpKind::Quantize, std::vector<Type>{f}, outAttrs("f32", 0.1, 0)));
  EXPECT_TRUE(inferResultTypes(OpKind::Quantize, std::vector<Type>{f}, outAttrs("u8q", 0.1, 200)));
  EXPECT_FALSE(inferResultTypes(OpKind::Dequantize, std::vector<Type>{f}, {}));
  Type q(ElemKind::Int8Q, {4}, 0.1f, 0);
  Type badTable(ElemKind::Int8Q, {255}, 0.1f, 0);
  EXPECT_FALSE(inferResultTypes(OpKind::Lookup, std::vector<Type>{q, badTable}, {}));
}

}  // namespace
}  // namespace ember
