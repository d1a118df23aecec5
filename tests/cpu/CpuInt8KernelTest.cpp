// The cpu backend's vectorised int8 epilogue against QuantMath.h's scalar
// requantize, on random and extreme accumulators, multipliers and shifts.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/KernelInt8.h"
#include "ember/QuantMath.h"

namespace {

TEST(CpuInt8Epilogue, MatchesQuantMathRequantize) {
  if (!ember::cpu::hostHasVnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 40);
    std::vector<int32_t> acc(n), correction(n), multiplier(n), shift(n);
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t pick = uint32_t(rng() % 4);
      acc[j] = pick == 0 ? INT32_MIN : pick == 1 ? INT32_MAX : int32_t(uint32_t(rng()));
      correction[j] = int32_t(uint32_t(rng())) >> int(rng() % 32);
      // Every multiplier quantizeMultiplier can give, shifts across [-31, 30].
      const double real = std::ldexp(0.5 + double(rng() % 1000000) / 2e6, int(rng() % 61) - 30);
      const ember::quant::FixedPointMultiplier m = ember::quant::quantizeMultiplier(real);
      multiplier[j] = m.multiplier;
      shift[j] = m.shift;
    }
    const bool isSigned = rng() % 2;
    const int32_t zero = isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256);
    const ember::quant::QuantRange range = isSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
    std::vector<uint8_t> got(n);
    ember::cpu::int8RequantizeAvx512(acc.data(), correction.data(), multiplier.data(), shift.data(), n, zero,
                                     range.lo, range.hi, got.data());
    for (int64_t j = 0; j < n; ++j) {
      const int32_t total = int32_t(uint32_t(acc[j]) + uint32_t(correction[j]));
      const int32_t want =
          ember::quant::requantize(total, {multiplier[j], shift[j]}, zero, range.lo, range.hi);
      ASSERT_EQ(got[j], uint8_t(want)) << "trial " << trial << " column " << j << " total " << total
                                       << " multiplier " << multiplier[j] << " shift " << shift[j];
    }
  }
}

}  // namespace
