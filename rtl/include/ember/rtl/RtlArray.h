// The Verilator build of rtl/ember_matrix_engine.sv as a plain C++ object
// (docs/npu/rtl.md). No Verilator type appears here: the simulator's RTL
// matrix engine, the RTL tests and the timing-validation tool drive it
// through this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/Error.h"

namespace ember::rtl {

/// One gemm instruction's operands (docs/npu/isa.md): scratchpad byte
/// addresses for inp and wgt, accumulator entry indices for acc.
struct GemmJob {
  bool outputStationary = false;
  bool accumulate = false;
  bool preload = true;
  unsigned wbuf = 0;  ///< weight buffer (WS, matrix_engine.weight_buffers: 2)
  uint32_t m = 1, k = 1, n = 1;
  uint32_t inpAddr = 0, inpStride = 0;
  uint32_t wgtAddr = 0, wgtStride = 0;
  uint32_t accAddr = 0, accStride = 0;
};

/// The memories the engine reads and writes. Lanes outside them read as 0
/// and are not written (the simulator range-checks operands before a run).
struct Memories {
  const int8_t* scratchpad = nullptr;
  size_t scratchpadBytes = 0;
  int32_t* accumulator = nullptr;
  size_t accumulatorEntries = 0;
};

/// Grants a stage of a chained gemm its ports: given the cycle the stage
/// could start (its ready cycle), the cycle it starts (>= ready). The
/// simulator arbitrates the scratchpad banks and the accumulator port here.
using StageGrant = std::function<uint64_t(uint64_t ready)>;

/// When a chained gemm's stages started (docs/npu/timing-model.md, "Two
/// weight buffers"): a stage starting at cycle s reads its first row at s + 1.
struct ChainedStart {
  uint64_t preloadStart = 0;  ///< the issue cycle when the gemm has no preload
  uint64_t streamStart = 0;
};

/// One verilated ROWS x COLS matrix engine, clocked cycle by cycle.
class RtlArray {
 public:
  /// The array sizes that have a Verilator build ({16,16}, {32,32}).
  static std::vector<std::pair<int, int>> availableSizes();
  /// Errors: no build for rows x cols, or the VCD file cannot be opened.
  /// `vcdPath` non-empty dumps every clocked cycle (1 cycle = 1 ns).
  static Expected<std::unique_ptr<RtlArray>> create(int rows, int cols, const std::string& vcdPath = "");

  virtual ~RtlArray() = default;
  virtual int rows() const = 0;
  virtual int cols() const = 0;
  /// Runs one instruction from start to done on `memories` and returns its
  /// cycles (start cycle to the cycle done is high; the next instruction may
  /// start in that cycle). `startCycle` places it on the VCD's time axis.
  /// Weights: WS keeps them in the PEs; OS keeps the last preloaded tile in a
  /// weight buffer outside the array, which port B reads when preload = 0.
  virtual Expected<uint64_t> run(const GemmJob& job, const Memories& memories, uint64_t startCycle = 0) = 0;

  // Two weight buffers (weight-stationary): gemms overlap. The engine is
  // clocked only as far as the caller's questions need, so earlier gemms
  // finish while later ones are issued; `memories` must stay valid until
  // drain().
  /// Offers `job` at `issueCycle` (not before the previous issue's stream
  /// start) and clocks until the engine asks to start its stream; each stage
  /// starts when `grantPreload` / `grantStream` say.
  virtual Expected<ChainedStart> issue(const GemmJob& job, const Memories& memories, uint64_t issueCycle,
                                       const StageGrant& grantPreload, const StageGrant& grantStream) = 0;
  /// Clocks until the gemm of issue call `index` (0-based) has written its
  /// last row; returns the cycle its done pulse was high.
  virtual Expected<uint64_t> retire(uint64_t index) = 0;
  /// Gemms issued so far.
  virtual uint64_t issued() const = 0;
  /// Cycles clocked since creation (for speed measurements).
  virtual uint64_t clockedCycles() const = 0;
};

}  // namespace ember::rtl
