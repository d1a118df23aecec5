// Direct f32 convolution (group 1, NHWC) as an indirect GEMM: rows are output
// pixels, columns output channels, and K is (ky, kx, c). Instead of packing A
// (implicit im2col), each micro-tile reads its rows straight from the input
// through pointers, one per row and K segment:
//   - per tap (segment length C) when C is large: a padding tap points at zeros;
//   - per window row (segment length KW * C, contiguous in NHWC when the
//     horizontal dilation is 1) when C is small (the 3-channel stem): 7 segments
//     of 21 floats instead of 49 of 3. A row whose window crosses the left or
//     right border gets its segment copied, zero-filled, into a scratch row.
// Each micro-tile runs over all of K at once, so C is stored once, with the
// epilogue applied in registers. B is the GEMM's packed filter (packB).
#include "KernelConv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "KernelGemmBlocks.h"
#include "ThreadPool.h"
#include "ember/Arithmetic.h"

namespace ember::cpu {

void convTile6x16(const ConvTile& t, const TileEpilogue& ep) {
  constexpr int kRows = 6;
  __m256 acc[kRows][2];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float* b = t.b;
  for (int64_t s = 0; s < t.segments; ++s) {
    const float* const* rows = t.rows + s * kRows;
    const float* p[kRows];
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) p[r] = rows[r];
    for (int64_t j = 0; j < t.segLen; ++j) {
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) {
        const __m256 ar = _mm256_broadcast_ss(p[r] + j);
        acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
      }
      b += 16;
    }
  }
  alignas(32) static const int32_t kMaskBits[24] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0,
                                                    0,  0,  0,  0,  0,  0,  0,  0,  0, 0, 0, 0};
  const int cols = t.validCols;
  auto maskOf = [](int lanes) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskBits + 8 - std::clamp(lanes, 0, 8)));
  };
  const __m256i m0 = maskOf(cols), m1 = maskOf(cols - 8);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 vlo = _mm256_set1_ps(ep.lo), vhi = _mm256_set1_ps(ep.hi);
  const __m256 bias0 = ep.bias ? _mm256_maskload_ps(ep.bias, m0) : zero;
  const __m256 bias1 = ep.bias ? _mm256_maskload_ps(ep.bias + 8, m1) : zero;
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    if (r >= t.validRows) break;
    float* row = t.c + r * t.ldc;
    __m256 lo = _mm256_add_ps(acc[r][0], bias0), hi = _mm256_add_ps(acc[r][1], bias1);
    if (ep.residual) {
      lo = _mm256_add_ps(lo, _mm256_maskload_ps(ep.residual + r * t.ldc, m0));
      hi = _mm256_add_ps(hi, _mm256_maskload_ps(ep.residual + r * t.ldc + 8, m1));
    }
    // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
    if (ep.activation == Activation::Relu) {
      lo = _mm256_max_ps(zero, lo);
      hi = _mm256_max_ps(zero, hi);
    } else if (ep.activation == Activation::Clip) {
      lo = _mm256_min_ps(vhi, _mm256_max_ps(vlo, lo));
      hi = _mm256_min_ps(vhi, _mm256_max_ps(vlo, hi));
    }
    _mm256_maskstore_ps(row, m0, lo);
    _mm256_maskstore_ps(row + 8, m1, hi);
  }
}

namespace {

/// Channels below which a segment is a whole window row (KW * C floats)
/// rather than one tap: fewer, longer segments for the 3-channel stem.
constexpr int64_t kWindowRowSegmentsBelowChannels = 16;

/// How K splits into segments, each contiguous in the input for one pixel.
struct Segmentation {
  bool windowRows;  ///< a segment is a window row (KW * C) rather than a tap (C)
  int64_t segments, segLen;
};

Segmentation segmentationOf(const DirectConvCall& d) {
  if (d.dw == 1 && d.c < kWindowRowSegmentsBelowChannels) return {true, d.kh, d.kw * d.c};
  return {false, d.kh * d.kw, d.c};
}

/// A thread's buffers: zeros (the padding segment) and border rows' copies.
struct ConvScratch {
  std::vector<float> zeros, rows;
  std::vector<const float*> pointers;
};

ConvScratch& threadScratch() {
  thread_local ConvScratch scratch;
  return scratch;
}

/// An output pixel: its image and position.
struct Pixel {
  int64_t image, oy, ox;
};

/// The row pointers of pixel `px`: one per segment, written to ptrs[s * mr].
/// `copy` has room for a border row's segments (segments * segLen floats).
void pixelPointers(const DirectConvCall& d, const Segmentation& seg, const Pixel& px, const float* zeros,
                   float* copy, const float** ptrs, int mr) {
  const float* in = d.input + px.image * d.h * d.w * d.c;
  const int64_t kxSegments = seg.windowRows ? 1 : d.kw;
  const int64_t y0 = px.oy * d.sh - d.pt, x0 = px.ox * d.sw - d.pl;
  // Most pixels read no padding: their pointers are a fixed pattern of
  // offsets from the window's corner (for the 3-channel stems this loop
  // took as long as the multiply-adds).
  if (y0 >= 0 && y0 + (d.kh - 1) * d.dh < d.h && x0 >= 0 && x0 + (d.kw - 1) * d.dw < d.w) {
    const float* corner = in + (y0 * d.w + x0) * d.c;
    const int64_t rowStep = d.dh * d.w * d.c, tapStep = d.dw * d.c;
    for (int64_t ky = 0, s = 0; ky < d.kh; ++ky)
      for (int64_t kx = 0; kx < kxSegments; ++kx, ++s) ptrs[s * mr] = corner + ky * rowStep + kx * tapStep;
    return;
  }
  int64_t s = 0;
  for (int64_t ky = 0; ky < d.kh; ++ky) {
    const int64_t iy = y0 + ky * d.dh;
    for (int64_t kx = 0; kx < kxSegments; ++kx, ++s) {
      const int64_t ix = x0 + kx * d.dw;
      const float*& p = ptrs[s * mr];
      if (iy < 0 || iy >= d.h) {
        p = zeros;
      } else if (!seg.windowRows) {
        p = ix >= 0 && ix < d.w ? in + (iy * d.w + ix) * d.c : zeros;
      } else if (ix >= 0 && ix + d.kw <= d.w) {
        p = in + (iy * d.w + ix) * d.c;
      } else {
        // The window row crosses the left or right border: copy its inside taps.
        float* dst = copy + s * seg.segLen;
        std::fill(dst, dst + seg.segLen, 0.0f);
        const int64_t xa = std::max<int64_t>(ix, 0), xb = std::min(ix + d.kw, d.w);
        if (xb > xa)
          std::memcpy(dst + (xa - ix) * d.c, in + (iy * d.w + xa) * d.c, size_t((xb - xa) * d.c) * 4);
        p = dst;
      }
    }
  }
}

}  // namespace

void directConv(const GemmArch& arch, const DirectConvCall& d, ThreadPool& pool) {
  const int mr = arch.mr, nr = arch.nr;
  const int64_t m = d.n * d.oh * d.ow, n = d.o;
  const Segmentation seg = segmentationOf(d);
  const int64_t k = seg.segments * seg.segLen;
  // Work items: blocks of pixels by blocks of output channels, split as the GEMM's.
  const GemmBlocks blocks = cachedGemmBlocks(costModelOf(arch, kDirectAPerRow), m, n, pool.size());
  const auto tile = arch.avx512 ? convTile12x32Avx512 : convTile6x16;
  const Epilogue& ep = d.epilogue;
  // A 1x1, stride-1, unpadded convolution reads output pixel p's row at input pixel p.
  const bool pointwise = d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.pt == 0 && d.pl == 0 &&
                         d.oh == d.h && d.ow == d.w && !seg.windowRows;
  pool.parallelFor(blocks.mBlocks * blocks.nBlocks, [&](int64_t item, int) {
    const int64_t i0 = (item / blocks.nBlocks) * blocks.mc, j0 = (item % blocks.nBlocks) * blocks.nc;
    const int64_t rows = std::min(blocks.mc, m - i0), cols = std::min(blocks.nc, n - j0);
    const int64_t tiles = ceilDiv(rows, int64_t(mr));
    ConvScratch& scratch = threadScratch();
    if (int64_t(scratch.zeros.size()) < seg.segLen) scratch.zeros.assign(size_t(seg.segLen), 0.0f);
    scratch.pointers.resize(size_t(tiles * seg.segments * mr));
    if (seg.windowRows) scratch.rows.resize(size_t(tiles * mr * k));
    // Every tile's row pointers, once per item; rows past the end read zeros.
    const int64_t pixels = d.oh * d.ow;
    Pixel px{i0 / pixels, (i0 % pixels) / d.ow, i0 % d.ow};
    const float** table = scratch.pointers.data();
    const float* zeros = scratch.zeros.data();
    float* copies = seg.windowRows ? scratch.rows.data() : nullptr;
    // Row r is row r % mr of tile r / mr, counted without a division.
    for (int64_t r = 0, tileTable = 0, rowInTile = 0; r < tiles * mr; ++r) {
      const float** ptrs = table + tileTable + rowInTile;
      if (++rowInTile == mr) {
        rowInTile = 0;
        tileTable += seg.segments * mr;
      }
      if (r >= rows) {
        for (int64_t s = 0; s < seg.segments; ++s) ptrs[s * mr] = zeros;
        continue;
      }
      if (pointwise) {
        ptrs[0] = d.input + (i0 + r) * d.c;
        continue;
      }
      pixelPointers(d, seg, px, zeros, copies ? copies + r * k : nullptr, ptrs, mr);
      if (++px.ox == d.ow) {
        px.ox = 0;
        if (++px.oy == d.oh) {
          px.oy = 0;
          ++px.image;
        }
      }
    }
    // Panel by panel, so that a B panel (K x NR) is reused by every tile of the item.
    for (int64_t j = j0; j < j0 + cols; j += nr) {
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t i = i0 + t * mr;
        ConvTile ct{scratch.pointers.data() + t * seg.segments * mr,
                    seg.segments,
                    seg.segLen,
                    d.packedB + j * k,
                    d.output + i * n + j,
                    n,
                    int(std::min<int64_t>(mr, m - i)),
                    int(std::min<int64_t>(nr, n - j))};
        TileEpilogue tep{ep.bias ? ep.bias + j : nullptr, ep.residual ? ep.residual + i * n + j : nullptr,
                         ep.activation, ep.lo, ep.hi};
        tile(ct, tep);
      }
    }
  });
}

}  // namespace ember::cpu
