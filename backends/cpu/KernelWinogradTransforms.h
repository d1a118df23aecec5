// The Winograd F(2x2, 3x3) input and output transforms (KernelWinograd.cpp),
// written once over a vector type of KernelVectors.h and instantiated with
// its 8-lane AVX2 vectors in KernelWinograd.cpp and 16-lane AVX-512 vectors
// in KernelWinogradAvx512.cpp. Only templates and plain data here: an inline
// function compiled into both files might be linked from the -mavx512f one
// and run on a CPU without AVX-512.
#pragma once

#include <cstdint>

#include "KernelWinograd.h"

namespace ember::cpu::winograd {

constexpr int64_t kPositions = 16;  ///< the 4x4 positions xi of a transformed tile

/// `lanes` floats at p (all of a vector when lanes >= V::kLanes; the rest read
/// as 0), and the store of as many.
template <class V>
inline typename V::Vec loadLanes(const float* p, int64_t lanes, typename V::Mask m) {
  return lanes >= V::kLanes ? V::load(p) : V::maskLoad(p, m);
}
template <class V>
inline void storeLanes(float* p, typename V::Vec v, int64_t lanes, typename V::Mask m) {
  if (lanes >= V::kLanes)
    V::store(p, v);
  else
    V::maskStore(p, m, v);
}
template <class V>
inline typename V::Mask laneMask(int64_t lanes) {
  return V::tailMask(lanes >= V::kLanes ? V::kLanes : int(lanes));
}

/// One work item: tiles [first, first + count) by output channels [col0,
/// col0 + cols). V and M hold `rows` rows (count rounded up to the
/// micro-tile) per position; M holds only the item's columns. Tile t is
/// block (t % perImage / tilesW, t % perImage % tilesW) of image t / perImage.
struct WorkItem {
  int64_t first, count, rows, col0, cols;
  int64_t tilesW, perImage;
};

/// V[xi][t] = B^T d B for each tile t of the item, over all C channels;
/// a tap in the padding reads `zeros` (C floats).
template <class V>
void transformInput(const WinogradConvCall& d, const WorkItem& item, float* v, const float* zeros) {
  using Reg = typename V::Vec;
  const int64_t positionStride = item.rows * d.c;
  for (int64_t t = 0; t < item.count; ++t) {
    const int64_t tile = item.first + t, image = tile / item.perImage, inImage = tile % item.perImage;
    const int64_t ty = inImage / item.tilesW, tx = inImage % item.tilesW;
    const float* in = d.input + image * d.h * d.w * d.c;
    const float* p[kPositions];
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t y = 2 * ty - d.pt + i, x = 2 * tx - d.pl + j;
        p[i * 4 + j] = y >= 0 && y < d.h && x >= 0 && x < d.w ? in + (y * d.w + x) * d.c : zeros;
      }
    float* out = v + t * d.c;
    for (int64_t ch = 0; ch < d.c; ch += V::kLanes) {
      const int64_t lanes = d.c - ch;
      const typename V::Mask mask = laneMask<V>(lanes);
      Reg x[kPositions];
      for (int64_t k = 0; k < kPositions; ++k) x[k] = loadLanes<V>(p[k] + ch, lanes, mask);
      // Rows: B^T d.
      Reg r[kPositions];
      for (int j = 0; j < 4; ++j) {
        r[0 + j] = V::sub(x[0 + j], x[8 + j]);
        r[4 + j] = V::add(x[4 + j], x[8 + j]);
        r[8 + j] = V::sub(x[8 + j], x[4 + j]);
        r[12 + j] = V::sub(x[4 + j], x[12 + j]);
      }
      // Columns: (B^T d) B, stored position by position.
      for (int i = 0; i < 4; ++i) {
        const Reg* row = r + 4 * i;
        float* at = out + (4 * i) * positionStride + ch;
        storeLanes<V>(at, V::sub(row[0], row[2]), lanes, mask);
        storeLanes<V>(at + positionStride, V::add(row[1], row[2]), lanes, mask);
        storeLanes<V>(at + 2 * positionStride, V::sub(row[2], row[1]), lanes, mask);
        storeLanes<V>(at + 3 * positionStride, V::sub(row[1], row[3]), lanes, mask);
      }
    }
  }
}

/// The output of each tile of the item from M: Y = A^T M A, then bias,
/// residual and activation, stored where the 2x2 block lies inside the
/// output (the residual may be the output: each pixel's is read just before
/// it is written).
template <class V>
void transformOutput(const WinogradConvCall& d, const WorkItem& item, const float* m) {
  using Reg = typename V::Vec;
  const Epilogue& ep = d.epilogue;
  const Reg zero = V::zero(), lo = V::set1(ep.lo), hi = V::set1(ep.hi);
  const int64_t positionStride = item.rows * item.cols;
  for (int64_t t = 0; t < item.count; ++t) {
    const int64_t tile = item.first + t, image = tile / item.perImage, inImage = tile % item.perImage;
    const int64_t ty = inImage / item.tilesW, tx = inImage % item.tilesW;
    const float* tileM = m + t * item.cols - item.col0;
    for (int64_t oc = item.col0; oc < item.col0 + item.cols; oc += V::kLanes) {
      const int64_t lanes = item.col0 + item.cols - oc;
      const typename V::Mask mask = laneMask<V>(lanes);
      Reg x[kPositions];
      for (int64_t k = 0; k < kPositions; ++k)
        x[k] = loadLanes<V>(tileM + k * positionStride + oc, lanes, mask);
      // Rows: A^T M (2 x 4).
      Reg r[8];
      for (int j = 0; j < 4; ++j) {
        r[j] = V::add(V::add(x[j], x[4 + j]), x[8 + j]);
        r[4 + j] = V::sub(V::sub(x[4 + j], x[8 + j]), x[12 + j]);
      }
      const Reg bias = ep.bias ? loadLanes<V>(ep.bias + oc, lanes, mask) : zero;
      for (int64_t dy = 0; dy < 2 && 2 * ty + dy < d.oh; ++dy) {
        const Reg* row = r + 4 * dy;
        const Reg y[2] = {V::add(V::add(row[0], row[1]), row[2]), V::sub(V::sub(row[1], row[2]), row[3])};
        for (int64_t dx = 0; dx < 2 && 2 * tx + dx < d.ow; ++dx) {
          const int64_t at = ((image * d.oh + 2 * ty + dy) * d.ow + 2 * tx + dx) * d.o + oc;
          Reg value = V::add(y[dx], bias);
          if (ep.residual) value = V::add(value, loadLanes<V>(ep.residual + at, lanes, mask));
          // max(zero, value) keeps a NaN, like the reference's v < lo ? lo : v.
          if (ep.activation == Activation::Relu)
            value = V::max(zero, value);
          else if (ep.activation == Activation::Clip)
            value = V::min(hi, V::max(lo, value));
          storeLanes<V>(d.output + at, value, lanes, mask);
        }
      }
    }
  }
}

/// The AVX-512 instances (KernelWinogradAvx512.cpp).
void transformInputAvx512(const WinogradConvCall& d, const WorkItem& item, float* v, const float* zeros);
void transformOutputAvx512(const WinogradConvCall& d, const WorkItem& item, const float* m);

}  // namespace ember::cpu::winograd
