// The compiler's cost model: the isolated instruction latencies of
// ember/npu/Timing.h, the one header the simulator times its units with, so
// the tiling search ranks candidates by what the simulator will measure.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/Arithmetic.h"
#include "ember/npu/Config.h"
#include "ember/npu/Isa.h"
#include "ember/npu/Timing.h"

namespace ember::npu_backend {

class CostModel {
 public:
  explicit CostModel(const npu::NpuConfig& config) : c_(config) {}

  /// DMA load: `e` = element bytes (1 scratchpad, 4 accumulator).
  uint64_t load(int64_t x, int64_t y, int64_t z = 1, int64_t e = 1, int64_t padTop = 0, int64_t padBottom = 0,
                int64_t padLeft = 0, int64_t padRight = 0) const;
  uint64_t store(int64_t x, int64_t y, int64_t z = 1, int64_t e = 1) const;
  /// Weight-stationary or output-stationary per the config's dataflow.
  uint64_t gemm(int64_t m, int64_t k, int64_t n, bool preload) const;
  /// A chain of gemms issued back to back on two weight buffers
  /// (matrix_engine.weight_buffers: 2), from the first issue to the last drain.
  uint64_t gemmChain(const std::vector<npu::timing::ChainedGemm>& gemms) const;
  uint64_t requant(int64_t rows, int64_t cols) const;
  uint64_t vadd(int64_t rows, int64_t cols) const;
  uint64_t lut(int64_t rows, int64_t cols) const;
  uint64_t eadd(int64_t rows, int64_t cols) const;
  uint64_t pool(int64_t outH, int64_t outW, int64_t kh, int64_t kw, int64_t c) const;
  /// DRAM channel cycles of a transfer of `rows` rows of `rowBytes` bytes.
  uint64_t dramCycles(int64_t rows, int64_t rowBytes) const;

  /// The isolated latency of any instruction (sync 1, finish 0).
  uint64_t of(const npu::isa::Instruction& in) const;
  /// A program estimate: per queue the sum of latencies, overlapped
  /// (max of the load, compute and store streams and the shared DRAM channel).
  uint64_t overlapped(uint64_t loadCycles, uint64_t computeCycles, uint64_t storeCycles,
                      uint64_t dramCycles) const;

  const npu::NpuConfig& config() const { return c_; }

 private:
  npu::NpuConfig c_;
};

}  // namespace ember::npu_backend
