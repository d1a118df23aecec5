// Direct (indirect-GEMM) f32 convolution, NHWC, group 1: the GEMM's packed
// filter panels times input rows read in place through per-row pointers, with
// no A packing. See docs/backends/cpu.md, "Direct convolution".
#pragma once

#include <cstdint>

#include "CpuKernels.h"

namespace ember::cpu {

/// A group-1 convolution whose filter [O, KH, KW, C] was packed by packB
/// (transposed) into NR-column panels over K = KH * KW * C.
struct DirectConvCall {
  const float* input = nullptr;
  const float* packedB = nullptr;
  float* output = nullptr;  ///< [n, oh, ow, o]
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, o = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  Epilogue epilogue;  ///< residual with the output's layout; may alias the output
};
void directConv(const GemmArch& arch, const DirectConvCall& call, ThreadPool& pool);

/// What a direct-convolution micro-kernel reads: for each of `segments`
/// segments, MR row pointers (rows[s * MR + r]) to `segLen` contiguous floats
/// of A; B is the packed panel over all of K = segments * segLen.
struct ConvTile {
  const float* const* rows = nullptr;
  int64_t segments = 0, segLen = 0;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  int validRows = 0, validCols = 0;  ///< of the MR x NR tile, the part stored
};

/// C[tile] = epilogue(A x B) over the whole K; stores only the valid rows and
/// columns (bias and residual are read only there too).
void convTile6x16(const ConvTile& t, const TileEpilogue& ep);
void convTile12x32Avx512(const ConvTile& t, const TileEpilogue& ep);  // KernelConvAvx512.cpp

}  // namespace ember::cpu
