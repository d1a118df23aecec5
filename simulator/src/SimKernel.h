// Between the NPU model (Simulator.cpp: NpuTop) and the co-simulation of a
// multi-chip system around it (CoSimulation.cpp, docs/multichip.md). SystemC
// 2.3 elaborates one hierarchy per process, before the first sc_start, so
// elaborateKernel() builds everything any run may need at once: the one-chip
// top and a pool of chip tops, link channels and chip drivers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "ember/npu/Simulator.h"

namespace ember::npu::detail {

/// The chip tops (and driver threads) the kernel elaborates for co-simulation.
inline constexpr size_t kMaxCoSimulatedChips = 8;
/// Link channels: every pair of kMaxCoSimulatedChips chips.
inline constexpr size_t kMaxCoSimulatedLinks = kMaxCoSimulatedChips * (kMaxCoSimulatedChips - 1) / 2;

/// Serialises every use of the SystemC kernel (it is global).
std::mutex& simulatorMutex();

/// Elaborates the process's modules once (first call) and parks every thread.
void elaborateKernel();
/// Creates the one-chip top and the co-simulation's chip tops (elaborateKernel only).
void createNpuTops();

/// A co-simulated chip, as its driver thread sees it while it runs programs.
struct CoSimChip {
  size_t top = 0;              ///< index of its chip top
  uint64_t unitsPerCycle = 1;  ///< SystemC time units per cycle of its clock
  uint64_t busyUnits = 0;      ///< SystemC time its programs ran
  uint64_t programs = 0;
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
