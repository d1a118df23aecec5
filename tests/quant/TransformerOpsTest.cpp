// The integer-only transformer ops (QuantizedSoftmax, QuantizedLayerNorm,
// QuantizedGelu; QuantMath.h after I-BERT) against float math computed here
// in double from the same dequantized inputs. Each test prints the op's max
// and mean absolute error against f32 over random inputs (the per-op table
// of docs/quantization.md 2.11) and asserts the bound that section states:
// one output step plus the published approximation error of the polynomial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "ember/Kernels.h"
#include "ember/QuantMath.h"
#include "ember/Tensor.h"

namespace {

using namespace ember;

struct ErrorStats {
  double max = 0, sum = 0, idealMax = 0;
  int64_t count = 0;
  /// `got` from the integer op, `exact` the f32 function, `ideal` the f32
  /// result rounded to the output's grid (the best any 8-bit output can do).
  void add(double got, double exact, double ideal) {
    max = std::max(max, std::fabs(got - exact));
    idealMax = std::max(idealMax, std::fabs(ideal - exact));
    sum += std::fabs(got - exact);
    ++count;
  }
  double mean() const { return count ? sum / double(count) : 0; }
  void print(const char* op, const char* what, double outScale) const {
    std::printf(
        "[ op error ] %s %s: max abs error %.5f, mean abs error %.5f (output step %.5f; f32 rounded to "
        "the output grid: max %.5f) over %lld values\n",
        op, what, max, mean(), outScale, idealMax, static_cast<long long>(count));
  }
};

Tensor int8Tensor(const Dims& dims, float scale, int32_t offset, const std::vector<int32_t>& codes) {
  Tensor t(Type(ElemKind::Int8Q, dims, scale, offset));
  for (size_t i = 0; i < codes.size(); ++i) t.as<int8_t>()[i] = int8_t(codes[i]);
  return t;
}

Tensor run(OpKind kind, const Attributes& attrs, const std::vector<const Tensor*>& inputs,
           const Type& resultType) {
  std::vector<ConstTensorRef> refs;
  for (const Tensor* t : inputs) refs.push_back(t->ref());
  Tensor out(resultType);
  std::vector<TensorRef> outs = {out.ref()};
  Error e = runKernel(kind, attrs, refs, outs);
  EXPECT_FALSE(e) << e.message();
  return out;
}

Attributes outputAttrs(float scale, int32_t offset) {
  return Attributes{{"kind", std::string("i8q")}, {"scale", double(scale)}, {"offset", int64_t(offset)}};
}

double dq(int32_t q, float s, int32_t z) { return double(quant::dequantizeValue(q, s, z)); }
double onGrid(double y, float s, int32_t z) {
  return dq(quant::quantizeValue(float(y), s, z, -128, 127), s, z);
}

TEST(TransformerMath, IntegerSqrtIsTheFloorOfTheRoot) {
  for (int64_t v = 0; v < 200000; ++v) {
    const int64_t r = quant::integerSqrt(v);
    ASSERT_TRUE(r * r <= v && (r + 1) * (r + 1) > v) << v;
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t v = int64_t(rng() >> 2);  // up to 2^62
    const int64_t r = quant::integerSqrt(v);
    ASSERT_TRUE(r * r <= v && (r + 1) * (r + 1) > v) << v;
  }
}

TEST(TransformerMath, IntegerExpFollowsExpWithinThePolynomialsError) {
  // I-BERT's polynomial is within 0.31% of exp on (-ln2, 0]; range reduction keeps that relative error.
  double worst = 0;
  for (int64_t t = 0; t < 16 * quant::kFixedOne; t += 997) {
    const double x = double(t) / double(quant::kFixedOne);
    const double got = double(quant::integerExp(t)) / double(quant::kFixedOne);
    const double error = std::fabs(got - std::exp(-x));
    if (std::exp(-x) >= 1e-3) worst = std::max(worst, error / std::exp(-x));
    ASSERT_LE(error, 0.0032 * std::exp(-x) + 2.0 / double(quant::kFixedOne)) << "x = -" << x;
  }
  std::printf("[ op error ] i-exp: max relative error %.5f where exp >= 1e-3 (x in [-6.9, 0])\n", worst);
}

TEST(TransformerMath, IntegerErfFollowsErfWithinThePolynomialsError) {
  // The clipped polynomial's largest error is at 0+ (L(0+) = 0.0963); GELU multiplies it by x/2.
  for (int64_t t = -4 * quant::kFixedOne; t <= 4 * quant::kFixedOne; t += 331) {
    const double x = double(t) / double(quant::kFixedOne);
    const double got = double(quant::integerErf(t)) / double(quant::kFixedOne);
    ASSERT_LE(std::fabs(got - std::erf(x)), 0.0965) << "x = " << x;
  }
}

TEST(TransformerOps, SoftmaxMatchesFloatSoftmax) {
  std::mt19937 rng(11);
  const float outScale = 1.0f / 255.0f;
  const int32_t outZero = -128;
  for (int64_t length : {16, 64, 197, 512}) {
    ErrorStats stats;
    for (float range : {4.0f, 8.0f, 16.0f}) {
      const float inScale = 2 * range / 255.0f;
      const int64_t rows = 2048 / length + 4;
      std::uniform_int_distribution<int32_t> code(-128, 127);
      std::vector<int32_t> codes(size_t(rows * length));
      for (int32_t& c : codes) c = code(rng);
      Tensor in = int8Tensor({rows, length}, inScale, 0, codes);
      Tensor keep(Type(ElemKind::Bool, {}));
      keep.as<bool>()[0] = true;
      Attributes attrs = outputAttrs(outScale, outZero);
      attrs.set("axis", int64_t(-1));
      Tensor out = run(OpKind::QuantizedSoftmax, attrs, {&in, &keep},
                       Type(ElemKind::Int8Q, {rows, length}, outScale, outZero));
      for (int64_t r = 0; r < rows; ++r) {
        double maxX = -INFINITY, sum = 0;
        for (int64_t k = 0; k < length; ++k)
          maxX = std::max(maxX, dq(codes[size_t(r * length + k)], inScale, 0));
        for (int64_t k = 0; k < length; ++k)
          sum += std::exp(dq(codes[size_t(r * length + k)], inScale, 0) - maxX);
        for (int64_t k = 0; k < length; ++k) {
          const double exact = std::exp(dq(codes[size_t(r * length + k)], inScale, 0) - maxX) / sum;
          stats.add(dq(out.as<int8_t>()[r * length + k], outScale, outZero), exact,
                    onGrid(exact, outScale, outZero));
        }
      }
    }
    stats.print("QuantizedSoftmax", ("length " + std::to_string(length)).c_str(), outScale);
    // One output step (the requantization rounds once more after the Q24
    // probability) plus the polynomial's 0.31% of p <= 1.
    EXPECT_LE(stats.max, outScale + 0.0032) << "length " << length;
  }
}

TEST(TransformerOps, MaskedSoftmaxGivesMaskedPositionsZero) {
  const int64_t n = 8;
  const float inScale = 0.05f, outScale = 1.0f / 255.0f;
  std::vector<int32_t> codes(size_t(n * n));
  std::mt19937 rng(3);
  for (int32_t& c : codes) c = int32_t(rng() % 256) - 128;
  Tensor in = int8Tensor({1, n, n}, inScale, 0, codes);
  Tensor keep(Type(ElemKind::Bool, {n, n}));  // causal: row i keeps columns 0..i
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) keep.as<bool>()[i * n + j] = j <= i;
  Attributes attrs = outputAttrs(outScale, -128);
  attrs.set("axis", int64_t(2));
  Tensor out =
      run(OpKind::QuantizedSoftmax, attrs, {&in, &keep}, Type(ElemKind::Int8Q, {1, n, n}, outScale, -128));
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0, maxX = -INFINITY;
    for (int64_t j = 0; j <= i; ++j) maxX = std::max(maxX, dq(codes[size_t(i * n + j)], inScale, 0));
    for (int64_t j = 0; j <= i; ++j) sum += std::exp(dq(codes[size_t(i * n + j)], inScale, 0) - maxX);
    for (int64_t j = 0; j < n; ++j) {
      const int32_t got = out.as<int8_t>()[i * n + j];
      if (j > i) {
        EXPECT_EQ(got, -128) << "masked (" << i << ", " << j << ")";
      } else {
        const double exact = std::exp(dq(codes[size_t(i * n + j)], inScale, 0) - maxX) / sum;
        EXPECT_NEAR(dq(got, outScale, -128), exact, outScale + 0.0032) << "(" << i << ", " << j << ")";
      }
    }
  }
}

TEST(TransformerOps, GeluMatchesFloatGelu) {
  for (float range : {3.0f, 6.0f, 12.0f}) {
    ErrorStats erfStats, tanhStats;
    const float inScale = 2 * range / 255.0f;
    const float outScale = (range + 0.17f) / 255.0f;
    const int32_t outZero = -128 + int32_t(std::lround(0.17 / outScale));  // -0.17 is the lowest code
    std::vector<int32_t> codes(256);
    for (int32_t i = 0; i < 256; ++i) codes[size_t(i)] = i - 128;
    Tensor in = int8Tensor({256}, inScale, 0, codes);
    Tensor out = run(OpKind::QuantizedGelu, outputAttrs(outScale, outZero), {&in},
                     Type(ElemKind::Int8Q, {256}, outScale, outZero));
    for (int32_t i = 0; i < 256; ++i) {
      const double x = dq(codes[size_t(i)], inScale, 0);
      const double got = dq(out.as<int8_t>()[i], outScale, outZero);
      const double erfGelu = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      const double tanhGelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      erfStats.add(got, erfGelu, onGrid(erfGelu, outScale, outZero));
      tanhStats.add(got, tanhGelu, onGrid(tanhGelu, outScale, outZero));
    }
    const std::string what =
        "inputs in [-" + std::to_string(int(range)) + ", " + std::to_string(int(range)) + "]";
    erfStats.print("QuantizedGelu vs erf GELU", what.c_str(), outScale);
    tanhStats.print("QuantizedGelu vs tanh GELU", what.c_str(), outScale);
    // Half an output step of rounding plus i-GELU's 0.0182 (and 0.0178 from the tanh form).
    EXPECT_LE(erfStats.max, outScale / 2 + 0.0182 + 1e-4);
    EXPECT_LE(tanhStats.max, outScale / 2 + 0.0182 + 0.0178 + 1e-4);
  }
}

TEST(TransformerOps, LayerNormMatchesFloatLayerNorm) {
  std::mt19937 rng(5);
  const float outScale = 12.0f / 255.0f;
  for (int64_t n : {16, 64, 768}) {
    ErrorStats stats;
    const int64_t rows = 32;
    std::vector<int32_t> codes(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
      // Rows of varied mean and spread, a few with a tiny spread (epsilon matters there).
      std::normal_distribution<double> row(
          std::uniform_real_distribution<double>(-40, 40)(rng),
          r % 8 == 0 ? 0.7 : std::uniform_real_distribution<double>(3, 50)(rng));
      for (int64_t i = 0; i < n; ++i)
        codes[size_t(r * n + i)] = int32_t(std::clamp<double>(std::round(row(rng)), -128, 127));
    }
    const float inScale = 0.05f;
    const double epsilon = 1e-5;
    Tensor in = int8Tensor({rows, n}, inScale, 3, codes);
    Tensor gamma(Type(ElemKind::F32, {n})), beta(Type(ElemKind::F32, {n}));
    std::uniform_real_distribution<float> g(-1.5f, 1.5f), b(-0.5f, 0.5f);
    for (int64_t i = 0; i < n; ++i) gamma.as<float>()[i] = g(rng), beta.as<float>()[i] = b(rng);
    Attributes attrs = outputAttrs(outScale, 0);
    attrs.set("axis", int64_t(1));
    attrs.set("epsilon", epsilon);
    Tensor out = run(OpKind::QuantizedLayerNorm, attrs, {&in, &gamma, &beta},
                     Type(ElemKind::Int8Q, {rows, n}, outScale, 0));
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += dq(codes[size_t(r * n + i)], inScale, 3) / double(n);
      for (int64_t i = 0; i < n; ++i)
        var += std::pow(dq(codes[size_t(r * n + i)], inScale, 3) - mean, 2) / double(n);
      for (int64_t i = 0; i < n; ++i) {
        const double norm = (dq(codes[size_t(r * n + i)], inScale, 3) - mean) / std::sqrt(var + epsilon);
        const double exact = std::clamp(double(gamma.as<float>()[i]) * norm + double(beta.as<float>()[i]),
                                        -128.0 * outScale, 127.0 * outScale);
        stats.add(dq(out.as<int8_t>()[r * n + i], outScale, 0), exact, onGrid(exact, outScale, 0));
      }
    }
    stats.print("QuantizedLayerNorm", ("row of " + std::to_string(n)).c_str(), outScale);
    // Half a step of rounding, and the floor square root and Q16 normalisation
    // (relative 2^-10 at the smallest spreads here) times |gamma norm| <= 6.
    EXPECT_LE(stats.max, outScale / 2 + 0.01) << "n " << n;
  }
}

}  // namespace
