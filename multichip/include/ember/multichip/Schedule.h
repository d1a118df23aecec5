// Timing a multi-chip run (docs/multichip.md): the chips' stage runs (their
// cycles measured by the simulator, one run per micro-batch) and the
// transfers of cut tensors on the links, composed event by event. A chip runs
// one task at a time; each direction of a full-duplex link carries one
// transfer at a time (later ones wait: link contention), cut-through over
// the route's hops. This is a composition of separate simulations, not a
// co-simulation of the chips in one SystemC elaboration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/multichip/SystemConfig.h"

namespace ember::multichip {

/// One unit of work: a stage run on a chip, or a tensor sent between chips.
struct Task {
  enum class Kind { Compute, Transfer } kind = Kind::Compute;
  size_t microBatch = 0;
  size_t chip = 0;             ///< Compute: the chip; Transfer: the sender
  size_t toChip = 0;           ///< Transfer: the receiver
  double nanoseconds = 0;      ///< Compute: its cycles at the chip's clock
  double hostNanoseconds = 0;  ///< Compute: then its host partitions' time on the chip's host
  int64_t bytes = 0;           ///< Transfer
  std::vector<size_t> after;   ///< tasks that must end before this one starts
  std::string label;
};

struct TaskTiming {
  double start = 0, end = 0;  ///< ns from the first task's start
};

struct LinkUse {
  double busyNs[2] = {0, 0};  ///< per direction: a -> b, b -> a
  int64_t bytes[2] = {0, 0};
  size_t transfers = 0;
};

struct Schedule {
  std::vector<TaskTiming> tasks;
  std::vector<double> chipBusyNs;  ///< per chip: compute time (its programs)
  std::vector<double> hostBusyNs;  ///< per chip: its host's time (host partitions)
  std::vector<LinkUse> links;      ///< per link of the system
  double makespanNs = 0;           ///< the last task's end
  /// Per micro-batch, its last task's end (the batch's first image is done at
  /// microBatchEndNs[0]: the end-to-end latency).
  std::vector<double> microBatchEndNs;
};

/// Schedules `tasks` (dependencies point to earlier tasks) greedily: among
/// the tasks whose dependencies are done, the one that can start first runs
/// first (ties: lower index). Deterministic.
Schedule scheduleTasks(const SystemConfig& system, const std::vector<Task>& tasks, size_t microBatches);

}  // namespace ember::multichip
