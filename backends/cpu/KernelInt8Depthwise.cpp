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
/// per-channel rows: pair weights [pairs][c16], then the sum of each channel's taps [c16].
int64_t channels16(int64_t c) { return (c + 15) / 16 * 16; }
int64_t tapPairs(int64_t taps) { return (taps + 1) / 2; }

}  // namespace

size_t int8DepthwiseWeightBytes(int64_t taps, int64_t c) {
  return sizeof(int32_t) * size_t((taps + 4) * c + (tapPairs(taps) + 1) * channels16(c));
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
  const int64_t c16 = channels16(c), pairs = tapPairs(taps);
  int32_t* pairWeights = tail + 4 * c;
  int32_t* tapSums = pairWeights + pairs * c16;
  std::fill(pairWeights, tapSums + c16, 0);
  for (int64_t ch = 0; ch < c; ++ch) {
    uint32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const int32_t tap = filter[ch * taps + t];
      sum += uint32_t(tap);
      auto& pair = reinterpret_cast<uint32_t&>(pairWeights[t / 2 * c16 + ch]);
      pair |= t % 2 ? uint32_t(tap) << 16 : uint32_t(tap) & 0xFFFF;
    }
    tapSums[ch] = int32_t(sum);
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

/// 8 codes widened to int32 lanes.
__m256i widen8(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
__m256i widen8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

/// The same sums with the accumulators of 8 channels in a register across
/// the taps (vpmulld, wrapping vpaddd); channels past the last multiple of 8
/// take the scalar loop.
template <typename Code>
void depthwiseRowsAvx2(const Int8DepthwiseCall& call, int64_t row, Int8Isa isa, std::vector<int32_t>& acc) {
  const int64_t c = call.c, taps = call.kh * call.kw, c8 = c / 8 * 8;
  const auto* w = reinterpret_cast<const int32_t*>(call.weights);
  const int32_t* bias = w + taps * c;
  const int32_t *multiplier = bias + c, *shift = bias + 2 * c, *zeros = bias + 3 * c;
  const int64_t img = row / call.oh, oy = row % call.oh;
  const __m256i zero = _mm256_set1_epi32(call.inputZero);
  // The taps inside the input, per output column: (source pixel, tap's weight row).
  thread_local std::vector<std::pair<const Code*, const int32_t*>> inside;
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    inside.clear();
    forEachTapInside<Code>(call, row, ox,
                           [&](int64_t tap, const Code* src) { inside.emplace_back(src, w + tap * c); });
    int32_t* a = acc.data();
    const size_t count = inside.size();
    const auto* tapsInside = inside.data();
    for (int64_t ch = 0; ch < c8; ch += 8) {
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

/// One output row on the AVX-512 VNNI kernel: the row's tap sources (the zero
/// point's row for padding) and the correction bias - z * sum(taps).
void depthwiseRowVnni(const Int8DepthwiseCall& call, int64_t row) {
  const int64_t c = call.c, taps = call.kh * call.kw, pairs = tapPairs(taps), c16 = channels16(c);
  const auto* w = reinterpret_cast<const int32_t*>(call.weights);
  const int32_t* bias = w + taps * c;
  const int32_t* pairWeights = bias + 4 * c;
  const int32_t* tapSums = pairWeights + pairs * c16;
  thread_local std::vector<uint8_t> zeroRow;
  thread_local std::vector<const uint8_t*> sources;
  thread_local std::vector<int32_t> correction;
  zeroRow.assign(size_t(c), uint8_t(call.inputZero));
  correction.resize(size_t(c));
  for (int64_t ch = 0; ch < c; ++ch)
    correction[size_t(ch)] = int32_t(uint32_t(bias[ch]) - uint32_t(call.inputZero) * uint32_t(tapSums[ch]));
  const int64_t img = row / call.oh, oy = row % call.oh;
  sources.assign(size_t(call.ow * 2 * pairs), zeroRow.data());
  for (int64_t ox = 0; ox < call.ow; ++ox)
    forEachTapInside<uint8_t>(
        call, row, ox, [&](int64_t tap, const uint8_t* src) { sources[size_t(ox * 2 * pairs + tap)] = src; });
  Int8DepthwiseRowArgs t;
  t.sources = sources.data();
  t.pixels = call.ow;
  t.pairs = pairs;
  t.c = c;
  t.pairWeights = pairWeights;
  t.correction = correction.data();
  t.multiplier = bias + c;
  t.shift = bias + 2 * c;
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
  pool.parallelFor(call.n * call.oh, [&](int64_t row, int) {
    thread_local std::vector<int32_t> acc;
    acc.resize(size_t(call.c));
    if (isa == Int8Isa::Avx512Vnni) return depthwiseRowVnni(call, row);
    if (isa == Int8Isa::Portable) {
      if (call.inputSigned)
        depthwiseRows<int8_t>(call, row, isa, acc);
      else
        depthwiseRows<uint8_t>(call, row, isa, acc);
      return;
    }
    if (call.inputSigned)
      depthwiseRowsAvx2<int8_t>(call, row, isa, acc);
    else
      depthwiseRowsAvx2<uint8_t>(call, row, isa, acc);
  });
}

}  // namespace ember::cpu
