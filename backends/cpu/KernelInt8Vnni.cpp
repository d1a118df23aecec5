// The AVX-512 VNNI int8 kernels (KernelInt8.h): the 6 x 32 int32 tile of
// vpdpbusd (u8 x s8, four products summed into each int32 lane, wrapping, no
// intermediate saturation) with the requantizing epilogue in its registers,
// and that epilogue alone for the other int8 kernels. The only file built
// with -mavx512vnni.
#include <immintrin.h>

#include <climits>
#include <cstdint>

#include "KernelInt8Tile.h"

namespace ember::cpu {

bool hostHasVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

namespace {

/// QuantMath.h's requantize for 16 int32 lanes, in the even and the odd lanes'
/// 64-bit products (vpmuldq, one uop each): round(p / 2^bits) ties away from
/// zero is (p + half - (p < 0)) >> bits, arithmetic (for p < 0 it is
/// -((-p + half) >> bits) as the spec writes it); bits == 0 takes neither term.
/// The clamp to [lo, hi] - zero happens in 64 bits, the zero point is added
/// in 32 after the halves are recombined.
struct Requant16 {
  __m512i correction, multEven, multOdd, bitsEven, bitsOdd, halfEven, halfOdd;
  __mmask8 roundEven, roundOdd;
};
struct RequantRange {
  __m512i lo, hi, zero;  ///< lo - zero and hi - zero in 64-bit lanes; zero in 32-bit lanes
};

RequantRange requantRange(int32_t zero, int32_t lo, int32_t hi) {
  return {_mm512_set1_epi64(int64_t(lo) - zero), _mm512_set1_epi64(int64_t(hi) - zero),
          _mm512_set1_epi32(zero)};
}

/// The constants of columns [0, 16) (lanes past `valid` read as zero).
Requant16 requantConstants(const int32_t* correction, const int32_t* multiplier, const int32_t* shift,
                           __mmask16 valid) {
  const __m512i one = _mm512_set1_epi64(1), low32 = _mm512_set1_epi64(0xFFFFFFFF);
  const __m512i mult = _mm512_maskz_loadu_epi32(valid, multiplier);
  const __m512i bits = _mm512_add_epi32(_mm512_set1_epi32(31), _mm512_maskz_loadu_epi32(valid, shift));
  Requant16 k;
  k.correction = _mm512_maskz_loadu_epi32(valid, correction);
  k.multEven = mult;
  k.multOdd = _mm512_srli_epi64(mult, 32);
  k.bitsEven = _mm512_and_si512(bits, low32);
  k.bitsOdd = _mm512_srli_epi64(bits, 32);
  // 2^(bits - 1); bits == 0 gives a count of 2^64 - 1, which vpsllvq turns into 0.
  k.halfEven = _mm512_sllv_epi64(one, _mm512_sub_epi64(k.bitsEven, one));
  k.halfOdd = _mm512_sllv_epi64(one, _mm512_sub_epi64(k.bitsOdd, one));
  k.roundEven = _mm512_test_epi64_mask(k.bitsEven, k.bitsEven);
  k.roundOdd = _mm512_test_epi64_mask(k.bitsOdd, k.bitsOdd);
  return k;
}

inline __m512i roundShift(__m512i product, __m512i half, __m512i bits, __mmask8 round) {
  const __mmask8 negative = _mm512_mask_cmplt_epi64_mask(round, product, _mm512_setzero_si512());
  __m512i t = _mm512_add_epi64(product, half);
  t = _mm512_mask_sub_epi64(t, negative, t, _mm512_set1_epi64(1));
  return _mm512_srav_epi64(t, bits);
}

inline __m512i roundShiftClamp(__m512i product, __m512i half, __m512i bits, __mmask8 round,
                               const RequantRange& range) {
  return _mm512_min_epi64(_mm512_max_epi64(roundShift(product, half, bits, round), range.lo), range.hi);
}

/// acc + correction (wrapping), requantized: 16 codes in int32 lanes.
inline __m512i requantize16(__m512i acc, const Requant16& k, const RequantRange& range) {
  const __m512i total = _mm512_add_epi32(acc, k.correction);
  const __m512i even =
      roundShiftClamp(_mm512_mul_epi32(total, k.multEven), k.halfEven, k.bitsEven, k.roundEven, range);
  const __m512i odd = roundShiftClamp(_mm512_mul_epi32(_mm512_srli_epi64(total, 32), k.multOdd), k.halfOdd,
                                      k.bitsOdd, k.roundOdd, range);
  return _mm512_add_epi32(_mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32)), range.zero);
}

/// acc += vpdpbusd(x, w). GCC 12 copies the accumulator of the intrinsic
/// into a fresh register each time (two vmovdqa per vpdpbusd in the tile's
/// loop); the instruction written out keeps it in place.
inline void dotAccumulate(__m512i& acc, __m512i x, __m512i w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
}

__mmask16 firstLanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

}  // namespace

void int8TileVnniRequant(const Int8TileArgs& t) {
  // Named accumulators, not an array: GCC keeps an array that inline asm
  // writes in memory.
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const int8_t* b = t.b;
  const uint8_t* a = t.a;
  const int64_t lda = t.lda;
  for (int64_t k = 0; k < t.kp; k += 4, b += 128, a += 4) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
    auto row = [&](int r, __m512i& lo, __m512i& hi) {
      int32_t four;
      __builtin_memcpy(&four, a + r * lda, 4);
      const __m512i x = _mm512_set1_epi32(four);
      dotAccumulate(lo, x, b0);
      dotAccumulate(hi, x, b1);
    };
    row(0, c00, c01);
    row(1, c10, c11);
    row(2, c20, c21);
    row(3, c30, c31);
    row(4, c40, c41);
    row(5, c50, c51);
  }
  const __m512i acc[kInt8VnniTileRows][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                                             {c30, c31}, {c40, c41}, {c50, c51}};
  const RequantRange range = requantRange(t.zero, t.lo, t.hi);
  for (int half = 0; half < 2; ++half) {
    const int64_t cols = t.cols - 16 * half;
    if (cols <= 0) break;
    const __mmask16 valid = firstLanes(cols);
    const Requant16 k =
        requantConstants(t.correction + 16 * half, t.multiplier + 16 * half, t.shift + 16 * half, valid);
    for (int r = 0; r < kInt8VnniTileRows && r < t.rows; ++r)
      _mm512_mask_cvtepi32_storeu_epi8(t.out + r * t.ldo + 16 * half, valid,
                                       requantize16(acc[r][half], k, range));
  }
}

namespace {

/// 16 channels of one tap as int32 lanes (sign- or zero-extended codes).
inline __m512i widenCodes(const uint8_t* p, __mmask16 valid, bool isSigned) {
  const __m128i bytes = _mm_maskz_loadu_epi8(valid, p);
  return isSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
}

/// acc += vpdpwssd(x, w) (pairs of i16 products, wrapping), in place as in dotAccumulate.
inline void pairAccumulate(__m512i& acc, __m512i x, __m512i w) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
}

}  // namespace

/// Per block of 16 channels (the requantization constants and the pair
/// weights loaded once), every pixel of the row: two taps' codes are packed
/// as the i16 halves of each lane and multiplied with vpdpwssd. Codes fit
/// i16, |code x tap| <= 255 * 128, so the pair sum is exact; the int32 sums
/// wrap like the spec's. Padding taps read the zero point's row, whose
/// (q - z) is 0: the correction's -z * sum(taps) cancels their products.
void int8DepthwiseRowVnni(const Int8DepthwiseRowArgs& t) {
  const RequantRange range = requantRange(t.zero, t.lo, t.hi);
  const bool isSigned = t.inputSigned != 0;
  const int64_t stride16 = (t.c + 15) / 16 * 16;
  for (int64_t ch = 0; ch < t.c; ch += 16) {
    const __mmask16 valid = firstLanes(t.c - ch);
    const Requant16 k = requantConstants(t.correction + ch, t.multiplier + ch, t.shift + ch, valid);
    for (int64_t x = 0; x < t.pixels; ++x) {
      const uint8_t* const* src = t.sources + x * 2 * t.pairs;
      __m512i acc = _mm512_setzero_si512();
      for (int64_t p = 0; p < t.pairs; ++p) {
        const __m512i first = widenCodes(src[2 * p] + ch, valid, isSigned);
        const __m512i second = widenCodes(src[2 * p + 1] + ch, valid, isSigned);
        const __m512i both = _mm512_mask_blend_epi16(0xAAAAAAAA, first, _mm512_slli_epi32(second, 16));
        pairAccumulate(acc, both, _mm512_loadu_si512(t.pairWeights + p * stride16 + ch));
      }
      _mm512_mask_cvtepi32_storeu_epi8(t.out + x * t.c + ch, valid, requantize16(acc, k, range));
    }
  }
}

namespace {

/// The requantization constants of one multiplier in every lane.
Requant16 uniformConstants(int32_t multiplier, int32_t shift) {
  int32_t m[16], sh[16], zero[16] = {};
  for (int i = 0; i < 16; ++i) {
    m[i] = multiplier;
    sh[i] = shift;
  }
  return requantConstants(zero, m, sh, 0xFFFF);
}

/// (q - zero) << 20 of 16 codes, scaled: the rounded 64-bit products of the
/// even and the odd lanes.
inline void scaleOperand(const uint8_t* p, __mmask16 valid, bool isSigned, __m512i zero, const Requant16& k,
                         __m512i& even, __m512i& odd) {
  const __m512i q = _mm512_sub_epi32(widenCodes(p, valid, isSigned), zero);
  const __m512i shifted = _mm512_slli_epi32(q, 20);  // |q - zero| <= 255: no overflow
  even = roundShift(_mm512_mul_epi32(shifted, k.multEven), k.halfEven, k.bitsEven, k.roundEven);
  odd = roundShift(_mm512_mul_epi32(_mm512_srli_epi64(shifted, 32), k.multOdd), k.halfOdd, k.bitsOdd,
                   k.roundOdd);
}

}  // namespace

/// QuantizedAdd of elements [begin, end), 16 at a time (the tail masked),
/// bit-exact with quant::addQuantized.
void int8AddAvx512(const Int8AddCall& t, int64_t begin, int64_t end) {
  const Requant16 ka = uniformConstants(t.aMultiplier, t.aShift),
                  kb = uniformConstants(t.bMultiplier, t.bShift);
  const Requant16 kout = uniformConstants(t.outMultiplier, t.outShift);
  const RequantRange range = requantRange(t.outZero, t.lo, t.hi);
  const RequantRange int32Range = requantRange(0, INT32_MIN, INT32_MAX);
  const __m512i aZero = _mm512_set1_epi32(t.aZero), bZero = _mm512_set1_epi32(t.bZero);
  const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 valid = firstLanes(end - i);
    __m512i aEven, aOdd, bEven, bOdd;
    scaleOperand(t.a + i, valid, t.aSigned != 0, aZero, ka, aEven, aOdd);
    scaleOperand(t.b + i, valid, t.bSigned != 0, bZero, kb, bEven, bOdd);
    auto saturate = [&](__m512i v) {
      return _mm512_min_epi64(_mm512_max_epi64(v, int32Range.lo), int32Range.hi);
    };
    // The sums as int32 again: even lanes in place, odd lanes shifted up.
    const __m512i sum = _mm512_or_si512(_mm512_and_si512(saturate(_mm512_add_epi64(aEven, bEven)), low32),
                                        _mm512_slli_epi64(saturate(_mm512_add_epi64(aOdd, bOdd)), 32));
    _mm512_mask_cvtepi32_storeu_epi8(t.out + i, valid, requantize16(sum, kout, range));
  }
}

/// The epilogue of one row segment, 16 columns at a time (the tail masked):
/// total = acc + correction (wrapping int32), then QuantMath.h's requantize,
/// stored as 8-bit codes. Bit-exact with quant::requantize (the unit test
/// compares them on extreme values).
void int8RequantizeAvx512(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                          const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi,
                          uint8_t* out) {
  const RequantRange range = requantRange(zero, lo, hi);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 valid = firstLanes(n - j);
    const Requant16 k = requantConstants(correction + j, multiplier + j, shift + j, valid);
    _mm512_mask_cvtepi32_storeu_epi8(out + j, valid,
                                     requantize16(_mm512_maskz_loadu_epi32(valid, acc + j), k, range));
  }
}

}  // namespace ember::cpu
