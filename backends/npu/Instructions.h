// Builders of single NPU instructions (fields as in docs/npu/isa.md). Token
// bits are set later by the ProgramBuilder.
#pragma once

#include <cstdint>

#include "ember/npu/Isa.h"

namespace ember::npu_backend {

/// A 2-D/3-D strided DMA between DRAM and the scratchpad or accumulator.
struct Dma {
  bool accumulator = false;
  uint64_t dram = 0, sram = 0;
  int64_t x = 1, y = 1, z = 0;
  int64_t dramYStride = 0, dramZStride = 0, sramStride = 0;
  int64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0, padValue = 0;
};

npu::isa::Instruction makeLoad(const Dma& dma);
npu::isa::Instruction makeStore(const Dma& dma);

struct Gemm {
  bool accumulate = false, preload = true;
  bool biasInit = false;  ///< ISA v3: start from the bias row at accumulator entry `bias`
  uint64_t bias = 0;
  int64_t m = 1, k = 1, n = 1;
  uint64_t inp = 0, wgt = 0, acc = 0;
  int64_t inpStride = 0, wgtStride = 0, accStride = 0;
};
npu::isa::Instruction makeGemm(const Gemm& g);

npu::isa::Instruction makeRequant(uint64_t src, int64_t srcStride, uint64_t dst, int64_t dstStride,
                                  int64_t rows, int64_t cols, int32_t multiplier, int32_t shift,
                                  int32_t zeroPoint, int32_t lo, int32_t hi);
npu::isa::Instruction makeVAdd(uint64_t dst, int64_t dstStride, uint64_t src, int64_t srcStride, int64_t rows,
                               int64_t cols);
npu::isa::Instruction makeLut(uint64_t src, int64_t srcStride, uint64_t dst, int64_t dstStride, int64_t rows,
                              int64_t cols, uint64_t table);
npu::isa::Instruction makeEAdd(uint64_t a, int64_t aStride, uint64_t b, int64_t bStride, uint64_t dst,
                               int64_t dstStride, int64_t rows, int64_t cols, uint64_t params);

struct Pool {
  bool average = false;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, outH = 1, outW = 1, c = 1;
  uint64_t src = 0, dst = 0;
  int64_t srcStride = 0, dstStride = 0;
};
npu::isa::Instruction makePool(const Pool& p);
npu::isa::Instruction makeSync(npu::isa::Queue queue);

}  // namespace ember::npu_backend
