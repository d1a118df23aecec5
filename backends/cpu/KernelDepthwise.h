// The f32 depthwise 3x3 convolution's row kernels (NHWC, stride 1 or 2 along
// the row, dilation 1): one output row, a range of channels, bias, residual
// and activation fused. AVX2 in KernelDepthwise.cpp, AVX-512 in
// KernelDepthwiseAvx512.cpp; both are instances of KernelDepthwiseRow.h.
// See docs/backends/cpu.md, "Depthwise convolution".
#pragma once

#include <cstdint>

#include "CpuKernels.h"

namespace ember::cpu {

/// One output row of a 3x3 depthwise convolution, channels [c0, c1).
struct DepthwiseRow {
  /// The window rows inside the input (1 to 3): each input row and the
  /// filter row (ky) it meets. Rows in the padding are left out.
  const float* inputRows[3] = {};
  int64_t filterRows[3] = {};
  int rows = 0;
  const float* filter = nullptr;    ///< [3, 3, C]
  const float* bias = nullptr;      ///< [C], or null
  const float* residual = nullptr;  ///< this output row, or null; may alias `output`
  float* output = nullptr;          ///< this output row [OW, C]
  int64_t w = 0, c = 0, ow = 0;     ///< input width, channels, output width
  int64_t sw = 1, pl = 0;           ///< horizontal stride (1 or 2) and left padding
  int64_t c0 = 0, c1 = 0;           ///< the channels this call computes
  Activation activation = Activation::None;
  float lo = 0, hi = 0;
};

/// Whether the row kernels run this depthwise convolution (3x3, dilation 1,
/// horizontal stride 1 or 2).
bool depthwiseRowKernelFits(const DepthwiseCall& d);

void depthwiseRowAvx2(const DepthwiseRow& r);    // KernelDepthwise.cpp
void depthwiseRowAvx512(const DepthwiseRow& r);  // KernelDepthwiseAvx512.cpp

}  // namespace ember::cpu
