// The AVX-512 VNNI int8 kernels (KernelInt8.h): the 6 x 32 int32 tile of
// vpdpbusd (u8 x s8, four products summed into each int32 lane, wrapping, no
// intermediate saturation) with the requantizing epilogue in its registers,
// and that epilogue alone for the other int8 kernels. The only file built
// with -mavx512vnni.
#include <immintrin.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

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

/// round(total * M) clamped to [lo - zero, hi - zero], in int32 lanes.
inline __m512i roundScaledClamped16(__m512i total, const Requant16& k, const RequantRange& range) {
  const __m512i even =
      roundShiftClamp(_mm512_mul_epi32(total, k.multEven), k.halfEven, k.bitsEven, k.roundEven, range);
  const __m512i odd = roundShiftClamp(_mm512_mul_epi32(_mm512_srli_epi64(total, 32), k.multOdd), k.halfOdd,
                                      k.bitsOdd, k.roundOdd, range);
  return _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/// acc + correction (wrapping), requantized: 16 codes in int32 lanes.
inline __m512i requantize16(__m512i acc, const Requant16& k, const RequantRange& range) {
  return _mm512_add_epi32(roundScaledClamped16(_mm512_add_epi32(acc, k.correction), k, range), range.zero);
}

/// The requantization of the conv and depthwise epilogues, for 16 columns.
/// When every column's total shift S = 31 + shift is at least 32 (a real
/// multiplier below 1/2, the usual layer), round(total * M), ties away from
/// zero, is sign(total) * ((|total| * m + 2^(S-1)) >> S) with an unsigned
/// 64-bit product: shifted by S - 32 in 64 bits, then the high dword of each
/// lane is the result (below 2^30, so no clamp is needed before packing).
/// Other columns take Requant16's general arithmetic.
struct Scale16 {
  bool belowHalf = false;
  __m512i multEven, multOdd, shiftEven, shiftOdd, halfEven, halfOdd;  // S - 32 and 2^(S-1) in 64-bit lanes
  Requant16 general;
};

Scale16 scaleConstants(const int32_t* multiplier, const int32_t* shift, __mmask16 valid) {
  Scale16 k;
  const __m512i shifts = _mm512_maskz_loadu_epi32(valid, shift);
  k.belowHalf = (_mm512_mask_cmpge_epi32_mask(valid, shifts, _mm512_set1_epi32(1)) & valid) == valid;
  if (!k.belowHalf) {
    const int32_t zero[16] = {};
    k.general = requantConstants(zero, multiplier, shift, valid);
    return k;
  }
  const __m512i mult = _mm512_maskz_loadu_epi32(valid, multiplier);
  // S - 32 = shift - 1; lanes past `valid` get -1, a count vpsrlvq and vpsllvq turn into 0.
  const __m512i rightShift = _mm512_sub_epi32(shifts, _mm512_set1_epi32(1));
  k.multEven = mult;
  k.multOdd = _mm512_srli_epi64(mult, 32);
  k.shiftEven = _mm512_and_si512(rightShift, _mm512_set1_epi64(0xFFFFFFFF));
  k.shiftOdd = _mm512_srli_epi64(rightShift, 32);
  const __m512i half32 = _mm512_set1_epi64(int64_t(1) << 31);  // 2^(S-1) = 2^31 << (S - 32)
  k.halfEven = _mm512_sllv_epi64(half32, k.shiftEven);
  k.halfOdd = _mm512_sllv_epi64(half32, k.shiftOdd);
  return k;
}

/// round(total * M) on the fast path (every column's S >= 32).
inline __m512i scaledBelowHalf16(__m512i total, const Scale16& k) {
  const __m512i magnitude = _mm512_abs_epi32(total);  // INT32_MIN gives 2^31, right as unsigned
  const __mmask16 negative = _mm512_movepi32_mask(total);
  __m512i even = _mm512_mul_epu32(magnitude, k.multEven);
  __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(magnitude, 32), k.multOdd);
  even = _mm512_srlv_epi64(_mm512_add_epi64(even, k.halfEven), k.shiftEven);
  odd = _mm512_srlv_epi64(_mm512_add_epi64(odd, k.halfOdd), k.shiftOdd);
  // The high dwords: the even lanes' moved down into the even positions, the odd lanes' in place.
  const __m512i rounded = _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_DDBB);
  return _mm512_mask_sub_epi32(rounded, negative, _mm512_setzero_si512(), rounded);
}

/// v with code = clamp(v + zero, lo, hi): round(total * M) (Scale16).
inline __m512i scaled16(__m512i total, const Scale16& k, const RequantRange& range) {
  return k.belowHalf ? scaledBelowHalf16(total, k) : roundScaledClamped16(total, k.general, range);
}

/// The output's zero point and clamp for packCodes.
struct CodeRange {
  __m512i zero16, lo8, hi8;
  bool unsignedCodes;  ///< hi > 127: codes are u8 (else i8; lo >= -128)
};

CodeRange codeRange(int32_t zero, int32_t lo, int32_t hi) {
  return {_mm512_set1_epi16(int16_t(zero)), _mm512_set1_epi8(char(lo)), _mm512_set1_epi8(char(hi)), hi > 127};
}

/// 64 codes clamp(v + zero, lo, hi) of four vectors of 16 values: packed to
/// i16 with saturation, the zero point added with saturation, packed to 8
/// bits with saturation, clamped (a value saturated on the way is beyond
/// [lo, hi] either way). The packs interleave per 128-bit lane: dword j of
/// lane L holds v_j's lanes 4L .. 4L + 3.
inline __m512i packCodesInLanes(__m512i v0, __m512i v1, __m512i v2, __m512i v3, const CodeRange& r) {
  const __m512i w01 = _mm512_adds_epi16(_mm512_packs_epi32(v0, v1), r.zero16);
  const __m512i w23 = _mm512_adds_epi16(_mm512_packs_epi32(v2, v3), r.zero16);
  return r.unsignedCodes ? _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(w01, w23), r.lo8), r.hi8)
                         : _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(w01, w23), r.lo8), r.hi8);
}

/// packCodesInLanes in order: v0's 16 codes, then v1's, v2's and v3's (the
/// conv tile's v0, v1 are one row's columns 0-15 and 16-31, v2, v3 the next row's).
inline __m512i packCodes(__m512i v0, __m512i v1, __m512i v2, __m512i v3, const CodeRange& r) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(order, packCodesInLanes(v0, v1, v2, v3, r));
}

/// acc += vpdpbusd(x, w). GCC 12 copies the accumulator of the intrinsic
/// into a fresh register each time (two vmovdqa per vpdpbusd in the tile's
/// loop); the instruction written out keeps it in place.
inline void dotAccumulate(__m512i& acc, __m512i x, __m512i w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
}

__mmask16 firstLanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

}  // namespace

void int8TileVnniRequant(const Int8TileArgs& t) {
  // Named accumulators, not an array: GCC keeps an array that inline asm
  // writes in memory. They start from the correction (bias - zu * sum(w)).
  const __m512i correction0 = _mm512_loadu_si512(t.correction),
                correction1 = _mm512_loadu_si512(t.correction + 16);
  __m512i c00 = correction0, c10 = correction0, c20 = correction0, c30 = correction0, c40 = correction0,
          c50 = correction0;
  __m512i c01 = correction1, c11 = correction1, c21 = correction1, c31 = correction1, c41 = correction1,
          c51 = correction1;
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
  const RequantRange range = requantRange(t.zero, t.lo, t.hi);
  const CodeRange codes = codeRange(t.zero, t.lo, t.hi);
  const Scale16 k0 = scaleConstants(t.multiplier, t.shift, firstLanes(t.cols));
  const Scale16 k1 = scaleConstants(t.multiplier + 16, t.shift + 16, firstLanes(t.cols - 16));
  static_assert(kInt8VnniTileRows == 6);
  // Rows r and r + 1 from 64 packed codes (32 each), the panel's last columns masked.
  const __mmask32 columns = t.cols >= 32 ? ~__mmask32(0) : (__mmask32(1) << t.cols) - 1;
  auto storeTwoRows = [&](int r, __m512i packed) {
    if (r < t.rows) _mm256_mask_storeu_epi8(t.out + r * t.ldo, columns, _mm512_castsi512_si256(packed));
    if (r + 1 < t.rows)
      _mm256_mask_storeu_epi8(t.out + (r + 1) * t.ldo, columns, _mm512_extracti64x4_epi64(packed, 1));
  };
  // At most 16 columns: rows r .. r + 3 from 64 packed codes (16 each).
  auto storeFourRows = [&](int r, __m512i packed) {
    const __mmask16 narrow = __mmask16(columns);
    if (r < t.rows) _mm_mask_storeu_epi8(t.out + r * t.ldo, narrow, _mm512_castsi512_si128(packed));
    if (r + 1 < t.rows)
      _mm_mask_storeu_epi8(t.out + (r + 1) * t.ldo, narrow, _mm512_extracti32x4_epi32(packed, 1));
    if (r + 2 < t.rows)
      _mm_mask_storeu_epi8(t.out + (r + 2) * t.ldo, narrow, _mm512_extracti32x4_epi32(packed, 2));
    if (r + 3 < t.rows)
      _mm_mask_storeu_epi8(t.out + (r + 3) * t.ldo, narrow, _mm512_extracti32x4_epi32(packed, 3));
  };
  // Straight-line code over the named accumulators (a loop over an array of
  // them kept the array in memory), one instance per requantization path.
  auto finish = [&](auto scale) {
    if (t.cols <= 16) {
      storeFourRows(0, packCodes(scale(c00, k0), scale(c10, k0), scale(c20, k0), scale(c30, k0), codes));
      const __m512i r4 = scale(c40, k0), r5 = scale(c50, k0);
      storeFourRows(4, packCodes(r4, r5, r5, r5, codes));
      return;
    }
    storeTwoRows(0, packCodes(scale(c00, k0), scale(c01, k1), scale(c10, k0), scale(c11, k1), codes));
    storeTwoRows(2, packCodes(scale(c20, k0), scale(c21, k1), scale(c30, k0), scale(c31, k1), codes));
    storeTwoRows(4, packCodes(scale(c40, k0), scale(c41, k1), scale(c50, k0), scale(c51, k1), codes));
  };
  if (k0.belowHalf && k1.belowHalf)
    finish([](__m512i total, const Scale16& k) { return scaledBelowHalf16(total, k); });
  else
    finish([&](__m512i total, const Scale16& k) { return scaled16(total, k, range); });
}

namespace {

/// 16 codes as int32 lanes (sign- or zero-extended).
inline __m512i widenCodes(const uint8_t* p, __mmask16 valid, bool isSigned) {
  const __m128i bytes = _mm_maskz_loadu_epi8(valid, p);
  return isSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
}

}  // namespace

namespace {

constexpr int64_t kBlock = kInt8DepthwiseBlock;

/// acc_j += vpdpbusd(vector j of the interleave of four taps' codes x0..x3
/// (u8), vector j of the group's packed taps w).
inline void accumulateGroup(__m512i& acc0, __m512i& acc1, __m512i& acc2, __m512i& acc3, __m512i x0,
                            __m512i x1, __m512i x2, __m512i x3, const int8_t* w) {
  const __m512i lo01 = _mm512_unpacklo_epi8(x0, x1), hi01 = _mm512_unpackhi_epi8(x0, x1);
  const __m512i lo23 = _mm512_unpacklo_epi8(x2, x3), hi23 = _mm512_unpackhi_epi8(x2, x3);
  dotAccumulate(acc0, _mm512_unpacklo_epi16(lo01, lo23), _mm512_loadu_si512(w));
  dotAccumulate(acc1, _mm512_unpackhi_epi16(lo01, lo23), _mm512_loadu_si512(w + kBlock));
  dotAccumulate(acc2, _mm512_unpacklo_epi16(hi01, hi23), _mm512_loadu_si512(w + 2 * kBlock));
  dotAccumulate(acc3, _mm512_unpackhi_epi16(hi01, hi23), _mm512_loadu_si512(w + 3 * kBlock));
}

/// A block's correction and requantization constants ([3][64] int32 in the
/// interleave's order; packed channels past c have multiplier 0 and shift 1:
/// the fast path, a code of 0).
struct BlockConstants {
  __m512i correction[4];
  Scale16 scale[4];
  bool belowHalf;  ///< every vector's
};

BlockConstants blockConstants(const int32_t* constants) {
  BlockConstants k;
  for (int j = 0; j < 4; ++j) {
    k.correction[j] = _mm512_loadu_si512(constants + 16 * j);
    k.scale[j] = scaleConstants(constants + kBlock + 16 * j, constants + 2 * kBlock + 16 * j, 0xFFFF);
  }
  k.belowHalf = k.scale[0].belowHalf && k.scale[1].belowHalf && k.scale[2].belowHalf && k.scale[3].belowHalf;
  return k;
}

/// The block's 64 codes in channel order (packCodesInLanes undoes the interleave).
inline __m512i blockCodes(__m512i acc0, __m512i acc1, __m512i acc2, __m512i acc3, const BlockConstants& k,
                          const RequantRange& range, const CodeRange& codes) {
  if (k.belowHalf)
    return packCodesInLanes(scaledBelowHalf16(acc0, k.scale[0]), scaledBelowHalf16(acc1, k.scale[1]),
                            scaledBelowHalf16(acc2, k.scale[2]), scaledBelowHalf16(acc3, k.scale[3]), codes);
  return packCodesInLanes(scaled16(acc0, k.scale[0], range), scaled16(acc1, k.scale[1], range),
                          scaled16(acc2, k.scale[2], range), scaled16(acc3, k.scale[3], range), codes);
}

/// The 4 * groups tap sources of pixel x (Int8DepthwiseRowArgs).
inline void tapSources(const Int8DepthwiseRowArgs& t, int64_t x, const uint8_t** out) {
  const int64_t n = 4 * t.groups;
  if (x >= t.interiorBegin && x < t.interiorEnd) {
    const int64_t at = x * t.stride;
    for (int64_t i = 0; i < n; ++i) out[i] = t.rows[i] + (t.offsets[i] + at);
    return;
  }
  std::memcpy(out, t.sources + x * n, size_t(n) * sizeof(const uint8_t*));
}

/// The 64 codes of one pixel of a full block; tapAt(i) is tap i's first code of the block.
template <typename TapAt>
inline __m512i blockPixel(const BlockConstants& k, int64_t groups, const int8_t* weights, __mmask64 valid,
                          __m512i flip, TapAt tapAt, const RequantRange& range, const CodeRange& codes) {
  __m512i acc0 = k.correction[0], acc1 = k.correction[1], acc2 = k.correction[2], acc3 = k.correction[3];
  for (int64_t g = 0; g < groups; ++g) {
    auto codesOf = [&](int tap) {
      return _mm512_xor_si512(_mm512_maskz_loadu_epi8(valid, tapAt(4 * g + tap)), flip);
    };
    accumulateGroup(acc0, acc1, acc2, acc3, codesOf(0), codesOf(1), codesOf(2), codesOf(3),
                    weights + g * 4 * kBlock);
  }
  return blockCodes(acc0, acc1, acc2, acc3, k, range, codes);
}

/// A block of at most 32 channels: two pixels per vector, pixel x in the low
/// 256 bits and x + 1 in the high, the block's taps and constants (lanes 0
/// and 1) copied into lanes 2 and 3.
void depthwiseHalfBlock(const Int8DepthwiseRowArgs& t, int64_t ch, const int8_t* weights,
                        const int32_t* constants, const RequantRange& range, const CodeRange& codes,
                        __m512i flip) {
  thread_local std::vector<int8_t> pairWeights;
  pairWeights.resize(size_t(t.groups * 4 * kBlock));
  for (int64_t v = 0; v < t.groups * 4; ++v) {
    std::memcpy(pairWeights.data() + v * kBlock, weights + v * kBlock, kBlock / 2);
    std::memcpy(pairWeights.data() + v * kBlock + kBlock / 2, weights + v * kBlock, kBlock / 2);
  }
  int32_t pairConstants[3 * kBlock];
  for (int64_t v = 0; v < 3 * 4; ++v) {
    std::memcpy(pairConstants + v * 16, constants + v * 16, 8 * sizeof(int32_t));
    std::memcpy(pairConstants + v * 16 + 8, constants + v * 16, 8 * sizeof(int32_t));
  }
  const BlockConstants k = blockConstants(pairConstants);
  const __mmask32 valid = t.c - ch >= 32 ? ~__mmask32(0) : (__mmask32(1) << (t.c - ch)) - 1;
  thread_local std::vector<const uint8_t*> pointers;
  pointers.resize(size_t(8 * t.groups));
  for (int64_t x = 0; x < t.pixels; x += 2) {
    const bool second = x + 1 < t.pixels;
    const uint8_t** srcA = pointers.data();
    const uint8_t** srcB = srcA + 4 * t.groups;
    tapSources(t, x, srcA);
    tapSources(t, second ? x + 1 : x, srcB);
    __m512i acc0 = k.correction[0], acc1 = k.correction[1], acc2 = k.correction[2], acc3 = k.correction[3];
    for (int64_t g = 0; g < t.groups; ++g, srcA += 4, srcB += 4) {
      auto codesOf = [&](int tap) {
        const __m256i a = _mm256_maskz_loadu_epi8(valid, srcA[tap] + ch);
        const __m256i b = _mm256_maskz_loadu_epi8(valid, srcB[tap] + ch);
        return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1), flip);
      };
      accumulateGroup(acc0, acc1, acc2, acc3, codesOf(0), codesOf(1), codesOf(2), codesOf(3),
                      pairWeights.data() + g * 4 * kBlock);
    }
    const __m512i packed = blockCodes(acc0, acc1, acc2, acc3, k, range, codes);
    _mm256_mask_storeu_epi8(t.out + x * t.c + ch, valid, _mm512_castsi512_si256(packed));
    if (second)
      _mm256_mask_storeu_epi8(t.out + (x + 1) * t.c + ch, valid, _mm512_extracti64x4_epi64(packed, 1));
  }
}

}  // namespace

/// Per block of 64 channels, every pixel of the row: four taps' 64 codes
/// (as u8: i8 codes ^ 0x80) are interleaved by vpunpck{l,h}bw and
/// vpunpck{l,h}wd into four vectors of 16 channels x 4 taps, each multiplied
/// with its packed taps by vpdpbusd (u8 x s8, wrapping int32 sums). The
/// interleave takes channels 16L + 4j .. 16L + 4j + 3 of each 128-bit lane L
/// into vector j; the weights and constants are packed in that order, and
/// vpackssdw / vpacksswb undo it. Padding taps read the zero point's row:
/// the correction's -zu * sum(taps) cancels their products. A last block of
/// at most 32 channels takes two pixels at a time (depthwiseHalfBlock).
void int8DepthwiseRowVnni(const Int8DepthwiseRowArgs& t) {
  const RequantRange range = requantRange(t.zero, t.lo, t.hi);
  const CodeRange codes = codeRange(t.zero, t.lo, t.hi);
  const __m512i flip = _mm512_set1_epi8(t.inputSigned ? char(0x80) : 0);
  for (int64_t ch = 0; ch < t.c; ch += kBlock) {
    const int64_t block = ch / kBlock;
    const int32_t* constants = t.constants + block * 3 * kBlock;
    const int8_t* weights = t.quadWeights + block * t.groups * 4 * kBlock;
    if (t.c - ch <= kBlock / 2) {
      depthwiseHalfBlock(t, ch, weights, constants, range, codes, flip);
      continue;
    }
    const __mmask64 valid = t.c - ch >= kBlock ? ~__mmask64(0) : (__mmask64(1) << (t.c - ch)) - 1;
    const BlockConstants k = blockConstants(constants);
    const int64_t n = 4 * t.groups;
    auto edgePixel = [&](int64_t x) {
      const uint8_t* const* src = t.sources + x * n;
      _mm512_mask_storeu_epi8(
          t.out + x * t.c + ch, valid,
          blockPixel(
              k, t.groups, weights, valid, flip, [&](int64_t i) { return src[i] + ch; }, range, codes));
    };
    for (int64_t x = 0; x < t.interiorBegin; ++x) edgePixel(x);
    for (int64_t x = t.interiorBegin; x < t.interiorEnd; ++x) {
      const int64_t at = x * t.stride + ch;
      _mm512_mask_storeu_epi8(t.out + x * t.c + ch, valid,
                              blockPixel(
                                  k, t.groups, weights, valid, flip,
                                  [&](int64_t i) { return t.rows[i] + (t.offsets[i] + at); }, range, codes));
    }
    for (int64_t x = t.interiorEnd; x < t.pixels; ++x) edgePixel(x);
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
/// total = acc + correction (wrapping int32), then QuantMath.h's requantize
/// (the conv tile's scaled16 and packCodes), stored as 8-bit codes.
/// Bit-exact with quant::requantize (the unit test compares them on extreme
/// values).
void int8RequantizeAvx512(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                          const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi,
                          uint8_t* out) {
  const RequantRange range = requantRange(zero, lo, hi);
  const CodeRange codes = codeRange(zero, lo, hi);
  const __m512i none = _mm512_setzero_si512();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 valid = firstLanes(n - j);
    const __m512i total = _mm512_add_epi32(_mm512_maskz_loadu_epi32(valid, acc + j),
                                           _mm512_maskz_loadu_epi32(valid, correction + j));
    const __m512i v = scaled16(total, scaleConstants(multiplier + j, shift + j, valid), range);
    _mm512_mask_storeu_epi8(out + j, valid, packCodes(v, none, none, none, codes));
  }
}

}  // namespace ember::cpu
