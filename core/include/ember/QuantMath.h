// The one arithmetic specification of Ember's integer quantized math
// (docs/quantization.md). The reference kernels, the CPU backend, the NPU
// simulator and the RTL's golden models all call these functions, so their
// results agree bit for bit.
#pragma once

#include <algorithm>
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

inline float dequantizeValue(int32_t q, float scale, int32_t zeroPoint) {
  return scale * float(q - zeroPoint);
}

// ---- Derived rules (docs/quantization.md). Each is the one implementation
// of its rule; backends compute their parameters with these at compile time.

/// Integer range of an 8-bit quantized kind: int8 [-128, 127], uint8 [0, 255].
struct QuantRange {
  int32_t lo, hi;
};
inline QuantRange int8Range() { return {-128, 127}; }
inline QuantRange uint8Range() { return {0, 255}; }

/// The requantization multiplier of a conv/matmul output channel:
/// M = in_scale * weight_scale / out_scale, evaluated in double from the
/// float scales in exactly this order.
inline FixedPointMultiplier outputMultiplier(float inScale, float weightScale, float outScale) {
  return quantizeMultiplier(double(inScale) * double(weightScale) / double(outScale));
}

/// The multiplier of a rescale (Requantize, concat inputs): M = in / out.
inline FixedPointMultiplier rescaleMultiplier(float inScale, float outScale) {
  return quantizeMultiplier(double(inScale) / double(outScale));
}

/// Requantizes a value to another scale and zero point:
/// clamp(outZero + round((q - inZero) * M), lo, hi).
inline int32_t rescale(int32_t q, int32_t inZero, FixedPointMultiplier m, int32_t outZero, int32_t lo,
                       int32_t hi) {
  return requantize(q - inZero, m, outZero, lo, hi);
}

/// Fused activation: the output range [lo, hi] narrowed by a real clip
/// interval [clipMin, clipMax] (ReLU: clipMin = 0; ReLU6: [0, 6]). Each bound
/// is quantized with quantizeValue, so ReLU's lower bound is exactly the zero
/// point.
inline QuantRange activationRange(QuantRange full, float outScale, int32_t outZero, float clipMin,
                                  float clipMax) {
  QuantRange r = full;
  if (clipMin > -INFINITY) r.lo = std::max(r.lo, quantizeValue(clipMin, outScale, outZero, full.lo, full.hi));
  if (clipMax < INFINITY) r.hi = std::min(r.hi, quantizeValue(clipMax, outScale, outZero, full.lo, full.hi));
  if (r.hi < r.lo) r.hi = r.lo;  // an empty interval clamps everything to lo
  return r;
}

/// Quantized addition with mismatched scales (TFLite's scheme, the NPU's
/// eadd): both operands are brought to a common scale 2 * max(sa, sb) with
/// 2^kAddLeftShift of headroom, added in int32, then requantized.
inline constexpr int kAddLeftShift = 20;
struct AddMultipliers {
  FixedPointMultiplier a, b, out;
};
inline AddMultipliers addMultipliers(float aScale, float bScale, float outScale) {
  const double twiceMax = 2.0 * std::max(double(aScale), double(bScale));
  return {quantizeMultiplier(double(aScale) / twiceMax), quantizeMultiplier(double(bScale) / twiceMax),
          quantizeMultiplier(twiceMax / (double(int64_t(1) << kAddLeftShift) * double(outScale)))};
}
inline int32_t addQuantized(int32_t a, int32_t aZero, int32_t b, int32_t bZero, const AddMultipliers& m,
                            int32_t outZero, int32_t lo, int32_t hi) {
  const int64_t ra = applyMultiplier((a - aZero) * (1 << kAddLeftShift), m.a);
  const int64_t rb = applyMultiplier((b - bZero) * (1 << kAddLeftShift), m.b);
  const int32_t sum = clampTo(ra + rb, INT32_MIN, INT32_MAX);
  return requantize(sum, m.out, outZero, lo, hi);
}

/// Average pooling: the sum of (q - inZero) over the counted taps times
/// M = (in_scale / out_scale) / count, requantized once.
inline FixedPointMultiplier averageMultiplier(float inScale, float outScale, int64_t count) {
  return quantizeMultiplier(double(inScale) / double(outScale) / double(count));
}

/// A 256-entry lookup table for a unary function f (sigmoid, tanh, hardswish,
/// GELU, ...): entry i holds the output of input code q = inRange.lo + i,
/// quantizeValue(f(dequantizeValue(q)), ...). f is evaluated once, at compile
/// time, and the table is part of the model, so every backend indexes the
/// same bytes.
template <typename F>
inline void buildLookupTable(F&& f, float inScale, int32_t inZero, QuantRange inRange, float outScale,
                             int32_t outZero, QuantRange outRange, int32_t* table256) {
  for (int32_t i = 0; i < 256; ++i) {
    const float x = dequantizeValue(inRange.lo + i, inScale, inZero);
    table256[i] = quantizeValue(float(f(x)), outScale, outZero, outRange.lo, outRange.hi);
  }
}

/// Quantizes a bias in units of inScale * weightScale (computed in double),
/// saturating to int32. Done once, when the graph is converted.
inline int32_t quantizeBias(float bias, float inScale, float weightScale) {
  const double q = std::round(double(bias) / (double(inScale) * double(weightScale)));
  if (std::isnan(q)) return 0;
  return q <= double(INT32_MIN) ? INT32_MIN : q >= double(INT32_MAX) ? INT32_MAX : static_cast<int32_t>(q);
}

}  // namespace ember::quant
