// The one arithmetic specification of Ember's integer quantized math
// (docs/quantization.md). The reference kernels, the CPU backend, the NPU
// simulator and the RTL's golden models all call these functions, so their
// results agree bit for bit.
#pragma once

#include <cassert>
#include <cmath>
#include <cstdint>

namespace ember::quant {

/// A real multiplier M > 0 expressed as multiplier * 2^-(31 + shift), with
/// multiplier in [2^30, 2^31) (Q31) and shift in [-31, 30].
struct FixedPointMultiplier {
  int32_t multiplier = 0;
  int32_t shift = 0;
};

/// Decomposes a positive real multiplier (e.g. in_scale * w_scale / out_scale).
/// Returns {0, 0} for a multiplier below 2^-62 (everything rounds to zero).
inline FixedPointMultiplier quantizeMultiplier(double real) {
  assert(real >= 0 && std::isfinite(real));
  if (real < 1.0 / double(int64_t(1) << 62)) return {0, 0};
  int exponent = 0;
  double mantissa = std::frexp(real, &exponent);  // real = mantissa * 2^exponent, mantissa in [0.5, 1)
  auto q = static_cast<int64_t>(std::llround(mantissa * double(int64_t(1) << 31)));
  if (q == (int64_t(1) << 31)) {  // rounding carried into the next power of two
    q /= 2;
    ++exponent;
  }
  int32_t shift = -exponent;  // real = q * 2^-31 * 2^exponent = q * 2^-(31 + shift)
  if (shift > 30) {           // very small: fold the excess into the multiplier
    q >>= (shift - 30);
    shift = 30;
  }
  if (shift < -31) shift = -31;  // beyond 2^31: saturates anyway
  return {static_cast<int32_t>(q), shift};
}

/// round(value / 2^bits), ties away from zero, for bits in [1, 62].
inline int64_t roundingShiftRight(int64_t value, int bits) {
  assert(bits >= 1 && bits <= 62);
  const int64_t half = int64_t(1) << (bits - 1);
  if (value >= 0) return (value + half) >> bits;
  return -((-value + half) >> bits);
}

/// Scales an int32 accumulator by the fixed-point multiplier: one rounding,
/// ties away from zero, computed exactly in 64 bits.
inline int64_t applyMultiplier(int32_t acc, FixedPointMultiplier m) {
  const int64_t product = int64_t(acc) * int64_t(m.multiplier);  // |product| < 2^62
  const int totalShift = 31 + m.shift;
  if (totalShift <= 0) return product << -totalShift;  // not reached for shift >= -31
  return roundingShiftRight(product, totalShift);
}

inline int32_t clampTo(int64_t v, int32_t lo, int32_t hi) {
  return static_cast<int32_t>(v < lo ? lo : v > hi ? hi : v);
}

/// Requantizes an int32 accumulator to an 8-bit value:
/// clamp(zeroPoint + round(acc * M), lo, hi). ReLU and clip are fused by
/// narrowing [lo, hi] (ReLU: lo = max(lo, zeroPoint)).
inline int32_t requantize(int32_t acc, FixedPointMultiplier m, int32_t zeroPoint, int32_t lo, int32_t hi) {
  return clampTo(applyMultiplier(acc, m) + zeroPoint, lo, hi);
}

/// Quantizes a real value: clamp(round_half_away(x / scale) + zeroPoint, lo, hi).
inline int32_t quantizeValue(float x, float scale, int32_t zeroPoint, int32_t lo, int32_t hi) {
  const double q = std::round(double(x) / double(scale));  // std::round: ties away from zero
  if (std::isnan(q)) return clampTo(zeroPoint, lo, hi);
  const double shifted = q + zeroPoint;
  return shifted <= lo ? lo : shifted >= hi ? hi : static_cast<int32_t>(shifted);
}

inline float dequantizeValue(int32_t q, float scale, int32_t zeroPoint) { return scale * float(q - zeroPoint); }

}  // namespace ember::quant
