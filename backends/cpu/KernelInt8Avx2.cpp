// The AVX2 int8 micro-kernels (KernelInt8.h), for CPUs without AVX-512 VNNI:
// a 6 x 32 int32 tile over the same packed panels as the VNNI tile, and the
// requantizing epilogue 4 lanes at a time.
//
// vpmaddubsw multiplies u8 by s8 and adds adjacent pairs into an i16 with
// saturation: 255 * 127 * 2 = 64770 does not fit. It is exact only when every
// tap of the layer is in [-64, 63] (|pair| <= 255 * 64 * 2 = 32640); such
// layers (Int8ConvWeights::narrow) use vpmaddubsw + vpmaddwd(1). Every other
// layer widens both operands to i16 and uses vpmaddwd, whose pair sums of
// u8 x s8 products cannot overflow int32.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu {

bool hostHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

namespace {

/// kInt8PanelCols of KernelInt8.h, which this file does not include (see
/// int8RequantizeAvx2's tail).
constexpr int64_t kInt8PanelCols = 32;

__m256i broadcastFour(const uint8_t* p) {
  int32_t four;
  std::memcpy(&four, p, 4);
  return _mm256_set1_epi32(four);
}

/// Narrow taps: 6 rows x 16 columns (one half of a panel) with vpmaddubsw.
void tileNarrowHalf(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, int32_t* c) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[6][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 4, b += 128) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    for (int r = 0; r < 6; ++r) {
      const __m256i x = broadcastFour(a + r * lda + k);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(x, b0), ones));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(x, b1), ones));
    }
  }
  for (int r = 0; r < 6; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 32), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 32 + 8), acc[r][1]);
  }
}

/// Any taps: 2 rows x 16 columns widened to i16. Each vpmaddwd lane holds the
/// sum of two of a column's four products; the pairs are added at the end.
void tileWideHalf(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, int32_t* c) {
  __m256i acc[2][4];
  for (auto& row : acc)
    for (auto& v : row) v = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 4, b += 128) {
    __m256i w[4];
    for (int q = 0; q < 4; ++q)
      w[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * q)));
    for (int r = 0; r < 2; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * lda + k, 4);
      const __m128i x16 = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(four));  // 4 x i16 in the low 64 bits
      const __m256i x = _mm256_broadcastq_epi64(x16);
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(x, w[q]));
    }
  }
  for (int r = 0; r < 2; ++r) {
    alignas(32) uint32_t pairs[32];
    for (int q = 0; q < 4; ++q) _mm256_store_si256(reinterpret_cast<__m256i*>(pairs + 8 * q), acc[r][q]);
    for (int j = 0; j < 16; ++j) c[r * 32 + j] = int32_t(pairs[2 * j] + pairs[2 * j + 1]);
  }
}

/// Any taps, operands widened ahead (int8WidenAvx2, int8WidenPanelAvx2):
/// kRows rows x 16 columns, one K pair per step: a 4-byte broadcast of the
/// row's two int16 codes, and vpmaddwd against 8 columns' two taps gives 8
/// int32 column sums directly. Three rows: GCC loads every row's broadcast
/// before the multiplies, and 6 rows' (with 12 accumulators and 2 panel
/// vectors) spilled AVX2's 16 registers to the stack.
template <int kRows>
void tileWidenedHalf(const int16_t* a, int64_t lda, const int16_t* b, int64_t kp, int32_t* c) {
  __m256i acc[kRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 2, b += 2 * kInt8PanelCols) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda + k, 4);
      const __m256i x = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * kInt8PanelCols), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * kInt8PanelCols + 8), acc[r][1]);
  }
}

}  // namespace

void int8WidenAvx2(const uint8_t* codes, int64_t n, int16_t* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i))));
  for (; i < n; ++i) out[i] = int16_t(codes[i]);
}

void int8WidenPanelAvx2(const int8_t* panel, int64_t kp, int16_t* out) {
  // The panel holds, per step of 4 K, each column's 4 taps; out holds, per
  // K pair, each column's 2 taps.
  for (int64_t k = 0; k < kp; k += 2)
    for (int64_t col = 0; col < kInt8PanelCols; ++col)
      for (int64_t t = 0; t < 2; ++t)
        out[(k / 2 * kInt8PanelCols + col) * 2 + t] = panel[k / 4 * 4 * kInt8PanelCols + col * 4 + k % 4 + t];
}

void int8TileAvx2Widened(const int16_t* a, int64_t lda, const int16_t* b, int64_t kp, int32_t* c) {
  for (int half = 0; half < 2; ++half)
    for (int r = 0; r < 6; r += 3)
      tileWidenedHalf<3>(a + r * lda, lda, b + 32 * half, kp, c + r * kInt8PanelCols + 16 * half);
}

void int8TileAvx2(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, bool narrow, int64_t rows,
                  int32_t* c) {
  for (int half = 0; half < 2; ++half) {
    const int8_t* panel = b + 64 * half;
    if (narrow) {
      tileNarrowHalf(a, lda, panel, kp, c + 16 * half);
      continue;
    }
    for (int r = 0; r < rows; r += 2) tileWideHalf(a + r * lda, lda, panel, kp, c + r * 32 + 16 * half);
  }
}

namespace {

/// 8 columns whose total shift S = 31 + shift is at least 32 (a real
/// multiplier below 1/2): round(total * M) ties away from zero is
/// sign(total) * ((|total| * m + 2^(S-1)) >> S), an unsigned 32 x 32 -> 64
/// product on the even and the odd lanes, shifted by S - 32 so that the
/// high dword is the result (below 2^30: the zero point cannot overflow).
/// As the AVX-512 epilogue's fast path. Returns false, storing nothing, if
/// one of the 8 has a larger multiplier.
bool requantizeBelowHalf8(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                          const int32_t* shift, int32_t zero, int32_t lo, int32_t hi, uint8_t* out) {
  const __m256i shifts = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(shift));
  if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(1), shifts))) != 0)
    return false;
  const __m256i total = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc)),
                                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(correction)));
  const __m256i mult = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(multiplier));
  const __m256i rightShift = _mm256_sub_epi32(shifts, _mm256_set1_epi32(1));  // S - 32
  const __m256i low32 = _mm256_set1_epi64x(0xFFFFFFFF), half32 = _mm256_set1_epi64x(int64_t(1) << 31);
  const __m256i shiftEven = _mm256_and_si256(rightShift, low32), shiftOdd = _mm256_srli_epi64(rightShift, 32);
  const __m256i magnitude = _mm256_abs_epi32(total);  // INT32_MIN gives 2^31, right as unsigned
  __m256i even = _mm256_mul_epu32(magnitude, mult);
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(magnitude, 32), _mm256_srli_epi64(mult, 32));
  even = _mm256_srlv_epi64(_mm256_add_epi64(even, _mm256_sllv_epi64(half32, shiftEven)), shiftEven);
  odd = _mm256_srlv_epi64(_mm256_add_epi64(odd, _mm256_sllv_epi64(half32, shiftOdd)), shiftOdd);
  // The high dwords: the even lanes' moved down into the even positions, the odd lanes' in place.
  const __m256i rounded = _mm256_blend_epi32(_mm256_shuffle_epi32(even, 0xF5), odd, 0xAA);
  const __m256i negative = _mm256_srai_epi32(total, 31);
  __m256i v = _mm256_add_epi32(_mm256_sub_epi32(_mm256_xor_si256(rounded, negative), negative),
                               _mm256_set1_epi32(zero));
  v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
  // In [lo, hi] within [-128, 255]: both packs are exact (u8 codes when hi > 127).
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i bytes = hi > 127 ? _mm_packus_epi16(words, words) : _mm_packs_epi16(words, words);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
  return true;
}

}  // namespace

/// The epilogue of KernelInt8Vnni.cpp's int8RequantizeAvx512 in AVX2, 4 lanes
/// in 64 bits: total = acc + correction (wrapping), round(total * multiplier /
/// 2^(31 + shift)) ties away from zero, + zero, clamped to [lo, hi].
void int8RequantizeAvx2(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                        const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi, uint8_t* out) {
  const __m256i zeroV = _mm256_set1_epi64x(zero), loV = _mm256_set1_epi64x(lo), hiV = _mm256_set1_epi64x(hi);
  const __m256i one = _mm256_set1_epi64x(1), k31 = _mm256_set1_epi64x(31);
  const __m128i lowBytes = _mm_setr_epi8(0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    if (!requantizeBelowHalf8(acc + j, correction + j, multiplier + j, shift + j, zero, lo, hi, out + j))
      break;
  }
  for (; j + 4 <= n; j += 4) {
    const __m128i total32 = _mm_add_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + j)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(correction + j)));
    const __m256i total = _mm256_cvtepi32_epi64(total32);
    const __m256i mult =
        _mm256_cvtepi32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(multiplier + j)));
    const __m256i bits = _mm256_add_epi64(
        k31, _mm256_cvtepi32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(shift + j))));
    const __m256i product = _mm256_mul_epi32(total, mult);  // signed 32 x 32 -> 64
    const __m256i negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), product);
    const __m256i magnitudeIn = _mm256_sub_epi64(_mm256_xor_si256(product, negative), negative);
    // half = 2^(bits - 1); bits == 0 gives a count of 2^64 - 1, which sllv turns into 0.
    const __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(bits, one));
    const __m256i magnitude = _mm256_srlv_epi64(_mm256_add_epi64(magnitudeIn, half), bits);
    __m256i v = _mm256_add_epi64(_mm256_sub_epi64(_mm256_xor_si256(magnitude, negative), negative), zeroV);
    v = _mm256_blendv_epi8(v, loV, _mm256_cmpgt_epi64(loV, v));
    v = _mm256_blendv_epi8(v, hiV, _mm256_cmpgt_epi64(v, hiV));
    // The low byte of each 64-bit lane: bytes 0 and 8 of each 128-bit half.
    const __m128i lo2 = _mm_shuffle_epi8(_mm256_castsi256_si128(v), lowBytes);
    const __m128i hi2 = _mm_shuffle_epi8(_mm256_extracti128_si256(v, 1), lowBytes);
    const uint16_t first = uint16_t(_mm_extract_epi16(lo2, 0)), second = uint16_t(_mm_extract_epi16(hi2, 0));
    std::memcpy(out + j, &first, 2);
    std::memcpy(out + j + 2, &second, 2);
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
