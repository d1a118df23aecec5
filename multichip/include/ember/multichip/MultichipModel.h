// A model split over the chips of a system (docs/multichip.md): compiled as
// pipeline stages (one per chip, balanced by the NPU cost model) or data
// parallel (the whole model on every chip, the micro-batches spread over
// them), and run with the chips and links co-simulated in one SystemC
// elaboration (ember/npu/CoSimulation.h); or run micro-batch by micro-batch,
// one simulation at a time, and timed by the event schedule (Schedule.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Runtime.h"
#include "ember/multichip/Schedule.h"
#include "ember/multichip/SystemConfig.h"

namespace ember::multichip {

enum class SplitMode { Pipeline, Data };
std::string_view splitModeName(SplitMode mode);

struct MultichipOptions {
  SplitMode split = SplitMode::Pipeline;
  /// The registered backend of every chip; its option "config" is set to the
  /// chip's NPU config.
  std::string backend = "npu";
  /// The one-chip run's options: the quantizer (beforeLowering) and the
  /// fallback backends that run what the chip does not.
  CompileOptions compile;
};

struct CompiledStage {
  std::string name;  ///< "s0", "s1", ...
  size_t chip = 0;
  std::vector<std::string> inputs, outputs;
  std::vector<std::pair<std::string, std::string>> outputAliases;  ///< (model output, cut tensor)
  size_t numNodes = 0;
  std::string firstNode, lastNode;
  uint64_t estimatedCycles = 0;  ///< the compiler's estimate for its chip
  int64_t dramBytes = 0;         ///< planned constants + inputs/outputs + activations
  /// Its partitions on other backends than the chip's (the host: e.g. the
  /// input's Quantize), "backend:nodes"; their modelled time and host-link
  /// transfers take simulated time on the chip's host (SystemConfig::host).
  std::vector<std::string> hostPartitions;
  /// Shared by the data-parallel stages of chips with the same config.
  std::shared_ptr<CompiledModel> model;
};

/// A tensor cut between two pipeline stages, sent once per micro-batch.
struct CutTransfer {
  std::string tensor;
  size_t fromStage = 0, toStage = 0;
  int64_t bytes = 0;
};

struct MultichipModel {
  SystemConfig system;
  SplitMode split = SplitMode::Pipeline;
  /// Pipeline: the stages in order, stage k on chip k. Data: the whole model
  /// compiled for each chip, stage k on chip k.
  std::vector<CompiledStage> stages;
  std::vector<CutTransfer> transfers;
  std::vector<std::pair<std::string, Type>> inputs, outputs;  ///< one micro-batch's signature
};

/// Quantizes and optimizes `function` as the one-chip run does (consumed),
/// splits it and compiles every stage for its chip. Errors name the chip and
/// the stage (a stage the chip cannot hold) or the link.
Expected<MultichipModel> compileMultichip(Function& function, const SystemConfig& system,
                                          const MultichipOptions& options);

struct MultichipRun {
  std::vector<std::map<std::string, Tensor>> outputs;  ///< per micro-batch, by model output name
  /// Per micro-batch, the stages it ran on ([stage] = cycles; data: only its chip's stage).
  std::vector<std::map<size_t, uint64_t>> stageCycles;
  /// The same runs' host time: host partitions plus host-link transfers
  /// (ember/HostModel.h; 0 when the system's host is not timed).
  std::vector<std::map<size_t, double>> stageHostNs;
  std::vector<uint64_t> stageMacs;  ///< summed over micro-batches
  double hostSeconds = 0;           ///< host time the simulations took
};

/// Runs every micro-batch (one input map each, the model's signature) through
/// the stages on the simulator, one simulation at a time (timed afterwards by timeRun). Data parallel: each
/// micro-batch goes to the chip that the compiler's estimates say finishes it first.
Expected<MultichipRun> runMultichip(MultichipModel& model,
                                    const std::vector<std::map<std::string, Tensor>>& inputs);

/// The tasks of a run: each stage run per micro-batch, each cut tensor's
/// transfer per micro-batch, on `system` (the model's, or one with other links).
std::vector<Task> buildTasks(const MultichipModel& model, const MultichipRun& run,
                             const SystemConfig& system);

/// What an architect reads off a timed run.
struct MultichipFigures {
  Schedule schedule;
  double latencyNs = 0;                  ///< the first micro-batch's end (end-to-end latency)
  double makespanNs = 0;                 ///< the whole batch
  double throughputPerSecond = 0;        ///< micro-batches per second over the batch
  double steadyThroughputPerSecond = 0;  ///< between the first and the last micro-batch's end
  std::vector<double> chipUtilization;   ///< busy / makespan
  std::vector<double> chipMacUtilization;
  std::vector<double> linkUtilization;  ///< the busier direction's busy / makespan
  /// Co-simulated: per chip, its programs' DRAM bandwidth stall cycles and,
  /// of those, the cycles waiting for the shared DRAM (empty from the schedule).
  std::vector<uint64_t> chipDramStallCycles, chipSharedDramWaitCycles;
  /// Co-simulated on a shared DRAM: its busy time, bytes, and busy / makespan.
  double sharedDramBusyNs = 0, sharedDramUtilization = 0;
  uint64_t sharedDramBytes = 0;
};
MultichipFigures timeRun(const MultichipModel& model, const MultichipRun& run, const SystemConfig& system);

/// The figures of a schedule (from timeRun's event schedule or a co-simulation).
MultichipFigures figuresOf(const MultichipModel& model, const MultichipRun& run, const SystemConfig& system,
                           Schedule schedule);

/// A run with every chip and link co-simulated in one SystemC elaboration.
struct CoSimulatedRun {
  MultichipRun run;          ///< outputs and stage cycles, as runMultichip's
  MultichipFigures figures;  ///< from the co-simulation's times
  double hostSeconds = 0;    ///< the co-simulation's host time
};

/// Runs every micro-batch through the stages with the chips co-simulated on
/// `system` (the model's, or one with other links): each chip's driver runs
/// its stage per micro-batch in order, waiting for the cut tensors it reads
/// from the links and sending those it produces (fewest-hop routes).
Expected<CoSimulatedRun> coSimulateMultichip(MultichipModel& model,
                                             const std::vector<std::map<std::string, Tensor>>& inputs,
                                             const SystemConfig& system);

/// `system` with every link's bandwidth (and latency, when >= 0) replaced.
SystemConfig withLinks(const SystemConfig& system, double bandwidthGBps, double latencyNs = -1);

}  // namespace ember::multichip
