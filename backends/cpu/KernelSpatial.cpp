// Pooling, reductions and transposes (AVX2, NHWC).
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
  // Items are the leading output dims, as many as give a few items per
  // thread: a batch-1 NCHW -> NHWC input transpose has outDims[0] == 1 and
  // ran on one thread.
  size_t lead = 1;
  int64_t outer = outDims[0];
  while (lead + 1 < rank && outer < 4 * int64_t(pool.size())) outer *= outDims[lead++];
  const int64_t innerCount = total / outer;
  auto body = [&]<typename T>(int64_t o) {
    int64_t start = 0;
    for (size_t d = lead, rest = size_t(o); d-- > 0; rest /= size_t(outDims[d]))
      start += int64_t(rest % size_t(outDims[d])) * strides[d];
    const T* in = static_cast<const T*>(input) + start;
    T* out = static_cast<T*>(output) + o * innerCount;
    int64_t index[8] = {0};
    int64_t offset = 0;
    const int64_t last = outDims[rank - 1], lastStride = strides[rank - 1];
    if (lead + 2 <= rank) {
      // The last two output dims as one tile, walked along whichever reads the
      // input closer together: NCHW -> NHWC (3 channels) reads each channel's
      // row in order instead of stepping the dims' index every 3 elements.
      const int64_t rows = outDims[rank - 2], rowStride = strides[rank - 2], tile = rows * last;
      const bool alongRows = rowStride < lastStride;
      for (int64_t i = 0; i < innerCount; i += tile) {
        T* to = out + i;
        const T* from = in + offset;
        if (alongRows) {
          for (int64_t j = 0; j < last; ++j)
            for (int64_t r = 0; r < rows; ++r) to[r * last + j] = from[r * rowStride + j * lastStride];
        } else {
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < last; ++j) to[r * last + j] = from[r * rowStride + j * lastStride];
        }
        for (size_t d = rank - 2; d-- > lead;) {
          offset += strides[d];
          if (++index[d] < outDims[d]) break;
          offset -= strides[d] * outDims[d];
          index[d] = 0;
        }
      }
      return;
    }
    for (int64_t i = 0; i < innerCount; i += last) {
      if (rank == 1) {
        out[0] = in[0];
        return;
      }
      for (int64_t j = 0; j < last; ++j) out[i + j] = in[offset + j * lastStride];
      for (size_t d = rank - 1; d-- > lead;) {
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
