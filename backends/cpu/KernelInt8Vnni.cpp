// The AVX-512 VNNI int8 micro-kernel (KernelInt8.h): 6 rows x 32 columns of
// int32, vpdpbusd (u8 x s8, four products summed into each int32 lane,
// wrapping, no intermediate saturation). The only file built with -mavx512vnni.
#include <immintrin.h>

#include <cstdint>

namespace ember::cpu {

bool hostHasVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

void int8TileVnni(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, int32_t* c) {
  __m512i acc[6][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kp; k += 4, b += 128) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
    for (int r = 0; r < 6; ++r) {
      int32_t four;
      __builtin_memcpy(&four, a + r * lda + k, 4);
      const __m512i x = _mm512_set1_epi32(four);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, b1);
    }
  }
  for (int r = 0; r < 6; ++r) {
    _mm512_storeu_si512(c + r * 32, acc[r][0]);
    _mm512_storeu_si512(c + r * 32 + 16, acc[r][1]);
  }
}

}  // namespace ember::cpu

namespace ember::cpu {

/// The epilogue of one row segment, 8 lanes at a time in 64 bits (AVX-512
/// F/DQ): total = acc + correction (wrapping int32), then QuantMath.h's
/// requantize: round(total * multiplier / 2^(31 + shift)) ties away from
/// zero, + zero point, clamped to [lo, hi]; stored as 8-bit codes. Bit-exact
/// with quant::requantize (the unit test compares them).
void int8RequantizeAvx512(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                          const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi,
                          uint8_t* out) {
  const __m512i zeroV = _mm512_set1_epi64(zero), loV = _mm512_set1_epi64(lo), hiV = _mm512_set1_epi64(hi);
  const __m512i one = _mm512_set1_epi64(1), k31 = _mm512_set1_epi64(31);
  int64_t j = 0;
  // 16 lanes: vpmuldq on the even and the odd int32 lanes (one uop each,
  // where vpmullq is three), rounded and clamped in 64 bits, recombined.
  const __m512i one16 = _mm512_set1_epi64(1), low32 = _mm512_set1_epi64(0xFFFFFFFF);
  auto roundClamp = [&](__m512i product, __m512i bits) {
    const __m512i half = _mm512_sllv_epi64(one16, _mm512_sub_epi64(bits, one16));  // 0 when bits == 0
    const __m512i magnitude = _mm512_srlv_epi64(_mm512_add_epi64(_mm512_abs_epi64(product), half), bits);
    const __mmask8 negative = _mm512_cmplt_epi64_mask(product, _mm512_setzero_si512());
    const __m512i rounded = _mm512_mask_sub_epi64(magnitude, negative, _mm512_setzero_si512(), magnitude);
    return _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(rounded, zeroV), loV), hiV);
  };
  for (; j + 16 <= n; j += 16) {
    const __m512i total = _mm512_add_epi32(_mm512_loadu_si512(acc + j), _mm512_loadu_si512(correction + j));
    const __m512i mult = _mm512_loadu_si512(multiplier + j);
    const __m512i bits = _mm512_add_epi32(_mm512_set1_epi32(31), _mm512_loadu_si512(shift + j));
    const __m512i even = roundClamp(_mm512_mul_epi32(total, mult), _mm512_and_si512(bits, low32));
    const __m512i odd =
        roundClamp(_mm512_mul_epi32(_mm512_srli_epi64(total, 32), _mm512_srli_epi64(mult, 32)),
                   _mm512_srli_epi64(bits, 32));
    const __m512i both = _mm512_or_si512(_mm512_and_si512(even, low32), _mm512_slli_epi64(odd, 32));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm512_cvtepi32_epi8(both));
  }
  for (; j + 8 <= n; j += 8) {
    const __m256i total32 =
        _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)),
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(correction + j)));
    const __m512i total = _mm512_cvtepi32_epi64(total32);
    const __m512i mult =
        _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(multiplier + j)));
    const __m512i bits = _mm512_add_epi64(
        k31, _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(shift + j))));
    const __m512i product = _mm512_mullo_epi64(total, mult);  // |product| < 2^62
    // half = 2^(bits - 1), or 0 when bits == 0 (no rounding).
    const __mmask8 shifts = _mm512_cmpgt_epi64_mask(bits, _mm512_setzero_si512());
    const __m512i half = _mm512_maskz_sllv_epi64(shifts, one, _mm512_sub_epi64(bits, one));
    const __m512i magnitude = _mm512_srlv_epi64(_mm512_add_epi64(_mm512_abs_epi64(product), half), bits);
    const __mmask8 negative = _mm512_cmplt_epi64_mask(product, _mm512_setzero_si512());
    const __m512i rounded = _mm512_mask_sub_epi64(magnitude, negative, _mm512_setzero_si512(), magnitude);
    const __m512i q = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(rounded, zeroV), loV), hiV);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), _mm512_cvtepi64_epi8(q));
  }
  // The tail, scalar: quant::requantize's arithmetic written out, not called. An
  // inline function instantiated in this TU (built for a wider ISA) could be the
  // copy the linker keeps for every caller, so this file includes no such header.
  for (; j < n; ++j) {
    const int32_t total = int32_t(uint32_t(acc[j]) + uint32_t(correction[j]));
    const int64_t product = int64_t(total) * int64_t(multiplier[j]);
    const int bits = 31 + shift[j];
    int64_t r = product;
    if (bits > 0) {
      const int64_t half = int64_t(1) << (bits - 1);
      r = product >= 0 ? (product + half) >> bits : -((-product + half) >> bits);
    }
    const int64_t v = r + zero;
    out[j] = uint8_t(int32_t(v < lo ? lo : v > hi ? hi : v));
  }
}

}  // namespace ember::cpu
