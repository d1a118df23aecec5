// The 3x3 depthwise row kernel, written once over a vector type V and
// instantiated for AVX2 (KernelDepthwise.cpp) and AVX-512
// (KernelDepthwiseAvx512.cpp). Everything here has internal linkage: each
// file compiles it for its own ISA, so the linker cannot merge an AVX-512
// copy into the AVX2 path.
//
// Per block of P adjacent output pixels and one vector of channels, the P
// accumulators stay in registers over the whole window: each input column
// is loaded once and multiplied into every pixel whose window holds it (3 of
// them at stride 1), instead of once per pixel and tap. Bias, residual and
// activation are applied in registers before the one store.
//
// V is one of KernelVectors.h's vector types.
#pragma once

#include <algorithm>
#include <cstdint>

#include "KernelDepthwise.h"

namespace ember::cpu {
namespace {

/// Output pixels per register block on both ISAs: 8 accumulators, 3 weights
/// and an input fit AVX2's 16 vector registers.
constexpr int kRowPixels = 8;

/// A load or store of one vector of channels: masked only in the channel tail.
template <class V, bool kMasked>
inline typename V::Vec loadChannels(const float* p, typename V::Mask m) {
  if constexpr (kMasked)
    return V::maskLoad(p, m);
  else
    return V::load(p);
}
template <class V, bool kMasked>
inline void storeChannels(float* p, typename V::Mask m, typename V::Vec v) {
  if constexpr (kMasked)
    V::maskStore(p, m, v);
  else
    V::store(p, v);
}

/// Residual, activation and the store of output pixel `px`'s channels [ch, ch + lanes).
template <class V, bool kMasked>
inline void finishPixel(const DepthwiseRow& r, typename V::Vec acc, int64_t px, int64_t ch,
                        typename V::Mask m) {
  const int64_t at = px * r.c + ch;
  if (r.residual) acc = V::add(acc, loadChannels<V, kMasked>(r.residual + at, m));
  // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
  if (r.activation == Activation::Relu)
    acc = V::max(V::zero(), acc);
  else if (r.activation == Activation::Clip)
    acc = V::min(V::set1(r.hi), V::max(V::set1(r.lo), acc));
  storeChannels<V, kMasked>(r.output + at, m, acc);
}

/// P output pixels from `ox` whose windows lie inside the row horizontally.
template <class V, int P, int S, bool kMasked>
inline void interiorBlock(const DepthwiseRow& r, int64_t ox, int64_t ch, typename V::Mask m) {
  using Vec = typename V::Vec;
  const int64_t c = r.c;
  const Vec bias = r.bias ? loadChannels<V, kMasked>(r.bias + ch, m) : V::zero();
  Vec acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  const int64_t x0 = ox * S - r.pl;
  for (int t = 0; t < r.rows; ++t) {
    const float* in = r.inputRows[t] + x0 * c + ch;
    const float* wt = r.filter + r.filterRows[t] * 3 * c + ch;
    const Vec w[3] = {loadChannels<V, kMasked>(wt, m), loadChannels<V, kMasked>(wt + c, m),
                      loadChannels<V, kMasked>(wt + 2 * c, m)};
    // Input column j of the block feeds pixel p through tap kx = j - S * p.
#pragma GCC unroll 40
    for (int j = 0; j < (P - 1) * S + 3; ++j) {
      const Vec x = loadChannels<V, kMasked>(in + j * c, m);
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx) {
        const int q = j - kx;
        if (q >= 0 && q % S == 0 && q / S < P) acc[q / S] = V::fma(x, w[kx], acc[q / S]);
      }
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) finishPixel<V, kMasked>(r, acc[p], ox + p, ch, m);
}

/// Interior pixels [ox, end) in blocks of P, then of P / 2, ..., 1.
template <class V, int P, int S, bool kMasked>
inline void interiorPixels(const DepthwiseRow& r, int64_t ox, int64_t end, int64_t ch, typename V::Mask m) {
  for (; ox + P <= end; ox += P) interiorBlock<V, P, S, kMasked>(r, ox, ch, m);
  if constexpr (P > 1) interiorPixels<V, P / 2, S, kMasked>(r, ox, end, ch, m);
}

/// One output pixel whose window crosses the left or right border: only the taps inside.
template <class V, bool kMasked>
inline void borderPixel(const DepthwiseRow& r, int64_t ox, int64_t ch, typename V::Mask m) {
  using Vec = typename V::Vec;
  const int64_t c = r.c, x0 = ox * r.sw - r.pl;
  const int64_t kxFirst = std::clamp<int64_t>(-x0, 0, 3), kxLast = std::clamp<int64_t>(r.w - x0, 0, 3);
  Vec acc = r.bias ? loadChannels<V, kMasked>(r.bias + ch, m) : V::zero();
  for (int t = 0; t < r.rows; ++t) {
    const float* in = r.inputRows[t] + ch;
    const float* wt = r.filter + r.filterRows[t] * 3 * c + ch;
    for (int64_t kx = kxFirst; kx < kxLast; ++kx)
      acc = V::fma(loadChannels<V, kMasked>(in + (x0 + kx) * c, m), loadChannels<V, kMasked>(wt + kx * c, m),
                   acc);
  }
  finishPixel<V, kMasked>(r, acc, ox, ch, m);
}

/// The row at horizontal stride S: border pixels, then the interior in blocks.
template <class V, int S>
void depthwiseRowAtStride(const DepthwiseRow& r) {
  // Interior: the output pixels whose whole window is inside the row.
  int64_t first = 0, end = r.ow;
  while (first < r.ow && first * S - r.pl < 0) ++first;
  while (end > first && (end - 1) * S - r.pl + 2 >= r.w) --end;
  auto pixels = [&]<bool kMasked>(int64_t ch, typename V::Mask m) {
    for (int64_t ox = 0; ox < first; ++ox) borderPixel<V, kMasked>(r, ox, ch, m);
    interiorPixels<V, kRowPixels, S, kMasked>(r, first, end, ch, m);
    for (int64_t ox = std::max(first, end); ox < r.ow; ++ox) borderPixel<V, kMasked>(r, ox, ch, m);
  };
  int64_t ch = r.c0;
  for (; ch + V::kLanes <= r.c1; ch += V::kLanes)
    pixels.template operator()<false>(ch, V::tailMask(V::kLanes));
  if (ch < r.c1) pixels.template operator()<true>(ch, V::tailMask(int(r.c1 - ch)));
}

/// The row kernel for vector type V.
template <class V>
void depthwiseRowOf(const DepthwiseRow& r) {
  if (r.sw == 1)
    depthwiseRowAtStride<V, 1>(r);
  else
    depthwiseRowAtStride<V, 2>(r);
}

}  // namespace
}  // namespace ember::cpu
