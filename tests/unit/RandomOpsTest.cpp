// The seeded Random primitive: reproducible bytes per seed, and sample
// statistics against the distributions' theoretical moments (5 sigma bounds
// over 10^5 samples), Bernoulli p = 0 and 1 exact.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ember/Kernels.h"

namespace ember {
namespace {

constexpr int64_t kSamples = 100000;

Attributes randomAttrs(const std::string& distribution, double seed, double a = 0, double b = 1,
                       const std::string& to = "f32") {
  return Attributes{{"distribution", distribution},
                    {"seed", seed},
                    {"low", a},
                    {"high", b},
                    {"mean", a},
                    {"scale", b},
                    {"to", to}};
}

Tensor draw(const Attributes& attrs, const Tensor& input) {
  std::vector<Type> inputTypes{input.type()};
  auto types = inferResultTypes(OpKind::Random, inputTypes, attrs);
  EXPECT_TRUE(bool(types)) << types.error().message();
  Tensor out((*types)[0]);
  std::vector<ConstTensorRef> in{input.ref()};
  std::vector<TensorRef> outs{out.ref()};
  Error e = runKernel(OpKind::Random, attrs, in, outs);
  EXPECT_FALSE(e) << e.message();
  return out;
}

bool accepted(ElemKind input, const Attributes& attrs) {
  std::vector<Type> types{Type(input, {2})};
  return bool(inferResultTypes(OpKind::Random, types, attrs));
}

Tensor shapeOf(int64_t n) { return Tensor(Type(ElemKind::Bool, {n})); }

Tensor probabilities(int64_t n, float p) {
  Tensor t(Type(ElemKind::F32, {n}));
  for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = p;
  return t;
}

struct Moments {
  double mean = 0, variance = 0;
};

Moments momentsOf(const Tensor& t) {
  const int64_t n = t.type().numElements();
  Moments m;
  for (int64_t i = 0; i < n; ++i) m.mean += t.elementAsDouble(i);
  m.mean /= double(n);
  for (int64_t i = 0; i < n; ++i) m.variance += std::pow(t.elementAsDouble(i) - m.mean, 2);
  m.variance /= double(n - 1);
  return m;
}

TEST(RandomOps, SameSeedSameBytesDifferentSeedDifferentBytes) {
  Tensor a = draw(randomAttrs("uniform", 3.0), shapeOf(1000));
  Tensor b = draw(randomAttrs("uniform", 3.0), shapeOf(1000));
  Tensor c = draw(randomAttrs("uniform", 4.0), shapeOf(1000));
  EXPECT_TRUE(a.bitwiseEqual(b));
  EXPECT_FALSE(a.bitwiseEqual(c));
  EXPECT_TRUE(draw(randomAttrs("normal", 0.0), shapeOf(100))
                  .bitwiseEqual(draw(randomAttrs("normal", 0.0), shapeOf(100))));
}

TEST(RandomOps, UniformStaysInRangeWithTheoreticalMoments) {
  const double low = -2, high = 3;
  Tensor t = draw(randomAttrs("uniform", 1.0, low, high), shapeOf(kSamples));
  for (int64_t i = 0; i < kSamples; ++i) {
    ASSERT_GE(t.as<float>()[i], low);
    ASSERT_LT(t.as<float>()[i], high);
  }
  const double width = high - low, variance = width * width / 12;
  // Var of the sample variance for a uniform: (mu4 - sigma^4) / n, mu4 = width^4 / 80.
  const double varianceSigma = std::sqrt((std::pow(width, 4) / 80 - variance * variance) / kSamples);
  Moments m = momentsOf(t);
  EXPECT_NEAR(m.mean, (low + high) / 2, 5 * std::sqrt(variance / kSamples));
  EXPECT_NEAR(m.variance, variance, 5 * varianceSigma);
}

TEST(RandomOps, NormalHasTheoreticalMeanAndDeviation) {
  const double mean = 1.5, scale = 2;
  Tensor t = draw(randomAttrs("normal", 7.0, mean, scale, "f64"), shapeOf(kSamples));
  EXPECT_EQ(t.type().kind, ElemKind::F64);
  Moments m = momentsOf(t);
  const double variance = scale * scale;
  EXPECT_NEAR(m.mean, mean, 5 * scale / std::sqrt(double(kSamples)));
  // Var of the sample variance for a normal: 2 sigma^4 / (n - 1).
  EXPECT_NEAR(m.variance, variance, 5 * std::sqrt(2 * variance * variance / (kSamples - 1)));
}

TEST(RandomOps, BernoulliExactAtZeroAndOneAndFrequencyAtPointThree) {
  Tensor zeros = draw(randomAttrs("bernoulli", 2.0, 0, 1, "i32"), probabilities(1000, 0));
  Tensor ones = draw(randomAttrs("bernoulli", 2.0, 0, 1, "i32"), probabilities(1000, 1));
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(zeros.as<int32_t>()[i], 0);
    ASSERT_EQ(ones.as<int32_t>()[i], 1);
  }
  const double p = 0.3;
  Moments m = momentsOf(draw(randomAttrs("bernoulli", 5.0, 0, 1, "f32"), probabilities(kSamples, float(p))));
  EXPECT_NEAR(m.mean, p, 5 * std::sqrt(p * (1 - p) / kSamples));
}

TEST(RandomOps, TypeRuleRejectsBadDistributionAndKinds) {
  EXPECT_FALSE(accepted(ElemKind::F32, randomAttrs("poisson", 0)));
  EXPECT_FALSE(accepted(ElemKind::F32, randomAttrs("uniform", 0, 0, 1, "i32")));
  EXPECT_FALSE(accepted(ElemKind::I32, randomAttrs("bernoulli", 0)));
  EXPECT_TRUE(accepted(ElemKind::I32, randomAttrs("uniform", 0)));
}

}  // namespace
}  // namespace ember
