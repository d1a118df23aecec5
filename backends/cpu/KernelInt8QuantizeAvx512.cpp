// Quantize (f32 -> 8-bit codes) in AVX-512, 16 floats at a time, bit-exact
// with quant::quantizeValue (KernelInt8Quantize.cpp has the AVX2 path).
// q = x / scale is computed as x * (1 / scale) in double: the product differs
// from the quotient by under 2^-51 of its magnitude, and round-half-away(q)
// changes only across a half-integer, so a lane whose |q| lies within
// |q| * 2^-49 of one (ties, and anything of 2^48 or more) is divided exactly.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_pd() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "KernelInt8.h"

namespace ember::cpu {
namespace {

struct QuantizeConstants {
  __m512d inverse, scale, zero, lo, hi, nanCode, half, one, tieWindow;
  __m512i signBit;
};

/// The codes of 8 doubles x as int32: clamp(round_half_away(x / scale) + zero, lo, hi).
inline __m256i codes8(__m512d x, const QuantizeConstants& k) {
  __m512d q = _mm512_mul_pd(x, k.inverse);
  __m512d magnitude = _mm512_abs_pd(q);
  __m512d whole = _mm512_roundscale_pd(magnitude, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m512d frac = _mm512_sub_pd(magnitude, whole);
  const __mmask8 nearTie = _mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_sub_pd(frac, k.half)),
                                              _mm512_mul_pd(magnitude, k.tieWindow), _CMP_LE_OQ);
  if (nearTie) {
    q = _mm512_mask_div_pd(q, nearTie, x, k.scale);
    magnitude = _mm512_abs_pd(q);
    whole = _mm512_roundscale_pd(magnitude, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    frac = _mm512_sub_pd(magnitude, whole);
  }
  const __m512d rounded =
      _mm512_mask_add_pd(whole, _mm512_cmp_pd_mask(frac, k.half, _CMP_GE_OQ), whole, k.one);
  // The sign of q back on |round(q)|.
  const __m512d signedRounded = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_castpd_si512(rounded), _mm512_and_si512(_mm512_castpd_si512(q), k.signBit)));
  // max/min return their second operand for a NaN lane, which the NaN code then replaces.
  __m512d v = _mm512_min_pd(_mm512_max_pd(_mm512_add_pd(signedRounded, k.zero), k.lo), k.hi);
  v = _mm512_mask_mov_pd(v, _mm512_cmp_pd_mask(q, q, _CMP_UNORD_Q), k.nanCode);
  return _mm512_cvttpd_epi32(v);
}

}  // namespace

void int8QuantizeAvx512(const Int8QuantizeCall& call, int64_t begin, int64_t end) {
  QuantizeConstants k;
  k.inverse = _mm512_set1_pd(1.0 / double(call.scale));
  k.scale = _mm512_set1_pd(double(call.scale));
  k.zero = _mm512_set1_pd(double(call.zero));
  k.lo = _mm512_set1_pd(double(call.lo));
  k.hi = _mm512_set1_pd(double(call.hi));
  k.nanCode = _mm512_set1_pd(double(call.zero < call.lo   ? call.lo
                                    : call.zero > call.hi ? call.hi
                                                          : call.zero));
  k.half = _mm512_set1_pd(0.5);
  k.one = _mm512_set1_pd(1.0);
  k.tieWindow = _mm512_set1_pd(0x1p-49);
  k.signBit = _mm512_set1_epi64(INT64_MIN);
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 valid = end - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (end - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(valid, call.input + i);
    const __m256i low = codes8(_mm512_cvtps_pd(_mm512_castps512_ps256(x)), k);
    const __m256i high =
        codes8(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))), k);
    _mm512_mask_cvtepi32_storeu_epi8(call.output + i, valid,
                                     _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1));
  }
}

}  // namespace ember::cpu
