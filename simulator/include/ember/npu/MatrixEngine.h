// The matrix engine behind one interface: the fast model (the gemm latency of
// ember/npu/Timing.h plus the functional GEMM) or the Verilator build of
// the RTL in rtl/ (docs/npu/rtl.md). The simulator's compute unit owns one per
// run; port contention stays in the TLM model around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "ember/Error.h"
#include "ember/npu/Config.h"
#include "ember/npu/Isa.h"
#include "ember/npu/Timing.h"

namespace ember::npu {

/// The SRAMs a gemm reads and writes (raw, already range-checked).
struct EngineMemories {
  const int8_t* scratchpad = nullptr;
  size_t scratchpadBytes = 0;
  int32_t* accumulator = nullptr;
  size_t accumulatorEntries = 0;
};

class MatrixEngine {
 public:
  virtual ~MatrixEngine() = default;
  virtual std::string_view name() const = 0;  ///< "fast" or "rtl"
  /// Executes one gemm on the memories and returns its cycles in isolation
  /// (no port contention). `startCycle` is the program cycle it starts at.
  virtual Expected<uint64_t> gemm(const isa::Instruction& in, const EngineMemories& memories,
                                  uint64_t startCycle) = 0;
  /// k x n of the weights the last preload left in weight buffer `buffer`
  /// (gemm field `wbuf`; 0 x 0 before any).
  virtual std::pair<int64_t, int64_t> keptWeights(unsigned buffer = 0) const = 0;
  /// Cycles the engine clocked (RTL) or accounted (fast) since creation.
  virtual uint64_t engineCycles() const = 0;
};

std::unique_ptr<MatrixEngine> makeFastMatrixEngine(const NpuConfig& config);
/// The Verilator build of rtl/ for config's array size. Errors: not built,
/// no model of that size, ports narrower than one row a cycle, or a VCD file
/// that cannot be written (`vcdPath` non-empty: dump the waveforms).
Expected<std::unique_ptr<MatrixEngine>> makeRtlMatrixEngine(const NpuConfig& config,
                                                            const std::string& vcdPath = "");
/// Whether this build includes the RTL matrix engine.
bool rtlMatrixEngineBuilt();

}  // namespace ember::npu
