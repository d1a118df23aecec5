// The weight quantizer's fast step against quant::quantizeValue, the one
// implementation of the rounding rule (docs/quantization.md): ties, the
// saturation edges, infinities, NaN and random values over many scales.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/quantization/WeightQuantization.h"
#include "ember/QuantMath.h"

namespace ember {
namespace {

void expectSame(float x, float scale) {
  EXPECT_EQ(int(quant::quantizeWeight(x, scale)), quant::quantizeValue(x, scale, 0, -127, 127))
      << "x = " << x << ", scale = " << scale;
}

TEST(WeightQuantization, EdgesMatchQuantizeValue) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float scale : {1.0f, 0.5f, 0.1f, 3e-3f, 1e-30f, 1e-45f, 7.0f})
    for (float x : {0.0f,    -0.0f,   0.5f,   -0.5f,   1.5f,
                    -1.5f,   2.5f,    -2.5f,  126.5f,  -126.5f,
                    127.0f,  -127.0f, 127.5f, -127.5f, 128.0f,
                    -128.0f, 199.5f,  200.5f, 1e6f,    -1e6f,
                    3e38f,   -3e38f,  inf,    -inf,    std::numeric_limits<float>::quiet_NaN(),
                    1e-45f,  -1e-45f}) {
      expectSame(x, scale);
      expectSame(x * scale, scale);  // the same multiples of the step
    }
  // Exact ties at every half step of the range.
  for (int twice = -260; twice <= 260; ++twice) expectSame(float(twice) * 0.5f * 0.25f, 0.25f);
}

TEST(WeightQuantization, RandomValuesMatchQuantizeValue) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::uniform_real_distribution<float> exponent(-12.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    const float scale = std::exp2(exponent(rng));
    expectSame(value(rng), scale);
    expectSame(value(rng) * scale * 127.0f, scale);
  }
}

}  // namespace
}  // namespace ember
