// Winograd F(2x2, 3x3) f32 convolution, NHWC, group 1, stride 1, dilation 1:
// each 2x2 block of output pixels is computed from a 4x4 input tile with 16
// multiplications per channel pair instead of 36, as 16 GEMMs over the tiles.
// See docs/backends/cpu.md, "Winograd convolution".
#pragma once

#include <cstddef>
#include <cstdint>

#include "CpuKernels.h"

namespace ember::cpu {

/// Whether a group-1 convolution runs as Winograd F(2x2, 3x3): a 3x3 window,
/// stride 1, dilation 1, an output whose 2x2 blocks need at most 60 % of
/// the direct convolution's multiplications (even sizes, 7x7 and up; not 3x3
/// or 5x5), and at least 16 blocks over all images (64 with fewer than 64
/// output channels). EMBER_CPU_NO_WINOGRAD=1 turns it off (the direct
/// convolution runs instead); EMBER_CPU_WINOGRAD_ALWAYS=1 takes every 3x3
/// stride-1 dilation-1 convolution (for tests).
bool winogradApplies(int64_t kh, int64_t kw, int64_t strideH, int64_t strideW, int64_t dilationH,
                     int64_t dilationW, int64_t images, int64_t outH, int64_t outW, int64_t outChannels);

/// Floats of the transformed, packed filter of a C -> O convolution: 16 GEMM
/// B operands of C x O, each packed by packB.
size_t winogradFilterSize(const GemmArch& arch, int64_t c, int64_t o);

/// Transforms a [O, 3, 3, C] filter (U = G g G^T per output and input
/// channel) and packs the 16 resulting C x O matrices, one after the other.
void packWinogradFilter(const GemmArch& arch, const float* filter, int64_t c, int64_t o, float* packed);

/// A Winograd convolution: the input's and output's NHWC shapes, the top and
/// left padding (the bottom and right follow from the shapes) and the filter
/// packed by packWinogradFilter.
struct WinogradConvCall {
  const float* input = nullptr;
  const float* packedFilter = nullptr;
  float* output = nullptr;  ///< [n, oh, ow, o]
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, o = 0;
  int64_t pt = 0, pl = 0;
  Epilogue epilogue;  ///< residual with the output's layout; may alias the output
};
void winogradConv(const GemmArch& arch, const WinogradConvCall& call, ThreadPool& pool);

}  // namespace ember::cpu
