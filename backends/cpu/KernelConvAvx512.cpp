// The AVX-512 direct-convolution micro-kernel (12 x 32): A is read through
// 12 row pointers per segment instead of from a packed panel. Chosen only when
// the CPU reports avx512f (GemmArch); this file is compiled with -mavx512f.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>

#include "KernelConv.h"

namespace ember::cpu {

namespace {

/// The first kRows rows of a 12-row tile (the pointer table keeps 12 per
/// segment): a tail of a few rows (49 pixels of a 7x7 layer are 4 tiles and
/// 1 row) does not pay for 12.
template <int kRows>
void convTileRows(const ConvTile& t, const TileEpilogue& ep) {
  constexpr int kTableRows = 12;
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const float* b = t.b;
  for (int64_t s = 0; s < t.segments; ++s) {
    const float* const* rows = t.rows + s * kTableRows;
    const float* p[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) p[r] = rows[r];
    for (int64_t j = 0; j < t.segLen; ++j) {
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r) {
        const __m512 ar = _mm512_set1_ps(p[r][j]);
        acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
      }
      b += 32;
    }
  }
  const int cols = t.validCols;
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? __mmask16((1u << (cols - 16)) - 1) : 0;
  const __m512 zero = _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(ep.lo), vhi = _mm512_set1_ps(ep.hi);
  const __m512 bias0 = ep.bias ? _mm512_maskz_loadu_ps(m0, ep.bias) : zero;
  const __m512 bias1 = ep.bias ? _mm512_maskz_loadu_ps(m1, ep.bias + 16) : zero;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= t.validRows) break;
    float* row = t.c + r * t.ldc;
    __m512 lo = _mm512_add_ps(acc[r][0], bias0), hi = _mm512_add_ps(acc[r][1], bias1);
    if (ep.residual) {
      lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(m0, ep.residual + r * t.ldc));
      hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(m1, ep.residual + r * t.ldc + 16));
    }
    // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
    if (ep.activation == Activation::Relu) {
      lo = _mm512_max_ps(zero, lo);
      hi = _mm512_max_ps(zero, hi);
    } else if (ep.activation == Activation::Clip) {
      lo = _mm512_min_ps(vhi, _mm512_max_ps(vlo, lo));
      hi = _mm512_min_ps(vhi, _mm512_max_ps(vlo, hi));
    }
    _mm512_mask_storeu_ps(row, m0, lo);
    _mm512_mask_storeu_ps(row + 16, m1, hi);
  }
}

}  // namespace

void convTile12x32Avx512(const ConvTile& t, const TileEpilogue& ep) {
  if (t.validRows <= 4)
    convTileRows<4>(t, ep);
  else if (t.validRows <= 8)
    convTileRows<8>(t, ep);
  else
    convTileRows<12>(t, ep);
}

}  // namespace ember::cpu
