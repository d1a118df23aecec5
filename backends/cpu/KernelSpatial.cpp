// Depthwise convolution, pooling, reductions and transposes (AVX2, NHWC).
// Each parallelises over output rows; the innermost loops run over
// contiguous channels.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "CpuKernels.h"
#include "ThreadPool.h"

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

}  // namespace

void depthwiseConv(const DepthwiseCall& d, ThreadPool& pool) {
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

void pool2d(const PoolCall& p, ThreadPool& pool) {
  const int64_t c = p.c;
  pool.parallelFor(p.n * p.oh, [&](int64_t row, int) {
    const int64_t image = row / p.oh, oy = row % p.oh;
    const float* in = p.input + image * p.h * p.w * c;
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      float* out = p.output + (row * p.ow + ox) * c;
      if (p.max) {
        const float lowest = -std::numeric_limits<float>::infinity();
        std::fill(out, out + c, lowest);
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t ix = ox * p.sw - p.pl + kx * p.dw;
            if (ix < 0 || ix >= p.w) continue;
            const float* src = in + (iy * p.w + ix) * c;
            int64_t ch = 0;
            // Same comparison as the reference (NaN inputs do not propagate).
            for (; ch + 8 <= c; ch += 8) {
              __m256 s = _mm256_loadu_ps(src + ch), o = _mm256_loadu_ps(out + ch);
              _mm256_storeu_ps(out + ch, _mm256_blendv_ps(o, s, _mm256_cmp_ps(s, o, _CMP_GT_OQ)));
            }
            for (; ch < c; ++ch) out[ch] = src[ch] > out[ch] ? src[ch] : out[ch];
          }
        }
      } else {
        const int64_t y0 = oy * p.sh - p.pt, x0 = ox * p.sw - p.pl;
        const int64_t y1 = std::min(y0 + p.kh, p.h + p.pb), x1 = std::min(x0 + p.kw, p.w + p.pr);
        const int64_t iy0 = std::max<int64_t>(y0, 0), ix0 = std::max<int64_t>(x0, 0);
        const int64_t iy1 = std::min(y1, p.h), ix1 = std::min(x1, p.w);
        const int64_t count = p.countIncludePad
                                  ? (y1 - y0) * (x1 - x0)
                                  : std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
        std::fill(out, out + c, 0.0f);
        for (int64_t iy = iy0; iy < iy1; ++iy)
          for (int64_t ix = ix0; ix < ix1; ++ix) {
            const float* src = in + (iy * p.w + ix) * c;
            int64_t ch = 0;
            for (; ch + 8 <= c; ch += 8)
              _mm256_storeu_ps(out + ch, _mm256_add_ps(_mm256_loadu_ps(out + ch), _mm256_loadu_ps(src + ch)));
            for (; ch < c; ++ch) out[ch] += src[ch];
          }
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = count > 0 ? out[ch] / float(count) : 0.0f;
      }
    }
  });
}

void reduce3(const float* input, float* output, int64_t outer, int64_t reduce, int64_t inner, ReduceKind kind,
             ThreadPool& pool) {
  auto combine = [kind](float a, float b) {
    switch (kind) {
      case ReduceKind::Sum:
        return a + b;
      // NaN propagates through max and min, as in the reference.
      case ReduceKind::Max:
        return std::isnan(b) || b > a ? b : a;
      case ReduceKind::Min:
        return std::isnan(b) || b < a ? b : a;
      case ReduceKind::Prod:
        return a * b;
    }
    return a;
  };
  // Same identities and order as the reference (an empty reduction gives the identity).
  const float identity = kind == ReduceKind::Sum    ? 0.0f
                         : kind == ReduceKind::Prod ? 1.0f
                         : kind == ReduceKind::Max  ? -std::numeric_limits<float>::infinity()
                                                    : std::numeric_limits<float>::infinity();
  pool.parallelFor(outer, [&](int64_t o, int) {
    const float* in = input + o * reduce * inner;
    float* out = output + o * inner;
    for (int64_t i = 0; i < inner; ++i) out[i] = identity;
    for (int64_t r = 0; r < reduce; ++r) {
      const float* src = in + r * inner;
      int64_t i = 0;
      if (kind == ReduceKind::Sum)
        for (; i + 8 <= inner; i += 8)
          _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(out + i), _mm256_loadu_ps(src + i)));
      for (; i < inner; ++i) out[i] = combine(out[i], src[i]);
    }
  });
}

void transpose(const void* input, void* output, size_t elemSize, const std::vector<int64_t>& inDims,
               const std::vector<int64_t>& perm, ThreadPool& pool) {
  const size_t rank = inDims.size();
  std::vector<int64_t> inStrides(rank, 1), outDims(rank), strides(rank);
  for (size_t d = rank; d-- > 1;) inStrides[d - 1] = inStrides[d] * inDims[d];
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) {
    outDims[d] = inDims[size_t(perm[d])];
    strides[d] = inStrides[size_t(perm[d])];
    total *= outDims[d];
  }
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(output, input, elemSize);
    return;
  }
  const int64_t outer = outDims[0];
  const int64_t innerCount = total / outer;
  auto body = [&]<typename T>(int64_t o) {
    const T* in = static_cast<const T*>(input) + o * strides[0];
    T* out = static_cast<T*>(output) + o * innerCount;
    int64_t index[8] = {0};
    int64_t offset = 0;
    const int64_t last = outDims[rank - 1], lastStride = strides[rank - 1];
    for (int64_t i = 0; i < innerCount; i += last) {
      if (rank == 1) {
        out[0] = in[0];
        return;
      }
      for (int64_t j = 0; j < last; ++j) out[i + j] = in[offset + j * lastStride];
      for (size_t d = rank - 1; d-- > 1;) {
        offset += strides[d];
        if (++index[d] < outDims[d]) break;
        offset -= strides[d] * outDims[d];
        index[d] = 0;
      }
    }
  };
  pool.parallelFor(outer, [&](int64_t o, int) {
    switch (elemSize) {
      case 1:
        body.template operator()<uint8_t>(o);
        break;
      case 2:
        body.template operator()<uint16_t>(o);
        break;
      case 4:
        body.template operator()<uint32_t>(o);
        break;
      default:
        body.template operator()<uint64_t>(o);
        break;
    }
  });
}

}  // namespace ember::cpu
