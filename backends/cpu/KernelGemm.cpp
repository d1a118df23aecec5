// The packed, register-blocked, cache-tiled f32 GEMM (BLIS-style loop nest)
// and its use for convolution through implicit im2col.
//
//   for each work item (an MC x NC block of C, handed out to threads):
//     for pc in K by KC:      pack A[ic:ic+MC, pc:pc+KC] into MR-row panels (L2)
//       for jr in NC by NR:   B micro-panel KC x NR stays in L1
//         for ir in MC by MR: micro-kernel: MR x NR accumulators in registers
//
// B (the weights of Conv and of MatMul with a constant rhs) is packed once at
// compile time into NR-column panels covering all of K. The epilogue (bias,
// residual, activation) runs on each micro-tile while it is still in L1: bias
// and residual on the first K block (so the residual may alias C), the
// activation on the last.
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "CpuKernels.h"
#include "KernelGemmBlocks.h"
#include "ThreadPool.h"
#include "ember/Arithmetic.h"

namespace ember::cpu {

bool hostHasAvx2Fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool hostHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// Implemented in KernelGemmAvx512.cpp (compiled with -mavx512f).
void microKernelAvx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                       const TileEpilogue* ep);
/// C[rows, 32] = A-panel * B-panel for an edge tile: only the first 4, 8 or 12
/// rows of the 12-row panel that cover `rows` (C holds that many rows).
void microKernelAvx512Rows(int rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc);

namespace {

/// KC: the B micro-panel (KC x NR floats) that stays in L1D while MC/MR A
/// micro-panels stream past it fills two thirds of L1D (32 KiB of a 48 KiB
/// L1D: KC = 256 at NR = 32), leaving the rest to the A micro-panel and C's
/// lines. Fewer K slices mean fewer passes of loading and storing C: on this
/// AVX-512 machine KC = 256 gave 1024^3 about 8 points of FMA peak more than
/// KC = 128 (docs/performance.md).
int64_t kcBytesOfBPanel() {
  static const int64_t bytes = [] {
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    const int64_t twoThirds = (l1 > 0 ? int64_t(l1) : 32768) * 2 / 3;
    return std::clamp<int64_t>(twoThirds / 4096 * 4096, 16384, 65536);
  }();
  return bytes;
}

/// 6 x 16 AVX2 micro-kernel: C[6,16] (=|+=) A-panel[kc][6] * B-panel[kc][16].
void microKernel6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                     const TileEpilogue* ep) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 a0 = _mm256_broadcast_ss(a + 0), a1 = _mm256_broadcast_ss(a + 1);
    c00 = _mm256_fmadd_ps(a0, b0, c00);
    c01 = _mm256_fmadd_ps(a0, b1, c01);
    c10 = _mm256_fmadd_ps(a1, b0, c10);
    c11 = _mm256_fmadd_ps(a1, b1, c11);
    __m256 a2 = _mm256_broadcast_ss(a + 2), a3 = _mm256_broadcast_ss(a + 3);
    c20 = _mm256_fmadd_ps(a2, b0, c20);
    c21 = _mm256_fmadd_ps(a2, b1, c21);
    c30 = _mm256_fmadd_ps(a3, b0, c30);
    c31 = _mm256_fmadd_ps(a3, b1, c31);
    __m256 a4 = _mm256_broadcast_ss(a + 4), a5 = _mm256_broadcast_ss(a + 5);
    c40 = _mm256_fmadd_ps(a4, b0, c40);
    c41 = _mm256_fmadd_ps(a4, b1, c41);
    c50 = _mm256_fmadd_ps(a5, b0, c50);
    c51 = _mm256_fmadd_ps(a5, b1, c51);
    a += 6;
    b += 16;
  }
  const __m256 zero = _mm256_setzero_ps();
  const __m256 vlo = ep ? _mm256_set1_ps(ep->lo) : zero, vhi = ep ? _mm256_set1_ps(ep->hi) : zero;
  const __m256 bias0 = ep && ep->bias ? _mm256_loadu_ps(ep->bias) : zero;
  const __m256 bias1 = ep && ep->bias ? _mm256_loadu_ps(ep->bias + 8) : zero;
  int64_t row = 0;
  auto store = [&](float* out, __m256 lo, __m256 hi) {
    if (accumulate) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(out));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(out + 8));
    }
    if (ep) {
      lo = _mm256_add_ps(lo, bias0);
      hi = _mm256_add_ps(hi, bias1);
      if (ep->residual) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(ep->residual + row * ldc));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(ep->residual + row * ldc + 8));
      }
      // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
      if (ep->activation == Activation::Relu) {
        lo = _mm256_max_ps(zero, lo);
        hi = _mm256_max_ps(zero, hi);
      } else if (ep->activation == Activation::Clip) {
        lo = _mm256_min_ps(vhi, _mm256_max_ps(vlo, lo));
        hi = _mm256_min_ps(vhi, _mm256_max_ps(vlo, hi));
      }
    }
    _mm256_storeu_ps(out, lo);
    _mm256_storeu_ps(out + 8, hi);
    ++row;
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}

using MicroKernel = void (*)(int64_t, const float*, const float*, float*, int64_t, bool, const TileEpilogue*);

/// A 64-byte aligned scratch buffer per thread, grown on demand.
float* scratch(size_t floats, int slot) {
  struct Buffer {
    float* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[2];
  Buffer& buf = buffers[slot];
  if (buf.size < floats) {
    std::free(buf.data);
    buf.data = static_cast<float*>(std::aligned_alloc(64, alignUp(int64_t(floats) * 4, 64)));
    buf.size = floats;
  }
  return buf.data;
}

/// Writes out[j * mr + r] = src[r][j] for j < run and r < mr (a null src[r]
/// is a zero row): 8 x 8 register transposes, masked stores for mr % 8.
void packSegment(const float* const* src, int mr, int64_t run, float* out) {
  alignas(32) static const int32_t kMaskBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= run; j += 8) {
    for (int g = 0; g < mr; g += 8) {
      const int lanes = std::min(8, mr - g);
      __m256 v[8];
      for (int r = 0; r < 8; ++r)
        v[r] = r < lanes && src[g + r] ? _mm256_loadu_ps(src[g + r] + j) : _mm256_setzero_ps();
      __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
      __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
      __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
      __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
      __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      __m256 column[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                          _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                          _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                          _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
      if (lanes == 8) {
        for (int q = 0; q < 8; ++q) _mm256_storeu_ps(out + (j + q) * mr + g, column[q]);
      } else {
        const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskBits + 8 - lanes));
        for (int q = 0; q < 8; ++q) _mm256_maskstore_ps(out + (j + q) * mr + g, mask, column[q]);
      }
    }
  }
  for (int r = 0; r < mr; ++r)
    for (int64_t jj = j; jj < run; ++jj) out[jj * mr + r] = src[r] ? src[r][jj] : 0.0f;
}

/// Packs rows [row0, row0+rows) x columns [k0, k0+kc) of A into MR-row panels.
void packA(const ASource& a, int mr, int64_t row0, int64_t rows, int64_t k0, int64_t kc, float* dst) {
  const float* src[32];
  for (int64_t panel = 0; panel < rows; panel += mr) {
    float* out = dst + panel * kc;
    const int64_t panelRows = std::min<int64_t>(mr, rows - panel);
    if (!a.conv) {
      for (int r = 0; r < mr; ++r)
        src[r] = r < panelRows ? a.data + (row0 + panel + r) * a.lda + k0 : nullptr;
      packSegment(src, mr, kc, out);
      continue;
    }
    // Each row's output pixel; per tap, the row's input pixel (or padding).
    const int64_t pixels = a.oh * a.ow;
    const float* base[32];
    int64_t oy[32], ox[32];
    for (int r = 0; r < mr; ++r) {
      if (r >= panelRows) {
        base[r] = nullptr;
        continue;
      }
      const int64_t row = row0 + panel + r, image = row / pixels, pixel = row % pixels;
      oy[r] = pixel / a.ow;
      ox[r] = pixel % a.ow;
      base[r] = a.data + image * a.h * a.w * a.c + a.cOffset;
    }
    int64_t ci = k0 % a.cg, tap = k0 / a.cg;
    int64_t kx = tap % a.kw, ky = tap / a.kw;
    for (int64_t k = 0; k < kc;) {
      const int64_t run = std::min(a.cg - ci, kc - k);
      for (int r = 0; r < mr; ++r) {
        src[r] = nullptr;
        if (!base[r]) continue;
        const int64_t iy = oy[r] * a.sh - a.pt + ky * a.dh, ix = ox[r] * a.sw - a.pl + kx * a.dw;
        if (iy >= 0 && iy < a.h && ix >= 0 && ix < a.w) src[r] = base[r] + (iy * a.w + ix) * a.c + ci;
      }
      packSegment(src, mr, run, out + k * mr);
      k += run;
      ci = 0;
      if (++kx == a.kw) {
        kx = 0;
        ++ky;
      }
    }
  }
}

/// Bias and residual (first K block) and activation (last K block) on a tile.
void epilogueTile(float* c, int64_t ldc, int64_t rows, int64_t cols, const float* bias, const float* residual,
                  bool first, bool last, const Epilogue& ep) {
  const bool addBias = first && bias, addResidual = first && residual;
  const bool act = last && ep.activation != Activation::None;
  if (!addBias && !addResidual && !act) return;
  const __m256 lo = ep.activation == Activation::Relu ? _mm256_setzero_ps() : _mm256_set1_ps(ep.lo);
  const __m256 hi = _mm256_set1_ps(ep.hi);
  const float slo = ep.activation == Activation::Relu ? 0.0f : ep.lo;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    const float* res = residual ? residual + i * ldc : nullptr;
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 v = _mm256_loadu_ps(row + j);
      if (addBias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
      if (addResidual) v = _mm256_add_ps(v, _mm256_loadu_ps(res + j));
      if (act) {
        v = _mm256_max_ps(lo, v);  // keeps NaN, like the reference
        if (ep.activation == Activation::Clip) v = _mm256_min_ps(hi, v);
      }
      _mm256_storeu_ps(row + j, v);
    }
    for (; j < cols; ++j) {
      float v = row[j];
      if (addBias) v += bias[j];
      if (addResidual) v += res[j];
      if (act) {
        v = v > slo ? v : slo;
        if (ep.activation == Activation::Clip) v = v < ep.hi ? v : ep.hi;
      }
      row[j] = v;
    }
  }
}

/// C[m < MR rows] = A * B for dense A: each row is a GEMV over the packed B
/// panels (no A packing, no wasted micro-kernel rows); parallel over panels.
void gemvRows(const GemmCall& call, int nr, bool residualIsC, ThreadPool& pool) {
  const int64_t n = call.n, k = call.k;
  const Epilogue& ep = call.epilogue;
  const int64_t panels = ceilDiv(n, nr);
  pool.parallelFor(panels, [&](int64_t panel, int) {
    const int64_t j = panel * nr, cols = std::min<int64_t>(nr, n - j);
    const float* b = call.packedB + j * k;
    for (int64_t i = 0; i < call.m; ++i) {
      const float* a = call.a.data + i * call.a.lda;
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      const int vectors = nr / 8;
      for (int64_t p = 0; p < k; ++p) {
        const __m256 av = _mm256_broadcast_ss(a + p);
        for (int v = 0; v < vectors; ++v)
          acc[v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + p * nr + 8 * v), acc[v]);
      }
      alignas(32) float result[32];
      for (int v = 0; v < vectors; ++v) _mm256_store_ps(result + 8 * v, acc[v]);
      float* c = call.c + i * call.ldc + j;
      for (int64_t s = 0; s < cols; ++s) c[s] = residualIsC ? c[s] + result[s] : result[s];
      epilogueTile(c, call.ldc, 1, cols, ep.bias ? ep.bias + j : nullptr,
                   ep.residual && !residualIsC ? ep.residual + i * call.ldc + j : nullptr, true, true, ep);
    }
  });
}

/// C = epilogue(0) when there is nothing to accumulate (k == 0).
void gemmEmptyK(const GemmCall& call) {
  const Epilogue& ep = call.epilogue;
  if (ep.residual != call.c)
    for (int64_t i = 0; i < call.m; ++i) std::memset(call.c + i * call.ldc, 0, size_t(call.n) * 4);
  epilogueTile(call.c, call.ldc, call.m, call.n, ep.bias, ep.residual != call.c ? ep.residual : nullptr, true,
               true, ep);
}

/// One micro-tile of C: its first row and column, and the K slice it accumulates.
struct MicroTile {
  int64_t i, j;
  int64_t kc;
  bool first, last;  ///< the first / the last K slice
};

/// C[tile] (=|+=) A-panel x B-panel through the micro-kernel, with the
/// epilogue's bias and residual on the first K slice and its activation on
/// the last. A full tile runs the epilogue in registers; an edge tile goes
/// through a buffer.
void gemmMicroTile(const GemmCall& call, MicroKernel kernel, int mr, int nr, const float* aPanel,
                   const float* bPanel, const MicroTile& t) {
  const Epilogue& ep = call.epilogue;
  const bool residualIsC = ep.residual == call.c;
  const int64_t tileRows = std::min<int64_t>(mr, call.m - t.i);
  const int64_t tileCols = std::min<int64_t>(nr, call.n - t.j);
  float* c = call.c + t.i * call.ldc + t.j;
  // A residual that is C itself is accumulated onto, not added afterwards.
  const bool accumulate = !t.first || residualIsC;
  const float* bias = t.first && ep.bias ? ep.bias + t.j : nullptr;
  const float* residual =
      t.first && ep.residual && !residualIsC ? ep.residual + t.i * call.ldc + t.j : nullptr;
  if (tileRows == mr && tileCols == nr) {
    // The epilogue runs in registers, before the tile's only store.
    TileEpilogue tileEp{bias, residual, t.last ? ep.activation : Activation::None, ep.lo, ep.hi};
    const bool any = bias || residual || tileEp.activation != Activation::None;
    kernel(t.kc, aPanel, bPanel, c, call.ldc, accumulate, any ? &tileEp : nullptr);
    return;
  }
  alignas(64) float tile[16 * 32];
  if (kernel == microKernelAvx512)
    microKernelAvx512Rows(int(tileRows), t.kc, aPanel, bPanel, tile, nr);
  else
    kernel(t.kc, aPanel, bPanel, tile, nr, false, nullptr);
  for (int64_t r = 0; r < tileRows; ++r)
    for (int64_t s = 0; s < tileCols; ++s)
      c[r * call.ldc + s] = accumulate ? c[r * call.ldc + s] + tile[r * nr + s] : tile[r * nr + s];
  epilogueTile(c, call.ldc, tileRows, tileCols, bias, residual, t.first, t.last, ep);
}

}  // namespace

GemmArch chooseGemmArch() {
  GemmArch arch;
  if (hostHasAvx512() && !std::getenv("EMBER_CPU_NO_AVX512")) {
    arch.mr = 12;
    arch.nr = 32;
    arch.avx512 = true;
  }
  return arch;
}

size_t packedBSize(const GemmArch& arch, int64_t k, int64_t n) { return size_t(alignUp(n, arch.nr) * k); }

void packB(const GemmArch& arch, const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n,
           float* packed) {
  const int64_t nr = arch.nr;
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    float* panel = packed + j0 * k;
    int64_t cols = std::min(nr, n - j0);
    for (int64_t p = 0; p < k; ++p) {
      float* out = panel + p * nr;
      for (int64_t j = 0; j < cols; ++j) out[j] = transposed ? b[(j0 + j) * ldb + p] : b[p * ldb + j0 + j];
      for (int64_t j = cols; j < nr; ++j) out[j] = 0.0f;
    }
  }
}

void gemm(const GemmArch& arch, const GemmCall& call, ThreadPool& pool) {
  const int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  const int mr = arch.mr, nr = arch.nr;
  const MicroKernel kernel = arch.avx512 ? microKernelAvx512 : microKernel6x16;
  if (k == 0) {
    gemmEmptyK(call);
    return;
  }

  const GemmBlocks blocks = cachedGemmBlocks(costModelOf(arch, kPackedAPerRow), m, n, pool.size());
  const int64_t mc = blocks.mc, nc = blocks.nc;
  const int64_t kKC = kcBytesOfBPanel() / (4 * nr);
  const int64_t kc0 = std::min(kKC, k);
  if (!call.a.conv && m < mr / 2) {
    gemvRows(call, nr, call.epilogue.residual == call.c, pool);
    return;
  }

  pool.parallelFor(blocks.mBlocks * blocks.nBlocks, [&](int64_t item, int) {
    // Consecutive items share the A block, so that a thread's packed A stays warm.
    const int64_t ic = (item / blocks.nBlocks) * mc, jc = (item % blocks.nBlocks) * nc;
    const int64_t rows = std::min(mc, m - ic), cols = std::min(nc, n - jc);
    float* packedA = scratch(size_t(alignUp(mc, mr) * kc0), 0);
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = std::min(kKC, k - pc);
      packA(call.a, mr, ic, rows, pc, kc, packedA);
      for (int64_t jr = 0; jr < cols; jr += nr) {
        const float* bPanel = call.packedB + (jc + jr) * k + pc * nr;
        for (int64_t ir = 0; ir < rows; ir += mr)
          gemmMicroTile(call, kernel, mr, nr, packedA + ir * kc, bPanel,
                        MicroTile{ic + ir, jc + jr, kc, pc == 0, pc + kc == k});
      }
    }
  });
}

}  // namespace ember::cpu
