// The matrix engine behind one interface: the fast model (the gemm latency of
// ember/npu/Timing.h plus the functional GEMM) or the Verilator build of
// the RTL in rtl/ (docs/npu/rtl.md). The simulator's compute unit owns one per
// run; port contention stays in the TLM model around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

/// Grants a gemm stage its ports: given the cycle the stage is ready, the
/// cycle it starts (>= ready). The simulator's compute unit reserves the
/// scratchpad banks and the accumulator port here.
using StageGrant = std::function<uint64_t(uint64_t ready)>;

class MatrixEngine {
 public:
  virtual ~MatrixEngine() = default;
  virtual std::string_view name() const = 0;  ///< "fast" or "rtl"
  /// Executes one gemm on the memories and returns its cycles in isolation
  /// (no port contention). `startCycle` is the program cycle it starts at.
  virtual Expected<uint64_t> gemm(const isa::Instruction& in, const EngineMemories& memories,
                                  uint64_t startCycle) = 0;
  /// Two weight buffers (matrix_engine.weight_buffers: 2, weight-stationary):
  /// issues one gemm of a chain at program cycle `issueCycle` (not before the
  /// previous gemm's stream start) while earlier gemms are still in flight,
  /// and returns its stages (docs/npu/timing-model.md, "Two weight buffers").
  /// Each stage starts when its grant says. With `untilDone` the gemm's
  /// results are written when this returns and `done` is the engine's own;
  /// otherwise earlier gemms' results may still be on their way (the RTL is
  /// clocked lazily) and `done` is the formula's, which the engine checks
  /// when the gemm retires (drainChain, or a later call with `untilDone`).
  virtual Expected<timing::GemmStages> chainedGemm(const isa::Instruction& in, const EngineMemories& memories,
                                                   uint64_t issueCycle, const StageGrant& grantPreload,
                                                   const StageGrant& grantStream, bool untilDone) = 0;
  /// Finishes every chained gemm: its results are written; returns the cycle
  /// the last one was done (0 before any). Only the compute queue's thread
  /// may call it: the RTL is clocked on to that cycle.
  virtual Expected<uint64_t> drainChain() = 0;
  /// The cycle every chained gemm issued so far is done by, without clocking
  /// the RTL (the formula's, checked when the gemms retire).
  virtual uint64_t chainDoneBy() const = 0;
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
