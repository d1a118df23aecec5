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
/// 1 row) does not pay for 12. With kVecs = 1 only the panel's first 16
/// columns: a layer with 16 output channels (or a last panel of at most 16)
/// does not multiply 16 zero columns.
template <int kRows, int kVecs>
void convTileRows(const ConvTile& t, const TileEpilogue& ep) {
  constexpr int kTableRows = 12;
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  const float* b = t.b;
  for (int64_t s = 0; s < t.segments; ++s) {
    const float* const* rows = t.rows + s * kTableRows;
    const float* p[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) p[r] = rows[r];
    for (int64_t j = 0; j < t.segLen; ++j) {
      __m512 bv[kVecs];
      for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r) {
        const __m512 ar = _mm512_set1_ps(p[r][j]);
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
      }
      b += 32;
    }
  }
  const int cols = t.validCols;
  const __mmask16 mask[2] = {cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1),
                             cols >= 32  ? __mmask16(0xFFFF)
                             : cols > 16 ? __mmask16((1u << (cols - 16)) - 1)
                                         : __mmask16(0)};
  const __m512 zero = _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(ep.lo), vhi = _mm512_set1_ps(ep.hi);
  __m512 bias[kVecs];
  for (int v = 0; v < kVecs; ++v) bias[v] = ep.bias ? _mm512_maskz_loadu_ps(mask[v], ep.bias + 16 * v) : zero;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= t.validRows) break;
    float* row = t.c + r * t.ldc;
    for (int v = 0; v < kVecs; ++v) {
      __m512 x = _mm512_add_ps(acc[r][v], bias[v]);
      if (ep.residual) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], ep.residual + r * t.ldc + 16 * v));
      // max(lo, v) keeps a NaN v, like the reference's v < lo ? lo : v.
      if (ep.activation == Activation::Relu)
        x = _mm512_max_ps(zero, x);
      else if (ep.activation == Activation::Clip)
        x = _mm512_min_ps(vhi, _mm512_max_ps(vlo, x));
      _mm512_mask_storeu_ps(row + 16 * v, mask[v], x);
    }
  }
}

/// The tile for `validRows` rows and kVecs vectors of columns.
template <int kVecs>
void convTileOfRows(const ConvTile& t, const TileEpilogue& ep) {
  if (t.validRows <= 4)
    convTileRows<4, kVecs>(t, ep);
  else if (t.validRows <= 8)
    convTileRows<8, kVecs>(t, ep);
  else
    convTileRows<12, kVecs>(t, ep);
}

}  // namespace

void convTile12x32Avx512(const ConvTile& t, const TileEpilogue& ep) {
  if (t.validCols <= 16)
    convTileOfRows<1>(t, ep);
  else
    convTileOfRows<2>(t, ep);
}

}  // namespace ember::cpu
