// The f32 depthwise convolution (group == C == O), NHWC, filter prepacked
// [KH, KW, C]. 3x3 windows with dilation 1 and horizontal stride 1 or 2 (all
// of mobilenet_v2's) run the register-blocked row kernel (KernelDepthwiseRow.h;
// AVX2 here, AVX-512 in KernelDepthwiseAvx512.cpp); any other window runs a
// per-pixel loop over the taps inside the input. Work items are output rows,
// split into channel blocks when a layer has too few rows for the threads.
#include "KernelDepthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "KernelDepthwiseRow.h"
#include "KernelVectors.h"
#include "ThreadPool.h"
#include "ember/Arithmetic.h"

namespace ember::cpu {
namespace {

inline __m256 activate(__m256 v, const Epilogue& ep) {
  // max(lo, v) returns v when v is NaN, like the reference's v < lo ? lo : v.
  if (ep.activation == Activation::Relu) return _mm256_max_ps(_mm256_setzero_ps(), v);
  if (ep.activation == Activation::Clip)
    return _mm256_min_ps(_mm256_set1_ps(ep.hi), _mm256_max_ps(_mm256_set1_ps(ep.lo), v));
  return v;
}

inline float activate(float v, const Epilogue& ep) {
  if (ep.activation == Activation::Relu) return v > 0.0f ? v : 0.0f;
  if (ep.activation == Activation::Clip) {
    v = v > ep.lo ? v : ep.lo;
    return v < ep.hi ? v : ep.hi;
  }
  return v;
}

/// The taps [first, last) of one window axis (origin + tap * dilation) that
/// fall inside the input's [0, size).
struct TapRange {
  int64_t first, last;
};
inline TapRange tapsInside(int64_t origin, int64_t dilation, int64_t taps, int64_t size) {
  TapRange r{0, taps};
  while (r.first < taps && origin + r.first * dilation < 0) ++r.first;
  while (r.last > r.first && origin + (r.last - 1) * dilation >= size) --r.last;
  return r;
}

/// One output pixel of a depthwise convolution: its input image, output and
/// residual (or nullptr), and its window's taps inside the input.
struct DepthwisePixel {
  const float* in;
  float* out;
  const float* res;
  int64_t oy, ox;
  TapRange ky, kx;
};

/// Every channel of one output pixel: 32 channels at a time, then 8, then one.
inline void depthwisePixel(const DepthwiseCall& d, const DepthwisePixel& p) {
  const int64_t c = d.c;
  const float* in = p.in;
  float* out = p.out;
  const float* res = p.res;
  const int64_t oy = p.oy, ox = p.ox;
  int64_t ch = 0;
  for (; ch + 32 <= c; ch += 32) {
    __m256 acc[4];
    for (int v = 0; v < 4; ++v)
      acc[v] = d.epilogue.bias ? _mm256_loadu_ps(d.epilogue.bias + ch + 8 * v) : _mm256_setzero_ps();
    for (int64_t ky = p.ky.first; ky < p.ky.last; ++ky) {
      const int64_t iy = oy * d.sh - d.pt + ky * d.dh;
      for (int64_t kx = p.kx.first; kx < p.kx.last; ++kx) {
        const int64_t ix = ox * d.sw - d.pl + kx * d.dw;
        const float* src = in + (iy * d.w + ix) * c + ch;
        const float* wt = d.filter + (ky * d.kw + kx) * c + ch;
        for (int v = 0; v < 4; ++v)
          acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(src + 8 * v), _mm256_loadu_ps(wt + 8 * v), acc[v]);
      }
    }
    for (int v = 0; v < 4; ++v) {
      if (res) acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(res + ch + 8 * v));
      _mm256_storeu_ps(out + ch + 8 * v, activate(acc[v], d.epilogue));
    }
  }
  for (; ch + 8 <= c; ch += 8) {
    __m256 acc = d.epilogue.bias ? _mm256_loadu_ps(d.epilogue.bias + ch) : _mm256_setzero_ps();
    for (int64_t ky = p.ky.first; ky < p.ky.last; ++ky) {
      const int64_t iy = oy * d.sh - d.pt + ky * d.dh;
      for (int64_t kx = p.kx.first; kx < p.kx.last; ++kx) {
        const int64_t ix = ox * d.sw - d.pl + kx * d.dw;
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(in + (iy * d.w + ix) * c + ch),
                              _mm256_loadu_ps(d.filter + (ky * d.kw + kx) * c + ch), acc);
      }
    }
    if (res) acc = _mm256_add_ps(acc, _mm256_loadu_ps(res + ch));
    _mm256_storeu_ps(out + ch, activate(acc, d.epilogue));
  }
  for (; ch < c; ++ch) {
    float acc = d.epilogue.bias ? d.epilogue.bias[ch] : 0.0f;
    for (int64_t ky = p.ky.first; ky < p.ky.last; ++ky) {
      const int64_t iy = oy * d.sh - d.pt + ky * d.dh;
      for (int64_t kx = p.kx.first; kx < p.kx.last; ++kx) {
        const int64_t ix = ox * d.sw - d.pl + kx * d.dw;
        acc = std::fma(in[(iy * d.w + ix) * c + ch], d.filter[(ky * d.kw + kx) * c + ch], acc);
      }
    }
    if (res) acc += res[ch];
    out[ch] = activate(acc, d.epilogue);
  }
}

/// Any other window (5x5, dilation, stride > 2 along the row): per output
/// pixel, the taps inside the input, 32, 8, then 1 channel at a time.
void depthwiseAnyWindow(const DepthwiseCall& d, ThreadPool& pool) {
  const int64_t c = d.c;
  pool.parallelFor(d.n * d.oh, [&](int64_t row, int) {
    const int64_t image = row / d.oh, oy = row % d.oh;
    const float* in = d.input + image * d.h * d.w * c;
    float* outRow = d.output + row * d.ow * c;
    // Taps of this output row that fall inside the input.
    const TapRange ky = tapsInside(oy * d.sh - d.pt, d.dh, d.kh, d.h);
    for (int64_t ox = 0; ox < d.ow; ++ox) {
      const float* res = d.epilogue.residual ? d.epilogue.residual + (row * d.ow + ox) * c : nullptr;
      depthwisePixel(d, DepthwisePixel{in, outRow + ox * c, res, oy, ox, ky,
                                       tapsInside(ox * d.sw - d.pl, d.dw, d.kw, d.w)});
    }
  });
}

/// Output row `row` (image-major), channels [c0, c1), as a row-kernel call.
DepthwiseRow rowOf(const DepthwiseCall& d, int64_t row, int64_t c0, int64_t c1) {
  DepthwiseRow r;
  const int64_t image = row / d.oh, oy = row % d.oh;
  for (int64_t ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * d.sh - d.pt + ky;
    if (iy < 0 || iy >= d.h) continue;
    r.inputRows[r.rows] = d.input + ((image * d.h + iy) * d.w) * d.c;
    r.filterRows[r.rows++] = ky;
  }
  r.filter = d.filter;
  r.bias = d.epilogue.bias;
  r.residual = d.epilogue.residual ? d.epilogue.residual + row * d.ow * d.c : nullptr;
  r.output = d.output + row * d.ow * d.c;
  r.w = d.w;
  r.c = d.c;
  r.ow = d.ow;
  r.sw = d.sw;
  r.pl = d.pl;
  r.c0 = c0;
  r.c1 = c1;
  r.activation = d.epilogue.activation;
  r.lo = d.epilogue.lo;
  r.hi = d.epilogue.hi;
  return r;
}

}  // namespace

void depthwiseRowAvx2(const DepthwiseRow& r) { depthwiseRowOf<Avx2Vectors>(r); }

bool depthwiseRowKernelFits(const DepthwiseCall& d) {
  return d.kh == 3 && d.kw == 3 && d.dh == 1 && d.dw == 1 && (d.sw == 1 || d.sw == 2);
}

void depthwiseConv(const DepthwiseCall& d, ThreadPool& pool, bool avx512) {
  const int64_t rows = d.n * d.oh;
  // EMBER_CPU_NO_DEPTHWISE_ROWS=1 runs every window on the per-pixel loop (A/B measurements).
  static const bool rowsDisabled = std::getenv("EMBER_CPU_NO_DEPTHWISE_ROWS") != nullptr;
  if (rowsDisabled || !depthwiseRowKernelFits(d)) return depthwiseAnyWindow(d, pool);
  const auto rowKernel = avx512 ? depthwiseRowAvx512 : depthwiseRowAvx2;
  // A 7x7 layer has 7 rows: split the channels too, into whole vectors,
  // until there are 4 items per thread.
  const int64_t lanes = avx512 ? 16 : 8;
  int64_t blockChannels = alignUp(d.c, lanes);
  while (pool.size() > 1 && rows * ceilDiv(d.c, blockChannels) < 4 * pool.size() && blockChannels > lanes)
    blockChannels = alignUp(blockChannels / 2, lanes);
  const int64_t blocks = ceilDiv(d.c, blockChannels);
  pool.parallelFor(rows * blocks, [&](int64_t item, int) {
    const int64_t c0 = (item % blocks) * blockChannels;
    rowKernel(rowOf(d, item / blocks, c0, std::min(d.c, c0 + blockChannels)));
  });
}

}  // namespace ember::cpu
