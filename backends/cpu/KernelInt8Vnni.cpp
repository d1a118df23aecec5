// The AVX-512 VNNI int8 kernels (KernelInt8.h): the 6 x 32 int32 tile of
// vpdpbusd (u8 x s8, four products summed into each int32 lane, wrapping, no
// intermediate saturation) with the requantizing epilogue in its registers,
// and that epilogue alone for the other int8 kernels. The only file built
// with -mavx512vnni.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_*() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
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

// The table-lookup add (Int8AddPlanes), 64 lanes at a time: each operand's
// 64 codes index its four byte planes (vpermi2b over 128 entries twice, the
// code's top bit choosing), the bytes are interleaved into four vectors of
// 16 int32 values (vpunpck: vector j holds elements 16L + 4j .. 16L + 4j + 3
// of 128-bit lane L), added (two values below 2^30 cannot saturate int32,
// so the spec's clamp is the identity), requantized on the fast path
// (Scale16) and packed back in element order (packCodesInLanes undoes the
// interleave). Bit-exact with quant::addQuantized (cpu_int8_kernel_test).
// Built for AVX-512 VBMI by a target attribute; run only when the CPU has it.
#define EMBER_VBMI __attribute__((target("avx512vbmi")))

namespace {

EMBER_VBMI inline __m512i planeLookup(const uint8_t* plane, __m512i codes, __mmask64 high) {
  const __m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(plane), codes, _mm512_load_si512(plane + 64));
  const __m512i hi =
      _mm512_permutex2var_epi8(_mm512_load_si512(plane + 128), codes, _mm512_load_si512(plane + 192));
  return _mm512_mask_blend_epi8(high, lo, hi);
}

/// The scaled operand of 64 codes as four vectors of int32 (in the interleave's order).
EMBER_VBMI inline void operandValues(const uint8_t (*planes)[256], __m512i codes, __m512i v[4]) {
  const __mmask64 high = _mm512_movepi8_mask(codes);
  const __m512i b0 = planeLookup(planes[0], codes, high), b1 = planeLookup(planes[1], codes, high);
  const __m512i b2 = planeLookup(planes[2], codes, high), b3 = planeLookup(planes[3], codes, high);
  const __m512i lo01 = _mm512_unpacklo_epi8(b0, b1), hi01 = _mm512_unpackhi_epi8(b0, b1);
  const __m512i lo23 = _mm512_unpacklo_epi8(b2, b3), hi23 = _mm512_unpackhi_epi8(b2, b3);
  v[0] = _mm512_unpacklo_epi16(lo01, lo23);
  v[1] = _mm512_unpackhi_epi16(lo01, lo23);
  v[2] = _mm512_unpacklo_epi16(hi01, hi23);
  v[3] = _mm512_unpackhi_epi16(hi01, hi23);
}

/// The output's requantization for the lookup add.
struct LookupAdd {
  const Int8AddPlanes* planes;
  Scale16 scale;
  CodeRange codes;
};

/// Built per tile: from broadcasts (int8AddPlanesAvx512 checked outShift >= 1,
/// the fast path), not through arrays in memory as scaleConstants.
LookupAdd lookupAdd(const Int8AddCall& t, const Int8AddPlanes* planes) {
  Scale16 k;
  k.belowHalf = true;
  k.multEven = k.multOdd = _mm512_set1_epi64(int64_t(uint32_t(t.outMultiplier)));
  k.shiftEven = k.shiftOdd = _mm512_set1_epi64(t.outShift - 1);
  k.halfEven = k.halfOdd = _mm512_set1_epi64((int64_t(1) << 31) << (t.outShift - 1));
  return {planes, k, codeRange(t.outZero, t.lo, t.hi)};
}

/// addQuantized of 64 codes of a and b.
EMBER_VBMI inline __m512i add64(const LookupAdd& k, __m512i a, __m512i b) {
  __m512i va[4], vb[4];
  operandValues(k.planes->a, a, va);
  operandValues(k.planes->b, b, vb);
  auto sum = [&](int j) { return scaledBelowHalf16(_mm512_add_epi32(va[j], vb[j]), k.scale); };
  return packCodesInLanes(sum(0), sum(1), sum(2), sum(3), k.codes);
}

/// Two rows of at most 32 codes in one vector (row r in the low half).
EMBER_VBMI inline __m512i twoRows(const uint8_t* p, int64_t ld, __mmask32 columns, bool second) {
  const __m256i first = _mm256_maskz_loadu_epi8(columns, p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(first),
                            second ? _mm256_maskz_loadu_epi8(columns, p + ld) : _mm256_setzero_si256(), 1);
}

/// Rows r .. r + 3 of at most 16 codes in one vector (row r in the lowest 128 bits); rows past `rows` read 0.
EMBER_VBMI inline __m512i fourRows(const uint8_t* p, int64_t ld, __mmask16 columns, int64_t rows) {
  __m512i v = _mm512_setzero_si512();
  if (rows > 0) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(columns, p), 0);
  if (rows > 1) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(columns, p + ld), 1);
  if (rows > 2) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(columns, p + 2 * ld), 2);
  if (rows > 3) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(columns, p + 3 * ld), 3);
  return v;
}

}  // namespace

namespace {

/// Stores the first `count` of the kSlices equal slices of `packed` (32 or
/// 16 codes each, the `valid` ones) at out, out + stride, ...: the tile's
/// output rows and the depthwise kernel's pixels.
template <int kSlices>
inline void storeSlices(__m512i packed, uint8_t* out, int64_t stride, int64_t count, __mmask64 valid) {
  if constexpr (kSlices == 2) {
    _mm256_mask_storeu_epi8(out, __mmask32(valid), _mm512_castsi512_si256(packed));
    if (count > 1)
      _mm256_mask_storeu_epi8(out + stride, __mmask32(valid), _mm512_extracti64x4_epi64(packed, 1));
  } else {
    static_assert(kSlices == 4);
    _mm_mask_storeu_epi8(out, __mmask16(valid), _mm512_castsi512_si128(packed));
    if (count > 1) _mm_mask_storeu_epi8(out + stride, __mmask16(valid), _mm512_extracti32x4_epi32(packed, 1));
    if (count > 2)
      _mm_mask_storeu_epi8(out + 2 * stride, __mmask16(valid), _mm512_extracti32x4_epi32(packed, 2));
    if (count > 3)
      _mm_mask_storeu_epi8(out + 3 * stride, __mmask16(valid), _mm512_extracti32x4_epi32(packed, 3));
  }
}

/// A panel's constants for every row group of the tile.
struct PanelConstants {
  RequantRange range;
  CodeRange codes;
  Scale16 k0, k1;  ///< the requantization of columns 0-15 and 16-31
  bool belowHalf;
  __m512i correction0, correction1;
  __mmask32 columns;  ///< the panel's valid columns
};

PanelConstants panelConstants(const Int8TileArgs& t) {
  PanelConstants p;
  p.range = requantRange(t.zero, t.lo, t.hi);
  p.codes = codeRange(t.zero, t.lo, t.hi);
  p.k0 = scaleConstants(t.multiplier, t.shift, firstLanes(t.cols));
  p.k1 = scaleConstants(t.multiplier + 16, t.shift + 16, firstLanes(t.cols - 16));
  p.belowHalf = p.k0.belowHalf && p.k1.belowHalf;
  p.correction0 = _mm512_loadu_si512(t.correction);
  p.correction1 = _mm512_loadu_si512(t.correction + 16);
  p.columns = t.cols >= 32 ? ~__mmask32(0) : (__mmask32(1) << t.cols) - 1;
  return p;
}

/// Rows [r0, r0 + 6) of the tile (fewer at the end); with kAdd, each pair (or
/// four) of its output rows goes through the lookup add with the residual's
/// codes in registers before the store.
template <bool kAdd>
__attribute__((always_inline)) inline void vnniRowGroup(const Int8TileArgs& t, const PanelConstants& p,
                                                        int64_t r0, const LookupAdd* add) {
  static_assert(kInt8VnniTileRows == 6);
  const int64_t rows = std::min<int64_t>(kInt8VnniTileRows, t.rows - r0), lda = t.lda;
  uint8_t* const out = t.out + r0 * t.ldo;
  const uint8_t* const residual = kAdd ? t.residual + r0 * t.ldr : nullptr;
  // Named accumulators, not an array: GCC keeps an array that inline asm
  // writes in memory. They start from the correction (bias - zu * sum(w)).
  __m512i c00 = p.correction0, c10 = p.correction0, c20 = p.correction0, c30 = p.correction0,
          c40 = p.correction0, c50 = p.correction0;
  __m512i c01 = p.correction1, c11 = p.correction1, c21 = p.correction1, c31 = p.correction1,
          c41 = p.correction1, c51 = p.correction1;
  const int8_t* b = t.b;
  const uint8_t* a = t.a + r0 * lda;
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
  // Rows r and r + 1 from 64 packed codes (32 each), the panel's last columns masked.
  auto storeTwoRows = [&](int r, __m512i packed) {
    if (r >= rows) return;
    if constexpr (kAdd)
      packed = add64(*add, packed, twoRows(residual + r * t.ldr, t.ldr, p.columns, r + 1 < rows));
    storeSlices<2>(packed, out + r * t.ldo, t.ldo, rows - r, p.columns);
  };
  // At most 16 columns: rows r .. r + 3 from 64 packed codes (16 each).
  auto storeFourRows = [&](int r, __m512i packed) {
    if (r >= rows) return;
    if constexpr (kAdd)
      packed = add64(*add, packed, fourRows(residual + r * t.ldr, t.ldr, __mmask16(p.columns), rows - r));
    storeSlices<4>(packed, out + r * t.ldo, t.ldo, rows - r, p.columns);
  };
  // Straight-line code over the named accumulators (a loop over an array of
  // them kept the array in memory), one instance per requantization path.
  auto finish = [&](auto scale) {
    const Scale16 &k0 = p.k0, &k1 = p.k1;
    if (t.cols <= 16) {
      storeFourRows(0, packCodes(scale(c00, k0), scale(c10, k0), scale(c20, k0), scale(c30, k0), p.codes));
      const __m512i r4 = scale(c40, k0), r5 = scale(c50, k0);
      storeFourRows(4, packCodes(r4, r5, r5, r5, p.codes));
      return;
    }
    storeTwoRows(0, packCodes(scale(c00, k0), scale(c01, k1), scale(c10, k0), scale(c11, k1), p.codes));
    storeTwoRows(2, packCodes(scale(c20, k0), scale(c21, k1), scale(c30, k0), scale(c31, k1), p.codes));
    storeTwoRows(4, packCodes(scale(c40, k0), scale(c41, k1), scale(c50, k0), scale(c51, k1), p.codes));
  };
  if (p.belowHalf)
    finish([](__m512i total, const Scale16& k) { return scaledBelowHalf16(total, k); });
  else
    finish([&](__m512i total, const Scale16& k) { return scaled16(total, k, p.range); });
}

/// The tile over t.rows rows, a row group at a time, the panel's
/// requantization constants made once for them all.
template <bool kAdd>
__attribute__((always_inline)) inline void vnniTile(const Int8TileArgs& t, const LookupAdd* add) {
  const PanelConstants p = panelConstants(t);
  for (int64_t r0 = 0; r0 < t.rows; r0 += kInt8VnniTileRows) vnniRowGroup<kAdd>(t, p, r0, add);
}

}  // namespace

void int8TileVnniRequant(const Int8TileArgs& t) { vnniTile<false>(t, nullptr); }

// flatten: the VBMI helpers inline into the tile here (not into vnniTile, which lacks VBMI), so the
// accumulators are not spilled around calls.
__attribute__((flatten)) EMBER_VBMI void int8TileVnniRequantAdd(const Int8TileArgs& t, const Int8AddCall& add,
                                                                const Int8AddPlanes* planes) {
  const LookupAdd k = lookupAdd(add, planes);
  vnniTile<true>(t, &k);
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

/// Each tap's address plus `ch` at the first interior pixel (inside its row,
/// unlike pixel 0's): interior pixel x reads tap i at
/// bases[i] + (x - interiorBegin) * stride. Made once per row and block, it
/// saves the pixels two loads and adds per tap. Empty without interior pixels.
const uint8_t* const* interiorTapBases(const Int8DepthwiseRowArgs& t, int64_t ch) {
  thread_local std::vector<const uint8_t*> bases;
  const int64_t n = 4 * t.groups;
  bases.assign(size_t(n), nullptr);
  if (t.interiorBegin < t.interiorEnd)
    for (int64_t i = 0; i < n; ++i)
      bases[size_t(i)] = t.rows[i] + (t.offsets[i] + t.interiorBegin * t.stride + ch);
  return bases.data();
}

/// The 4 * groups tap sources of pixel x (Int8DepthwiseRowArgs; bases from interiorTapBases with ch 0).
inline void tapSources(const Int8DepthwiseRowArgs& t, const uint8_t* const* bases, int64_t x,
                       const uint8_t** out) {
  const int64_t n = 4 * t.groups;
  if (x >= t.interiorBegin && x < t.interiorEnd) {
    const int64_t at = (x - t.interiorBegin) * t.stride;
    for (int64_t i = 0; i < n; ++i) out[i] = bases[i] + at;
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

/// kPixels pixel's codes of one tap in one vector: pixel p's (at most 64 /
/// kPixels) codes from src[p] in the p-th 64 / kPixels bytes.
template <int kPixels>
inline __m512i pixelCodes(const uint8_t* const* src, __mmask64 valid) {
  if constexpr (kPixels == 2) {
    const __m256i a = _mm256_maskz_loadu_epi8(__mmask32(valid), src[0]);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), _mm256_maskz_loadu_epi8(__mmask32(valid), src[1]),
                              1);
  } else {
    static_assert(kPixels == 4);
    __m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(__mmask16(valid), src[0]));
    v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(__mmask16(valid), src[1]), 1);
    v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(__mmask16(valid), src[2]), 2);
    return _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(__mmask16(valid), src[3]), 3);
  }
}

/// A last block of at most 64 / kPixels channels (32 or 16): kPixels pixels
/// per vector, pixel x + p in the p-th 64 / kPixels bytes (128-bit lanes
/// hold 16 channels each, and the interleave stays inside a lane), the
/// block's taps and constants of those first lanes copied into the others.
/// mobilenet_v2's 144 channels end in 16: four pixels per vector made that
/// tail's cost a quarter of a full block per pixel instead of a half.
template <int kPixels>
void depthwisePartialBlock(const Int8DepthwiseRowArgs& t, int64_t ch, const int8_t* weights,
                           const int32_t* constants, const RequantRange& range, const CodeRange& codes,
                           __m512i flip) {
  constexpr int64_t kLanes = kBlock / kPixels;  // codes per pixel: 32 or 16
  constexpr int64_t kInts = 16 / kPixels;       // int32 lanes per pixel in a vector of 16
  thread_local std::vector<int8_t> copiedWeights;
  copiedWeights.resize(size_t(t.groups * 4 * kBlock));
  for (int64_t v = 0; v < t.groups * 4; ++v)
    for (int64_t p = 0; p < kPixels; ++p)
      std::memcpy(copiedWeights.data() + v * kBlock + p * kLanes, weights + v * kBlock, kLanes);
  int32_t copiedConstants[3 * kBlock];
  for (int64_t v = 0; v < 3 * 4; ++v)
    for (int64_t p = 0; p < kPixels; ++p)
      std::memcpy(copiedConstants + v * 16 + p * kInts, constants + v * 16, kInts * sizeof(int32_t));
  const BlockConstants k = blockConstants(copiedConstants);
  const __mmask64 valid =
      t.c - ch >= kLanes ? (__mmask64(1) << kLanes) - 1 : (__mmask64(1) << (t.c - ch)) - 1;
  thread_local std::vector<const uint8_t*> pointers;
  pointers.resize(size_t(kPixels * 4 * t.groups));
  // With exactly 64 / kPixels channels and stride 1, the pixels x .. x + kPixels - 1
  // of a tap are the 64 bytes at pixel x's source: inside the row, one load.
  const bool inOneLoad = t.c == kLanes && t.stride == kLanes;
  const uint8_t* const* bases = interiorTapBases(t, 0);
  for (int64_t x = 0; x < t.pixels; x += kPixels) {
    const int64_t pixels = std::min<int64_t>(kPixels, t.pixels - x);
    if (inOneLoad && x >= t.interiorBegin && x + kPixels <= t.interiorEnd) {
      const int64_t at = (x - t.interiorBegin) * t.stride;
      const __m512i packed = blockPixel(
          k, t.groups, copiedWeights.data(), ~__mmask64(0), flip, [&](int64_t i) { return bases[i] + at; },
          range, codes);
      _mm512_storeu_si512(t.out + x * t.c, packed);
      continue;
    }
    const uint8_t** src[kPixels];
    for (int64_t p = 0; p < kPixels; ++p) {
      src[p] = pointers.data() + p * 4 * t.groups;
      tapSources(t, bases, x + std::min(p, pixels - 1), src[p]);
    }
    __m512i acc0 = k.correction[0], acc1 = k.correction[1], acc2 = k.correction[2], acc3 = k.correction[3];
    for (int64_t g = 0; g < t.groups; ++g) {
      auto codesOf = [&](int tap) {
        const uint8_t* at[kPixels];
        for (int64_t p = 0; p < kPixels; ++p) at[p] = src[p][4 * g + tap] + ch;
        return _mm512_xor_si512(pixelCodes<kPixels>(at, valid), flip);
      };
      accumulateGroup(acc0, acc1, acc2, acc3, codesOf(0), codesOf(1), codesOf(2), codesOf(3),
                      copiedWeights.data() + g * 4 * kBlock);
    }
    storeSlices<kPixels>(blockCodes(acc0, acc1, acc2, acc3, k, range, codes), t.out + x * t.c + ch, t.c,
                         pixels, valid);
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
    if (t.c - ch <= kBlock / 4) {
      depthwisePartialBlock<4>(t, ch, weights, constants, range, codes, flip);
      continue;
    }
    if (t.c - ch <= kBlock / 2) {
      depthwisePartialBlock<2>(t, ch, weights, constants, range, codes, flip);
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
    const uint8_t* const* base = interiorTapBases(t, ch);
    for (int64_t x = t.interiorBegin; x < t.interiorEnd; ++x) {
      const int64_t at = (x - t.interiorBegin) * t.stride;
      _mm512_mask_storeu_epi8(
          t.out + x * t.c + ch, valid,
          blockPixel(
              k, t.groups, weights, valid, flip, [&](int64_t i) { return base[i] + at; }, range, codes));
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

namespace {

/// addQuantized's constants for 16 lanes, built once per call.
struct AddConstants {
  Requant16 a, b, out;
  RequantRange range, int32Range;
  __m512i aZero, bZero;
  bool aSigned, bSigned;
  explicit AddConstants(const Int8AddCall& t)
      : a(uniformConstants(t.aMultiplier, t.aShift)),
        b(uniformConstants(t.bMultiplier, t.bShift)),
        out(uniformConstants(t.outMultiplier, t.outShift)),
        range(requantRange(t.outZero, t.lo, t.hi)),
        int32Range(requantRange(0, INT32_MIN, INT32_MAX)),
        aZero(_mm512_set1_epi32(t.aZero)),
        bZero(_mm512_set1_epi32(t.bZero)),
        aSigned(t.aSigned != 0),
        bSigned(t.bSigned != 0) {}
};

/// addQuantized of the `valid` lanes of a and b into out (out may be b).
inline void add16(const AddConstants& k, const uint8_t* a, const uint8_t* b, uint8_t* out, __mmask16 valid) {
  __m512i aEven, aOdd, bEven, bOdd;
  scaleOperand(a, valid, k.aSigned, k.aZero, k.a, aEven, aOdd);
  scaleOperand(b, valid, k.bSigned, k.bZero, k.b, bEven, bOdd);
  auto saturate = [&](__m512i v) {
    return _mm512_min_epi64(_mm512_max_epi64(v, k.int32Range.lo), k.int32Range.hi);
  };
  // The sums as int32 again: even lanes in place, odd lanes shifted up.
  const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
  const __m512i sum = _mm512_or_si512(_mm512_and_si512(saturate(_mm512_add_epi64(aEven, bEven)), low32),
                                      _mm512_slli_epi64(saturate(_mm512_add_epi64(aOdd, bOdd)), 32));
  _mm512_mask_cvtepi32_storeu_epi8(out, valid, requantize16(sum, k.out, k.range));
}

}  // namespace

namespace {

EMBER_VBMI void addLookup(const Int8AddCall& t, const Int8AddPlanes* planes, int64_t begin, int64_t end) {
  const LookupAdd k = lookupAdd(t, planes);
  for (int64_t i = begin; i < end; i += 64) {
    const __mmask64 valid = end - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (end - i)) - 1;
    _mm512_mask_storeu_epi8(
        t.out + i, valid,
        add64(k, _mm512_maskz_loadu_epi8(valid, t.a + i), _mm512_maskz_loadu_epi8(valid, t.b + i)));
  }
}

EMBER_VBMI void addBlockLookup(const Int8AddCall& t, const Int8AddPlanes* planes, const uint8_t* a,
                               int64_t lda, const uint8_t* b, int64_t ldb, uint8_t* out, int64_t ldo,
                               int64_t rows, int64_t cols) {
  const LookupAdd k = lookupAdd(t, planes);
  for (int64_t c0 = 0; c0 < cols; c0 += 32) {
    const int64_t n = std::min<int64_t>(32, cols - c0);
    const __mmask32 columns = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
    for (int64_t r = 0; r < rows; r += 2) {
      const bool second = r + 1 < rows;
      const __m512i codes = add64(k, twoRows(a + r * lda + c0, lda, columns, second),
                                  twoRows(b + r * ldb + c0, ldb, columns, second));
      _mm256_mask_storeu_epi8(out + r * ldo + c0, columns, _mm512_castsi512_si256(codes));
      if (second)
        _mm256_mask_storeu_epi8(out + (r + 1) * ldo + c0, columns, _mm512_extracti64x4_epi64(codes, 1));
    }
  }
}

/// table[q] = the scaled operand of code q (64-bit arithmetic, 16 codes at a
/// time), as byte planes; false when one is 2^30 or more in magnitude.
bool fillPlanes(uint8_t (*planes)[256], bool isSigned, __m512i zero, const Requant16& k) {
  const __m512i limit = _mm512_set1_epi64(int64_t(1) << 30),
                negLimit = _mm512_set1_epi64(-(int64_t(1) << 30));
  uint8_t codes[16];
  int32_t values[16];
  bool small = true;
  for (int c0 = 0; c0 < 256; c0 += 16) {
    for (int i = 0; i < 16; ++i) codes[i] = uint8_t(c0 + i);
    __m512i even, odd;
    scaleOperand(codes, 0xFFFF, isSigned, zero, k, even, odd);
    for (__m512i v : {even, odd})
      small = small && _mm512_cmpge_epi64_mask(v, limit) == 0 && _mm512_cmple_epi64_mask(v, negLimit) == 0;
    // Low dwords: the even lanes' in place, the odd lanes' moved up.
    _mm512_storeu_si512(values, _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32)));
    for (int i = 0; i < 16; ++i)
      for (int p = 0; p < 4; ++p) planes[p][c0 + i] = uint8_t(uint32_t(values[i]) >> (8 * p));
  }
  return small;
}

bool hostHasVbmi() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
}

}  // namespace

bool int8AddPlanesAvx512(const Int8AddCall& t, Int8AddPlanes& planes) {
  static const bool vbmi = hostHasVbmi();
  if (!vbmi || t.outShift < 1) return false;  // the output's fast path needs a multiplier below 1/2
  const AddConstants k(t);
  return fillPlanes(planes.a, k.aSigned, k.aZero, k.a) && fillPlanes(planes.b, k.bSigned, k.bZero, k.b);
}

/// QuantizedAdd of elements [begin, end): the lookup add with planes, else
/// the arithmetic 16 at a time (the tail masked); bit-exact with
/// quant::addQuantized either way.
void int8AddAvx512(const Int8AddCall& t, const Int8AddPlanes* planes, int64_t begin, int64_t end) {
  if (planes) return addLookup(t, planes, begin, end);
  const AddConstants k(t);
  for (int64_t i = begin; i < end; i += 16) add16(k, t.a + i, t.b + i, t.out + i, firstLanes(end - i));
}

/// The int8 conv's fused residual add (KernelInt8.h, int8AddBlock): a tile's rows x cols.
void int8AddBlockAvx512(const Int8AddCall& t, const Int8AddPlanes* planes, const uint8_t* a, int64_t lda,
                        const uint8_t* b, int64_t ldb, uint8_t* out, int64_t ldo, int64_t rows,
                        int64_t cols) {
  if (planes) return addBlockLookup(t, planes, a, lda, b, ldb, out, ldo, rows, cols);
  const AddConstants k(t);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; j += 16)
      add16(k, a + r * lda + j, b + r * ldb + j, out + r * ldo + j, firstLanes(cols - j));
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
