#include "CostModel.h"

#include <algorithm>

#include "ember/npu/Timing.h"

namespace ember::npu_backend {

// Every latency comes from ember/npu/Timing.h, the formulas the simulator
// times its units with; only the argument order is the compiler's.

uint64_t CostModel::load(int64_t x, int64_t y, int64_t z, int64_t e, int64_t padTop, int64_t padBottom,
                         int64_t padLeft, int64_t padRight) const {
  return npu::timing::dma(c_, {uint64_t(x), uint64_t(y), uint64_t(z), uint64_t(e), uint64_t(padTop),
                               uint64_t(padBottom), uint64_t(padLeft), uint64_t(padRight)})
      .total();
}

uint64_t CostModel::store(int64_t x, int64_t y, int64_t z, int64_t e) const {
  return npu::timing::dma(c_, {uint64_t(x), uint64_t(y), uint64_t(z), uint64_t(e)}).total();
}

uint64_t CostModel::gemm(int64_t m, int64_t k, int64_t n, bool preload) const {
  return npu::timing::gemm(c_, uint64_t(m), uint64_t(k), uint64_t(n), preload).total();
}

uint64_t CostModel::gemmChain(const std::vector<npu::timing::ChainedGemm>& gemms) const {
  return npu::timing::gemmChain(c_, gemms.data(), gemms.size());
}

uint64_t CostModel::requant(int64_t rows, int64_t cols) const {
  return npu::timing::requant(c_, uint64_t(rows), uint64_t(cols)).total();
}

uint64_t CostModel::vadd(int64_t rows, int64_t cols) const {
  return npu::timing::vadd(c_, uint64_t(rows), uint64_t(cols)).total();
}

uint64_t CostModel::lut(int64_t rows, int64_t cols) const {
  return npu::timing::lut(c_, uint64_t(rows), uint64_t(cols)).total();
}

uint64_t CostModel::eadd(int64_t rows, int64_t cols) const {
  return npu::timing::eadd(c_, uint64_t(rows), uint64_t(cols)).total();
}

uint64_t CostModel::pool(int64_t outH, int64_t outW, int64_t kh, int64_t kw, int64_t c) const {
  return npu::timing::pool(c_, uint64_t(outH), uint64_t(outW), uint64_t(kh), uint64_t(kw), uint64_t(c))
      .total();
}

uint64_t CostModel::dramCycles(int64_t rows, int64_t rowBytes) const {
  return uint64_t(rows) * npu::timing::portCycles(uint64_t(rowBytes), uint64_t(c_.dramBytesPerCycle));
}

uint64_t CostModel::of(const npu::isa::Instruction& in) const { return npu::timing::isolatedCycles(c_, in); }

uint64_t CostModel::overlapped(uint64_t loadCycles, uint64_t computeCycles, uint64_t storeCycles,
                               uint64_t dramCycles) const {
  return std::max({loadCycles, computeCycles, storeCycles, dramCycles});
}

}  // namespace ember::npu_backend
