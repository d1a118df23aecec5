// The AVX-512 GEMM micro-kernel (12 x 32), chosen only when the CPU reports
// avx512f at run time (CpuKernels.h, chooseGemmArch). AVX2 + FMA stays the
// baseline. This file alone is compiled with -mavx512f.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>

#include "CpuKernels.h"

namespace ember::cpu {

namespace {

/// C[kRows, 32] (=|+=) A-panel[kc][12] * B-panel[kc][32]: the first kRows rows
/// of a 12-row A panel, so that an edge tile of a few rows (a 7x7 layer's 49
/// pixels end in a tile of one) does not multiply the panel's zero rows.
template <int kRows>
void microKernelRows(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                     const TileEpilogue* ep) {
  constexpr int kPanelRows = 12;
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += kPanelRows;
    b += 32;
  }
  const __m512 zero = _mm512_setzero_ps();
  const __m512 vlo = ep ? _mm512_set1_ps(ep->lo) : zero, vhi = ep ? _mm512_set1_ps(ep->hi) : zero;
  const __m512 bias0 = ep && ep->bias ? _mm512_loadu_ps(ep->bias) : zero;
  const __m512 bias1 = ep && ep->bias ? _mm512_loadu_ps(ep->bias + 16) : zero;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    __m512 lo = acc[r][0], hi = acc[r][1];
    if (accumulate) {
      lo = _mm512_add_ps(lo, _mm512_loadu_ps(row));
      hi = _mm512_add_ps(hi, _mm512_loadu_ps(row + 16));
    }
    if (ep) {
      lo = _mm512_add_ps(lo, bias0);
      hi = _mm512_add_ps(hi, bias1);
      if (ep->residual) {
        lo = _mm512_add_ps(lo, _mm512_loadu_ps(ep->residual + r * ldc));
        hi = _mm512_add_ps(hi, _mm512_loadu_ps(ep->residual + r * ldc + 16));
      }
      // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
      if (ep->activation == Activation::Relu) {
        lo = _mm512_max_ps(zero, lo);
        hi = _mm512_max_ps(zero, hi);
      } else if (ep->activation == Activation::Clip) {
        lo = _mm512_min_ps(vhi, _mm512_max_ps(vlo, lo));
        hi = _mm512_min_ps(vhi, _mm512_max_ps(vlo, hi));
      }
    }
    _mm512_storeu_ps(row, lo);
    _mm512_storeu_ps(row + 16, hi);
  }
}

}  // namespace

void microKernelAvx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                       const TileEpilogue* ep) {
  microKernelRows<12>(kc, a, b, c, ldc, accumulate, ep);
}

void microKernelAvx512Rows(int rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc) {
  if (rows <= 4)
    microKernelRows<4>(kc, a, b, c, ldc, false, nullptr);
  else if (rows <= 8)
    microKernelRows<8>(kc, a, b, c, ldc, false, nullptr);
  else
    microKernelRows<12>(kc, a, b, c, ldc, false, nullptr);
}

}  // namespace ember::cpu
