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

// ---- Integer-only transformer arithmetic (docs/quantization.md 2.11) --------
// Softmax, GELU and LayerNorm after I-BERT (S. Kim, A. Gholami, Z. Yao,
// M. W. Mahoney, K. Keutzer, "I-BERT: Integer-only BERT Quantization",
// ICML 2021): exp by range reduction over ln2 and a second-order polynomial,
// erf by a clipped second-order polynomial, LayerNorm with an integer square
// root by Newton iteration. Inputs are 8-bit codes; each op first maps them to
// a fixed-point value with kTransformerFracBits fraction bits through a
// fixed-point multiplier, so the polynomials see a fine grid whatever the
// input scale. Every parameter below is derived from float scales once, at
// compile time; the per-element arithmetic is int32/int64 adds, multiplies and
// shifts plus one integer division per row (the reciprocal).

/// Fraction bits of the fixed-point domain of i-exp and i-erf (Q20).
inline constexpr int kTransformerFracBits = 20;
inline constexpr int64_t kFixedOne = int64_t(1) << kTransformerFracBits;
/// I-BERT's polynomials in Q20: exp(p) ~ 0.3585 (p + 1.353)^2 + 0.344 on
/// (-ln2, 0]; erf(x) ~ sgn(x) (1 - 0.2888 (min(|x|, 1.769) - 1.769)^2).
inline constexpr int64_t kLn2Q = 726817;        // round(ln2 * 2^20)
inline constexpr int64_t kExpPolyAQ = 375914;   // round(0.3585 * 2^20)
inline constexpr int64_t kExpPolyBQ = 1418723;  // round(1.353 * 2^20)
inline constexpr int64_t kExpPolyCQ = 360710;   // round(0.344 * 2^20)
inline constexpr int64_t kErfPolyAQ = 302829;   // round(0.2888 * 2^20), applied negated
inline constexpr int64_t kErfPolyBQ = 1854931;  // round(1.769 * 2^20)

/// exp(-t / 2^20) in Q20 for t >= 0 in Q20 (I-BERT's i-exp): t = z ln2 + r
/// with r in [0, ln2), exp(-r) by the polynomial, then a rounding right shift
/// by z. The polynomial gives exp(0) = 1.0003 (1048891 in Q20).
inline int64_t integerExp(int64_t t) {
  assert(t >= 0);
  const int64_t z = t / kLn2Q;
  const int64_t u = kExpPolyBQ - (t - z * kLn2Q);  // (p + 1.353) in Q20, p = -r
  const int64_t poly =
      roundingShiftRight(kExpPolyAQ * roundingShiftRight(u * u, kTransformerFracBits), kTransformerFracBits) +
      kExpPolyCQ;
  if (z == 0) return poly;
  return z > 40 ? 0 : roundingShiftRight(poly, int(z));
}

/// erf(t / 2^20) in Q20 (I-BERT's i-erf): sgn(t) (1 - 0.2888 (min(|t|, 1.769) - 1.769)^2).
inline int64_t integerErf(int64_t t) {
  const int64_t clipped = std::min<int64_t>(t < 0 ? -t : t, kErfPolyBQ) - kErfPolyBQ;  // <= 0
  const int64_t magnitude =
      kFixedOne - roundingShiftRight(kErfPolyAQ * roundingShiftRight(clipped * clipped, kTransformerFracBits),
                                     kTransformerFracBits);
  return t < 0 ? -magnitude : magnitude;
}

/// floor(sqrt(v)) by Newton's iteration x <- (x + v / x) / 2 from a power of
/// two above the root (I-BERT's integer square root); exact for every v.
inline int64_t integerSqrt(int64_t v) {
  assert(v >= 0);
  if (v < 2) return v;
  int bits = 0;
  while (bits < 62 && (int64_t(1) << bits) <= v) ++bits;
  int64_t x = int64_t(1) << ((bits + 1) / 2);  // 2^ceil(bits/2) > sqrt(v)
  for (;;) {
    const int64_t next = (x + v / x) / 2;
    if (next >= x) return x;
    x = next;
  }
}

/// QuantizedSoftmax: d = max(q) - q (in codes) becomes t = d * in_scale in Q20
/// (`input`), e = integerExp(t), sum = sum e, R = floor(2^52 / sum), the
/// probability in Q24 is round(e * R / 2^28), and `output` = 2^-24 / out_scale
/// requantizes it to the output's codes.
inline constexpr int kSoftmaxRecipBits = 52;
inline constexpr int kSoftmaxProbBits = 24;
/// t saturates at 64 ln2 (exp below 2^-64, i.e. 0) so it fits any scale.
inline constexpr int64_t kSoftmaxMaxExponent = 64 * kLn2Q;
struct SoftmaxParams {
  FixedPointMultiplier input, output;
};
inline SoftmaxParams softmaxParams(float inScale, float outScale) {
  return {quantizeMultiplier(std::min(double(inScale) * double(kFixedOne), 1e18)),
          quantizeMultiplier(1.0 / (double(outScale) * double(int64_t(1) << kSoftmaxProbBits)))};
}
/// The Q20 exponent of one element: e = exp(-(max - q) * in_scale).
inline int64_t softmaxExp(int32_t maxMinusQ, const SoftmaxParams& p) {
  return integerExp(std::min<int64_t>(applyMultiplier(maxMinusQ, p.input), kSoftmaxMaxExponent));
}
/// The row's fixed-point reciprocal: floor(2^52 / sum), sum > 0.
inline int64_t softmaxReciprocal(int64_t sum) {
  assert(sum > 0);
  return (int64_t(1) << kSoftmaxRecipBits) / sum;
}
inline int32_t softmaxOutput(int64_t e, int64_t reciprocal, const SoftmaxParams& p, int32_t outZero,
                             int32_t lo, int32_t hi) {
  const int64_t probability = roundingShiftRight(e * reciprocal, kSoftmaxRecipBits - kSoftmaxProbBits);
  return requantize(int32_t(probability), p.output, outZero, lo, hi);
}
/// One softmax row of n 8-bit codes; masked-out positions (keep[i] false) get
/// probability 0, and a row with no kept position is all zero probability.
/// `exps` is scratch of n values.
inline void softmaxRow(const int32_t* q, const bool* keep, int64_t n, const SoftmaxParams& p, int32_t outZero,
                       int32_t lo, int32_t hi, int64_t* exps, int32_t* out) {
  int32_t maxQ = INT32_MIN;
  for (int64_t i = 0; i < n; ++i)
    if (keep[i]) maxQ = std::max(maxQ, q[i]);
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    exps[i] = keep[i] ? softmaxExp(maxQ - q[i], p) : 0;
    sum += exps[i];
  }
  const int64_t reciprocal = sum > 0 ? softmaxReciprocal(sum) : 0;
  for (int64_t i = 0; i < n; ++i) out[i] = softmaxOutput(exps[i], reciprocal, p, outZero, lo, hi);
}

/// QuantizedGelu (I-BERT's i-GELU): x = in_scale (q - z); t = x / sqrt2 in Q20
/// (`input`); acc = (q - z) (2^20 + integerErf(t)) = 2^21 x / (2 in_scale) (1 + erf);
/// out = requantize(acc, `output` = in_scale / (out_scale 2^21)).
struct GeluParams {
  FixedPointMultiplier input, output;
};
inline GeluParams geluParams(float inScale, float outScale) {
  return {quantizeMultiplier(std::min(double(inScale) / std::sqrt(2.0) * double(kFixedOne), 1e18)),
          quantizeMultiplier(double(inScale) / (double(outScale) * double(2 * kFixedOne)))};
}
inline int32_t geluQuantized(int32_t q, int32_t inZero, const GeluParams& p, int32_t outZero, int32_t lo,
                             int32_t hi) {
  const int32_t d = q - inZero;  // |d| <= 255
  const int64_t t = std::clamp<int64_t>(applyMultiplier(d, p.input), -kErfPolyBQ, kErfPolyBQ);
  const int64_t acc = int64_t(d) * (kFixedOne + integerErf(t));  // |acc| <= 255 * 2^21
  return requantize(int32_t(acc), p.output, outZero, lo, hi);
}

/// QuantizedLayerNorm over a row of n codes (I-BERT's integer LayerNorm):
///   d = q - z, c = n d - sum d                  (n times the deviation, exact)
///   v = floor(2^16 sum c^2 / n) + 2^16 epsilon_c                (2^16 n^2 variance)
///   sigma = max(1, integerSqrt(v))                              (2^8 n std)
///   norm = round(c * floor(2^46 / sigma) / 2^22)                (c / (n std) in Q16)
///   out  = clamp(round((gamma_sign applyMultiplier(norm, gamma) + beta) / 2^8) + out_z)
/// with epsilon_c = min(round(eps n^2 / in_scale^2), 2^45) and per channel
/// gamma = quantizeMultiplier(|g| 2^8 / (out_scale 2^16)), beta = round(b 2^8 / out_scale).
/// n <= kLayerNormMaxCount keeps |c| <= 255 n below 2^23 and v below 2^63.
inline constexpr int kLayerNormRecipBits = 46;
inline constexpr int kLayerNormSqrtBits = 8;  ///< fraction bits of sigma
inline constexpr int kLayerNormFracBits = 16;
inline constexpr int kLayerNormAffineBits = 8;
inline constexpr int64_t kLayerNormMaxCount = int64_t(1) << 15;
struct LayerNormChannel {
  FixedPointMultiplier gamma;
  int32_t gammaSign = 1;
  int64_t beta = 0;  ///< in units of out_scale / 2^8
};
inline int64_t layerNormEpsilon(float epsilon, float inScale, int64_t n) {
  const double e = std::round(double(epsilon) * double(n) * double(n) / (double(inScale) * double(inScale)));
  return e > double(int64_t(1) << 45) ? int64_t(1) << 45 : int64_t(e);
}
inline LayerNormChannel layerNormChannel(float gamma, float beta, float outScale) {
  const double g = std::fabs(double(gamma)) * double(1 << kLayerNormAffineBits) /
                   (double(outScale) * double(1 << kLayerNormFracBits));
  const double b = std::round(double(beta) * double(1 << kLayerNormAffineBits) / double(outScale));
  const double bound = double(int64_t(1) << 40);  // far beyond any 8-bit output
  return {quantizeMultiplier(std::isfinite(g) ? std::min(g, 1e9) : 0.0), gamma < 0 ? -1 : 1,
          int64_t(std::isnan(b) ? 0.0 : std::clamp(b, -bound, bound))};
}
/// One row: q (n codes, zero point inZero); channel[i] is element i's affine.
inline void layerNormRow(const int32_t* q, int64_t n, int32_t inZero, int64_t epsilonC,
                         const LayerNormChannel* channel, int32_t outZero, int32_t lo, int32_t hi,
                         int32_t* out) {
  assert(n >= 1 && n <= kLayerNormMaxCount);
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += q[i] - inZero;
  int64_t squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = n * (q[i] - inZero) - sum;
    squares += c * c;
  }
  constexpr int kVarianceBits = 2 * kLayerNormSqrtBits;
  const int64_t variance =
      ((squares / n) << kVarianceBits) + ((squares % n) << kVarianceBits) / n + (epsilonC << kVarianceBits);
  const int64_t sigma = std::max<int64_t>(1, integerSqrt(variance));
  const int64_t reciprocal = (int64_t(1) << kLayerNormRecipBits) / sigma;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = n * (q[i] - inZero) - sum;
    const auto norm = int32_t(
        roundingShiftRight(c * reciprocal, kLayerNormRecipBits - kLayerNormFracBits - kLayerNormSqrtBits));
    const int64_t scaled = channel[i].gammaSign * applyMultiplier(norm, channel[i].gamma) + channel[i].beta;
    out[i] = clampTo(roundingShiftRight(scaled, kLayerNormAffineBits) + outZero, lo, hi);
  }
}

}  // namespace ember::quant
