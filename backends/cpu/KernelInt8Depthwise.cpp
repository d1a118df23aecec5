// The int8 depthwise convolution (QuantizedConv with group == C == O), NHWC:
// per output pixel, int32 accumulators over the channels (vectorised by the
// compiler), padding taps skipped as in the spec, then the requantizing
// epilogue of the chosen ISA (int8Requantize).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "KernelInt8.h"
#include "KernelInt8Tile.h"
#include "ThreadPool.h"
#include "ember/QuantMath.h"

namespace ember::cpu {

void int8DepthwiseRowVnni(const Int8DepthwiseRowArgs& t);  // KernelInt8Vnni.cpp

namespace {

/// The VNNI kernel's part of the block, after the int32 taps and the four
/// per-channel rows: per block of 64 channels, the taps in groups of four
/// ([groups][4 vectors][64] bytes), then bias, the sum of the taps,
/// multiplier and shift ([4][64] int32), in the order of the kernel's
/// interleave (Int8DepthwiseRowArgs).
constexpr int64_t kBlock = kInt8DepthwiseBlock;
int64_t channelBlocks(int64_t c) { return (c + kBlock - 1) / kBlock; }
int64_t tapGroups(int64_t taps) { return (taps + 3) / 4; }

/// Where channel i of a 64-channel block sits after the interleave: vector j
/// lane 4L + p holds channel 16L + 4j + p.
int64_t interleavedVector(int64_t i) { return i % 16 / 4; }
int64_t interleavedLane(int64_t i) { return i / 16 * 4 + i % 4; }

int64_t quadWeightBytes(int64_t taps, int64_t c) { return channelBlocks(c) * tapGroups(taps) * 4 * kBlock; }

}  // namespace

size_t int8DepthwiseWeightBytes(int64_t taps, int64_t c) {
  return sizeof(int32_t) * size_t((taps + 4) * c + channelBlocks(c) * 4 * kBlock) +
         size_t(quadWeightBytes(taps, c));
}

void packInt8Depthwise(const int8_t* filter, const int32_t* bias, const float* filterScales, float inScale,
                       float outScale, int64_t taps, int64_t c, uint8_t* block) {
  auto* w = reinterpret_cast<int32_t*>(block);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t t = 0; t < taps; ++t) w[t * c + ch] = filter[ch * taps + t];  // [C, KH, KW, 1] -> [taps][C]
  int32_t* tail = w + taps * c;
  for (int64_t ch = 0; ch < c; ++ch) {
    const quant::FixedPointMultiplier m = quant::outputMultiplier(inScale, filterScales[ch], outScale);
    tail[ch] = bias[ch];
    tail[c + ch] = m.multiplier;
    tail[2 * c + ch] = m.shift;
    tail[3 * c + ch] = 0;  // the epilogue's correction: the bias is already in the sum
  }
  const int64_t groups = tapGroups(taps);
  int32_t* constants = tail + 4 * c;
  auto* quads = reinterpret_cast<int8_t*>(constants + channelBlocks(c) * 4 * kBlock);
  std::fill(quads, quads + quadWeightBytes(taps, c), int8_t(0));
  for (int64_t b = 0; b < channelBlocks(c); ++b) {
    int32_t* k = constants + b * 4 * kBlock;
    for (int64_t i = 0; i < kBlock; ++i) {
      const int64_t ch = b * kBlock + i, at = interleavedVector(i) * 16 + interleavedLane(i);
      // Channels past c: multiplier 0 and shift 1 keep the kernel's block on its fast path.
      k[at] = 0;
      k[kBlock + at] = 0;
      k[2 * kBlock + at] = 0;
      k[3 * kBlock + at] = 1;
      if (ch >= c) continue;
      uint32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int8_t tap = filter[ch * taps + t];
        sum += uint32_t(int32_t(tap));
        quads[((b * groups + t / 4) * 4 + interleavedVector(i)) * kBlock + interleavedLane(i) * 4 + t % 4] =
            tap;
      }
      k[at] = bias[ch];
      k[kBlock + at] = int32_t(sum);
      k[2 * kBlock + at] = tail[c + ch];
      k[3 * kBlock + at] = tail[2 * c + ch];
    }
  }
}

namespace {

template <typename Code>
void depthwiseRows(const Int8DepthwiseCall& call, int64_t row, Int8Isa isa, std::vector<int32_t>& acc) {
  const int64_t c = call.c, taps = call.kh * call.kw;
  const auto* w = reinterpret_cast<const int32_t*>(call.weights);
  const int32_t* bias = w + taps * c;
  const int32_t *multiplier = bias + c, *shift = bias + 2 * c, *zeros = bias + 3 * c;
  const int64_t img = row / call.oh, oy = row % call.oh;
  const auto* input = reinterpret_cast<const Code*>(call.input);
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    uint32_t* a = reinterpret_cast<uint32_t*>(acc.data());
    for (int64_t ch = 0; ch < c; ++ch) a[ch] = uint32_t(bias[ch]);
    for (int64_t ky = 0; ky < call.kh; ++ky) {
      const int64_t iy = oy * call.sh - call.pt + ky * call.dh;
      if (iy < 0 || iy >= call.h) continue;
      for (int64_t kx = 0; kx < call.kw; ++kx) {
        const int64_t ix = ox * call.sw - call.pl + kx * call.dw;
        if (ix < 0 || ix >= call.w) continue;
        const Code* src = input + ((img * call.h + iy) * call.w + ix) * c;
        const int32_t* tap = w + (ky * call.kw + kx) * c;
        for (int64_t ch = 0; ch < c; ++ch) a[ch] += uint32_t((int32_t(src[ch]) - call.inputZero) * tap[ch]);
      }
    }
    uint8_t* out = call.output + ((img * call.oh + oy) * call.ow + ox) * c;
    int8Requantize(isa, acc.data(), zeros, multiplier, shift, c, call.outputZero, call.lo, call.hi, out);
  }
}

/// Calls visit(tap, source pixel) for each tap of output pixel (row, ox)
/// inside the input, tap = ky * kw + kx, source = the pixel's first code.
template <typename Code, typename Visit>
void forEachTapInside(const Int8DepthwiseCall& call, int64_t row, int64_t ox, Visit&& visit) {
  const int64_t img = row / call.oh, oy = row % call.oh;
  const auto* input = reinterpret_cast<const Code*>(call.input);
  for (int64_t ky = 0; ky < call.kh; ++ky) {
    const int64_t iy = oy * call.sh - call.pt + ky * call.dh;
    if (iy < 0 || iy >= call.h) continue;
    for (int64_t kx = 0; kx < call.kw; ++kx) {
      const int64_t ix = ox * call.sw - call.pl + kx * call.dw;
      if (ix >= 0 && ix < call.w)
        visit(ky * call.kw + kx, input + ((img * call.h + iy) * call.w + ix) * call.c);
    }
  }
}

/// The output columns [begin, end) whose window is inside the input
/// horizontally: ox * sw - pl >= 0 and ox * sw - pl + (kw - 1) * dw < w.
struct InteriorColumns {
  int64_t begin, end;
};
InteriorColumns interiorColumns(const Int8DepthwiseCall& call) {
  const int64_t lastInside = call.w - 1 + call.pl - (call.kw - 1) * call.dw;
  const int64_t end = lastInside < 0 ? 0 : std::min(call.ow, lastInside / call.sw + 1);
  return {std::min(end, (call.pl + call.sw - 1) / call.sw), end};
}

/// 8 codes widened to int32 lanes.
__m256i widen8(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
__m256i widen8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

/// 16 codes widened to int16 lanes.
__m256i widen16(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__m256i widen16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

/// What the AVX2 kernel reads for a pixel whose window is inside the input,
/// made once per call: each tap's offset from the window's corner, and the
/// taps paired (0, 1), (2, 3), ... (an odd last one with 0): per pair and 16
/// channels, two vectors of 8 (tap, next tap) int16 pairs in the order
/// vpunpcklwd / vpunpckhwd interleave two pixels' codes: channels 0-3 and
/// 8-11, then 4-7 and 12-15.
struct Avx2InteriorTaps {
  std::vector<int64_t> offsets;
  std::vector<int16_t> pairs;
};

Avx2InteriorTaps avx2InteriorTaps(const Int8DepthwiseCall& call) {
  const int64_t c = call.c, taps = call.kh * call.kw, pairs = (taps + 1) / 2, blocks = c / 16;
  const auto* w = reinterpret_cast<const int32_t*>(call.weights);
  Avx2InteriorTaps result;
  result.offsets.resize(size_t(taps));
  for (int64_t ky = 0; ky < call.kh; ++ky)
    for (int64_t kx = 0; kx < call.kw; ++kx)
      result.offsets[size_t(ky * call.kw + kx)] = (ky * call.dh * call.w + kx * call.dw) * c;
  std::vector<int16_t>& out = result.pairs;
  out.resize(size_t(pairs * blocks * 32));
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t v = 0; v < 2; ++v)
        for (int64_t i = 0; i < 8; ++i) {
          const int64_t ch = b * 16 + (i < 4 ? i : i + 4) + v * 4;
          int16_t* pair = out.data() + ((p * blocks + b) * 2 + v) * 16 + 2 * i;
          pair[0] = int16_t(w[2 * p * c + ch]);
          pair[1] = 2 * p + 1 < taps ? int16_t(w[(2 * p + 1) * c + ch]) : int16_t(0);
        }
  return result;
}

/// A pixel whose every tap is inside the input (tap t at corner + offsets[t]), 16 channels at a time:
/// vpmaddwd of two taps' codes (minus the zero point, in int16) against
/// their weights gives 8 channels' two products summed, exactly, in int32.
template <typename Code>
void depthwisePixelPairsAvx2(const Int8DepthwiseCall& call, const Code* corner, const int64_t* offsets,
                             const int16_t* tapPairs, const int32_t* bias, int32_t* acc) {
  const int64_t count = call.kh * call.kw, pairs = (count + 1) / 2, blocks = call.c / 16;
  const __m256i zero = _mm256_set1_epi16(int16_t(call.inputZero));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t ch = b * 16;
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t p = 0; p < pairs; ++p) {
      const __m256i x0 = _mm256_sub_epi16(widen16(corner + offsets[2 * p] + ch), zero);
      const __m256i x1 = 2 * p + 1 < count ? _mm256_sub_epi16(widen16(corner + offsets[2 * p + 1] + ch), zero)
                                           : _mm256_setzero_si256();
      const int16_t* w = tapPairs + (p * blocks + b) * 32;
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
      hi = _mm256_add_epi32(hi,
                            _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
    }
    // lo holds channels 0-3 | 8-11, hi 4-7 | 12-15.
    const __m256i first = _mm256_permute2x128_si256(lo, hi, 0x20),
                  second = _mm256_permute2x128_si256(lo, hi, 0x31);
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(acc + ch),
        _mm256_add_epi32(first, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + ch))));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(acc + ch + 8),
        _mm256_add_epi32(second, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + ch + 8))));
  }
}

/// The same sums with the accumulators of 8 channels in a register across
/// the taps (vpmulld, wrapping vpaddd); channels past the last multiple of 8
/// take the scalar loop. A pixel with every tap inside the input runs its
/// channels up to the last multiple of 16 through depthwisePixelPairsAvx2.
template <typename Code>
void depthwiseRowsAvx2(const Int8DepthwiseCall& call, int64_t row, Int8Isa isa,
                       const Avx2InteriorTaps& interior, std::vector<int32_t>& acc) {
  const int64_t c = call.c, taps = call.kh * call.kw, c8 = c / 8 * 8;
  const auto* w = reinterpret_cast<const int32_t*>(call.weights);
  const int32_t* bias = w + taps * c;
  const int32_t *multiplier = bias + c, *shift = bias + 2 * c, *zeros = bias + 3 * c;
  const int64_t img = row / call.oh, oy = row % call.oh;
  const __m256i zero = _mm256_set1_epi32(call.inputZero);
  // The columns of a row whose window is inside the input vertically too
  // read their taps at fixed offsets from the window's corner.
  const int64_t y0 = oy * call.sh - call.pt;
  const bool rowInside = c >= 16 && y0 >= 0 && y0 + (call.kh - 1) * call.dh < call.h;
  const auto [begin, end] = rowInside ? interiorColumns(call) : InteriorColumns{0, 0};
  const Code* rowCorner =
      rowInside ? reinterpret_cast<const Code*>(call.input) + ((img * call.h + y0) * call.w) * c : nullptr;
  // The taps inside the input, per output column: (source pixel, tap's weight row).
  thread_local std::vector<std::pair<const Code*, const int32_t*>> inside;
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    int32_t* a = acc.data();
    int64_t first = 0;
    if (ox >= begin && ox < end) {
      depthwisePixelPairsAvx2<Code>(call, rowCorner + (ox * call.sw - call.pl) * c, interior.offsets.data(),
                                    interior.pairs.data(), bias, a);
      first = c / 16 * 16;
    }
    inside.clear();
    if (first < c)
      forEachTapInside<Code>(call, row, ox,
                             [&](int64_t tap, const Code* src) { inside.emplace_back(src, w + tap * c); });
    const size_t count = inside.size();
    const auto* tapsInside = inside.data();
    for (int64_t ch = first; ch < c8; ch += 8) {
      // Two sums over alternate taps: independent vpmulld chains (wrapping adds commute).
      __m256i sum0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + ch));
      __m256i sum1 = _mm256_setzero_si256();
      size_t t = 0;
      for (; t + 2 <= count; t += 2) {
        const __m256i x0 = _mm256_sub_epi32(widen8(tapsInside[t].first + ch), zero);
        const __m256i x1 = _mm256_sub_epi32(widen8(tapsInside[t + 1].first + ch), zero);
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tapsInside[t].second + ch));
        const __m256i w1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tapsInside[t + 1].second + ch));
        sum0 = _mm256_add_epi32(sum0, _mm256_mullo_epi32(x0, w0));
        sum1 = _mm256_add_epi32(sum1, _mm256_mullo_epi32(x1, w1));
      }
      if (t < count) {
        const __m256i x0 = _mm256_sub_epi32(widen8(tapsInside[t].first + ch), zero);
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tapsInside[t].second + ch));
        sum0 = _mm256_add_epi32(sum0, _mm256_mullo_epi32(x0, w0));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + ch), _mm256_add_epi32(sum0, sum1));
    }
    for (int64_t ch = c8; ch < c; ++ch) {
      uint32_t sum = uint32_t(bias[ch]);
      for (const auto& [src, tap] : inside) sum += uint32_t((int32_t(src[ch]) - call.inputZero) * tap[ch]);
      a[ch] = int32_t(sum);
    }
    uint8_t* out = call.output + ((img * call.oh + oy) * call.ow + ox) * c;
    int8Requantize(isa, a, zeros, multiplier, shift, c, call.outputZero, call.lo, call.hi, out);
  }
}

/// The AVX-512 VNNI kernel's constants of every block ([3][64] int32 each):
/// the correction bias - zu * sum(taps), multiplier, shift.
std::vector<int32_t> vnniConstants(const Int8DepthwiseCall& call) {
  const int64_t c = call.c, blocks = channelBlocks(c);
  const int32_t* packed = reinterpret_cast<const int32_t*>(call.weights) + (call.kh * call.kw + 4) * c;
  // The input zero point as u8, the domain of the kernel's codes.
  const uint32_t zu = uint32_t(call.inputZero + (call.inputSigned ? 128 : 0));
  std::vector<int32_t> constants(size_t(blocks * 3 * kBlock));
  for (int64_t b = 0; b < blocks; ++b) {
    const int32_t* k = packed + b * 4 * kBlock;
    int32_t* out = constants.data() + b * 3 * kBlock;
    for (int64_t i = 0; i < kBlock; ++i) out[i] = int32_t(uint32_t(k[i]) - zu * uint32_t(k[kBlock + i]));
    std::copy(k + 2 * kBlock, k + 4 * kBlock, out + kBlock);
  }
  return constants;
}

/// One output row on the AVX-512 VNNI kernel: where each tap starts for the
/// pixels whose window is inside the row horizontally (the address of pixel
/// 0's tap, a step of sw pixels; a padding row and the last group's missing
/// taps read a row of the input zero point as long as an input row), and
/// the tap list of each other pixel.
void depthwiseRowVnni(const Int8DepthwiseCall& call, int64_t row, const int32_t* constants) {
  const int64_t c = call.c, taps = call.kh * call.kw, groups = tapGroups(taps), n = 4 * groups;
  thread_local std::vector<uint8_t> zeroRow;
  thread_local std::vector<const uint8_t*> sources;
  thread_local std::vector<const uint8_t*> rows;
  thread_local std::vector<int64_t> offsets;
  const size_t rowBytes = size_t(call.w * c);
  if (zeroRow.size() != rowBytes || (rowBytes > 0 && zeroRow[0] != uint8_t(call.inputZero)))
    zeroRow.assign(rowBytes, uint8_t(call.inputZero));
  const int64_t img = row / call.oh, oy = row % call.oh;
  rows.resize(size_t(n));
  offsets.resize(size_t(n));
  for (int64_t tap = 0; tap < n; ++tap) {
    const int64_t ky = tap / call.kw, kx = tap < taps ? tap % call.kw : 0;
    const int64_t iy = oy * call.sh - call.pt + ky * call.dh;
    rows[size_t(tap)] =
        tap < taps && iy >= 0 && iy < call.h ? call.input + (img * call.h + iy) * call.w * c : zeroRow.data();
    // May be negative: pixel x adds x * stride before the pointer moves, so no pointer leaves the row.
    offsets[size_t(tap)] = (kx * call.dw - call.pl) * c;
  }
  const auto [begin, end] = interiorColumns(call);
  sources.resize(size_t(call.ow * n));
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    if (ox >= begin && ox < end) continue;
    std::fill_n(sources.begin() + ox * n, n, zeroRow.data());
    forEachTapInside<uint8_t>(call, row, ox,
                              [&](int64_t tap, const uint8_t* src) { sources[size_t(ox * n + tap)] = src; });
  }
  Int8DepthwiseRowArgs t;
  t.rows = rows.data();
  t.offsets = offsets.data();
  t.stride = call.sw * c;
  t.interiorBegin = begin;
  t.interiorEnd = end;
  t.sources = sources.data();
  t.pixels = call.ow;
  t.groups = groups;
  t.c = c;
  t.quadWeights = reinterpret_cast<const int8_t*>(reinterpret_cast<const int32_t*>(call.weights) +
                                                  (taps + 4) * c + channelBlocks(c) * 4 * kBlock);
  t.constants = constants;
  t.inputSigned = call.inputSigned;
  t.zero = call.outputZero;
  t.lo = call.lo;
  t.hi = call.hi;
  t.out = call.output + (img * call.oh + oy) * call.ow * c;
  int8DepthwiseRowVnni(t);
}

}  // namespace

void int8Depthwise(const Int8DepthwiseCall& call, ThreadPool& pool) { int8Depthwise(call, pool, int8Isa()); }

void int8Depthwise(const Int8DepthwiseCall& call, ThreadPool& pool, Int8Isa isa) {
  if (isa == Int8Isa::Avx512Vnni) {
    const std::vector<int32_t> constants = vnniConstants(call);
    pool.parallelFor(call.n * call.oh,
                     [&](int64_t row, int) { depthwiseRowVnni(call, row, constants.data()); });
    return;
  }
  const Avx2InteriorTaps interior = isa == Int8Isa::Avx2 ? avx2InteriorTaps(call) : Avx2InteriorTaps();
  pool.parallelFor(call.n * call.oh, [&](int64_t row, int) {
    thread_local std::vector<int32_t> acc;
    acc.resize(size_t(call.c));
    if (isa == Int8Isa::Portable) {
      if (call.inputSigned)
        depthwiseRows<int8_t>(call, row, isa, acc);
      else
        depthwiseRows<uint8_t>(call, row, isa, acc);
      return;
    }
    if (call.inputSigned)
      depthwiseRowsAvx2<int8_t>(call, row, isa, interior, acc);
    else
      depthwiseRowsAvx2<uint8_t>(call, row, isa, interior, acc);
  });
}

}  // namespace ember::cpu
