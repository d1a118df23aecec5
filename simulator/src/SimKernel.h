// Between the NPU model (Simulator.cpp: NpuTop) and the co-simulation of a
// multi-chip system around it (CoSimulation.cpp, docs/multichip.md). SystemC
// 2.3 elaborates one hierarchy per process, before the first sc_start, so
// elaborateKernel() builds everything any run may need at once: the one-chip
// top and a pool of chip tops, link channels and chip drivers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "ember/npu/Simulator.h"

namespace ember::npu::detail {

/// The chip tops (and driver threads) the kernel elaborates for co-simulation
/// at least; more when the process asked for more before its first simulation
/// (reserveCoSimulatedChips).
inline constexpr size_t kMinCoSimulatedChips = 8;
/// The chip tops elaborated (or to be elaborated) for co-simulation.
size_t coSimulatedChipCapacity();
/// Link channels: every pair of the elaborated chips.
inline size_t coSimulatedLinkCapacity() {
  return coSimulatedChipCapacity() * (coSimulatedChipCapacity() - 1) / 2;
}

/// Serialises every use of the SystemC kernel (it is global).
std::mutex& simulatorMutex();

/// Elaborates the process's modules once (first call) and parks every thread.
void elaborateKernel();
/// Creates the one-chip top and the co-simulation's chip tops (elaborateKernel only).
void createNpuTops();

/// The DRAM the chips of a system share (docs/multichip.md): one bandwidth,
/// and a calendar of the times it is busy in absolute SystemC time (the chips'
/// clocks may differ). A DRAM transaction takes the earliest free gap at or
/// after the time it asks for: chips that run ahead of each other (temporal
/// decoupling) still share the time in order.
class SharedDramCalendar {
 public:
  /// Empties the calendar; `gbPerSecond` > 0 (GB/s = bytes per ns).
  void configure(double gbPerSecond, uint64_t unitsPerNanosecond);
  /// SystemC time units `bytes` hold the DRAM (rounded down, so that a chip
  /// whose own DRAM port is as fast is never slowed by its own traffic).
  uint64_t holdUnits(uint64_t bytes) const;
  /// Reserves `bytes`' hold at the earliest start >= `at` that overlaps no
  /// earlier reservation; returns it.
  uint64_t reserve(uint64_t at, uint64_t bytes);
  /// Drops the reservations that end by `time` (no request asks before the
  /// current SystemC time).
  void forgetBefore(uint64_t time);

  uint64_t busyUnits = 0, bytes = 0, transactions = 0;

 private:
  std::map<uint64_t, uint64_t> busy_;  ///< start -> end, disjoint, adjacent ones merged
  double unitsPerByte_ = 0;
};

/// A co-simulated chip, as its driver thread sees it while it runs programs.
struct CoSimChip {
  size_t top = 0;              ///< index of its chip top
  uint64_t unitsPerCycle = 1;  ///< SystemC time units per cycle of its clock
  uint64_t busyUnits = 0;      ///< SystemC time its programs ran
  uint64_t programs = 0;
  SharedDramCalendar* sharedDram = nullptr;  ///< the system's shared DRAM, if any
  uint64_t dramStallCycles = 0;              ///< its programs' DRAM bandwidth stalls (every unit)
  uint64_t sharedDramWaitCycles = 0;         ///< of which: waiting for the shared DRAM
};

/// The co-simulated chip whose driver thread is the calling SystemC process, if any.
CoSimChip* currentCoSimChip();

/// Runs a program on chip top `chip.top` from its driver thread: returns when
/// the program ends (SystemC time has advanced by its cycles).
Expected<SimStats> simulateOnChip(CoSimChip& chip, const Bundle& bundle, const NpuConfig& config,
                                  DramImage& dram, const SimOptions& options);

/// Aborts every chip top's run that is still in progress (a co-simulation
/// that ended with a chip blocked: its deadlock); true when there was one.
bool abortUnfinishedRuns();

}  // namespace ember::npu::detail
