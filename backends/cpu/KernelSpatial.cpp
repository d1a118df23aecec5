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

namespace {

/// A transpose's output walked as items: each item is one index of the
/// leading `lead` output dims, `innerCount` elements.
struct TransposePlan {
  size_t rank = 0, lead = 0;
  std::vector<int64_t> outDims, strides;  ///< strides[d]: the input stride of output dim d
  int64_t innerCount = 0;
};

/// Advances the output index over dims [plan.lead, end) by one in row-major
/// order, and the input offset with it.
void stepIndex(const TransposePlan& plan, size_t end, int64_t* index, int64_t& offset) {
  for (size_t d = end; d-- > plan.lead;) {
    offset += plan.strides[d];
    if (++index[d] < plan.outDims[d]) return;
    offset -= plan.strides[d] * plan.outDims[d];
    index[d] = 0;
  }
}

/// kCols unit-stride planes, colStride apart, interleaved into rows of kCols.
template <typename T, int64_t kCols>
void interleaveRows(T* to, const T* from, int64_t rows, int64_t colStride) {
  for (int64_t r = 0; r < rows; ++r)
#pragma GCC unroll 4
    for (int64_t j = 0; j < kCols; ++j) to[r * kCols + j] = from[r + j * colStride];
}

/// One rows x cols output tile, walked along whichever reads the input closer
/// together: NCHW -> NHWC (3 channels) reads each channel's row in order
/// instead of stepping the dims' index every 3 elements.
template <typename T>
void copyTile(T* to, const T* from, int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) {
  // Image channels into NHWC (3 or 4 planes interleaved) with the count known to the compiler.
  if (rowStride == 1 && cols == 3) return interleaveRows<T, 3>(to, from, rows, colStride);
  if (rowStride == 1 && cols == 4) return interleaveRows<T, 4>(to, from, rows, colStride);
  if (rowStride < colStride) {
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t r = 0; r < rows; ++r) to[r * cols + j] = from[r * rowStride + j * colStride];
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) to[r * cols + j] = from[r * rowStride + j * colStride];
  }
}

template <typename T>
void transposeItem(const TransposePlan& plan, const T* input, T* output, int64_t item) {
  const size_t rank = plan.rank;
  int64_t start = 0;
  for (size_t d = plan.lead, rest = size_t(item); d-- > 0; rest /= size_t(plan.outDims[d]))
    start += int64_t(rest % size_t(plan.outDims[d])) * plan.strides[d];
  const T* in = input + start;
  T* out = output + item * plan.innerCount;
  if (plan.lead == rank) {  // rank 1: an element per item
    out[0] = in[0];
    return;
  }
  const int64_t last = plan.outDims[rank - 1], lastStride = plan.strides[rank - 1];
  if (plan.lead + 1 == rank) {  // a row per item
    for (int64_t j = 0; j < last; ++j) out[j] = in[j * lastStride];
    return;
  }
  // Tiles of the last two output dims, the dims between `lead` and them as an odometer.
  const int64_t rows = plan.outDims[rank - 2], rowStride = plan.strides[rank - 2], tile = rows * last;
  int64_t index[8] = {0};
  int64_t offset = 0;
  for (int64_t i = 0; i < plan.innerCount; i += tile) {
    copyTile(out + i, in + offset, rows, last, rowStride, lastStride);
    stepIndex(plan, rank - 2, index, offset);
  }
}

}  // namespace

void transpose(const void* input, void* output, size_t elemSize, const std::vector<int64_t>& inDims,
               const std::vector<int64_t>& perm, ThreadPool& pool) {
  TransposePlan plan;
  plan.rank = inDims.size();
  const size_t rank = plan.rank;
  std::vector<int64_t> inStrides(rank, 1);
  plan.outDims.resize(rank);
  plan.strides.resize(rank);
  for (size_t d = rank; d-- > 1;) inStrides[d - 1] = inStrides[d] * inDims[d];
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) {
    plan.outDims[d] = inDims[size_t(perm[d])];
    plan.strides[d] = inStrides[size_t(perm[d])];
    total *= plan.outDims[d];
  }
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(output, input, elemSize);
    return;
  }
  // Items are the leading output dims, as many as give a few items per
  // thread: a batch-1 NCHW -> NHWC input transpose has outDims[0] == 1 and
  // ran on one thread.
  plan.lead = 1;
  int64_t outer = plan.outDims[0];
  while (plan.lead + 1 < rank && outer < 4 * int64_t(pool.size())) outer *= plan.outDims[plan.lead++];
  plan.innerCount = total / outer;
  pool.parallelFor(outer, [&](int64_t item, int) {
    switch (elemSize) {
      case 1:
        transposeItem(plan, static_cast<const uint8_t*>(input), static_cast<uint8_t*>(output), item);
        break;
      case 2:
        transposeItem(plan, static_cast<const uint16_t*>(input), static_cast<uint16_t*>(output), item);
        break;
      case 4:
        transposeItem(plan, static_cast<const uint32_t*>(input), static_cast<uint32_t*>(output), item);
        break;
      default:
        transposeItem(plan, static_cast<const uint64_t*>(input), static_cast<uint64_t*>(output), item);
        break;
    }
  });
}

}  // namespace ember::cpu
