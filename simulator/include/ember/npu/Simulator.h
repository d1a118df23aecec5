// The cycle-approximate NPU simulator as a plain library (no SystemC types
// here: SystemC is a private dependency, docs/npu/architecture.md).
//
// simulate() may be called many times in one process, one call at a time (a
// mutex serialises concurrent callers, because SystemC's kernel is global).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Bundle.h"
#include "ember/npu/Config.h"

namespace ember::npu {

/// Why a unit waited instead of working.
enum class StallReason : uint8_t {
  Token,            ///< waiting on a dependency token
  DramBandwidth,    ///< the DRAM channel was busy with another transfer
  BankConflict,     ///< a scratchpad bank was busy with another access
  AccumulatorPort,  ///< the accumulator port was busy
  QueueFull,        ///< fetch: the target instruction queue was full
  Count
};
inline constexpr size_t kNumStallReasons = size_t(StallReason::Count);
std::string_view stallReasonName(StallReason r);

/// The timed units; each is one track of the trace.
enum class Unit : uint8_t { Fetch, Load, Compute, Store, MatrixEngine, VectorUnit, Count };
inline constexpr size_t kNumUnits = size_t(Unit::Count);
std::string_view unitName(Unit u);

struct UnitStats {
  uint64_t busyCycles = 0;
  std::array<uint64_t, kNumStallReasons> stallCycles{};
};

/// One executed instruction.
struct InstructionRecord {
  uint32_t index = 0;
  uint8_t opcode = 0;
  uint16_t layer = 0;
  Unit unit = Unit::Compute;
  uint64_t issueCycle = 0;  ///< taken from its queue (token waits start here)
  uint64_t startCycle = 0;  ///< tokens acquired, work begins
  uint64_t endCycle = 0;
  uint64_t macs = 0;
  uint64_t dramBytes = 0;
  std::array<uint64_t, kNumStallReasons> stallCycles{};
};

struct LayerStats {
  std::string name;
  std::string op;  ///< the layer's dominant opcode ("gemm", "pool", ...)
  uint64_t cycles = 0, macs = 0, dramBytes = 0;
  double macUtilization = 0;
  std::array<uint64_t, kNumStallReasons> stallCycles{};
};

struct SimStats {
  std::string configName;
  double clockGhz = 1.0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  uint64_t macs = 0;
  double macUtilization = 0;
  uint64_t dramReadBytes = 0, dramWriteBytes = 0;
  uint64_t scratchpadReadBytes = 0, scratchpadWriteBytes = 0;
  uint64_t accumulatorReadBytes = 0, accumulatorWriteBytes = 0;
  uint64_t vectorOps = 0;
  uint64_t scratchpadPeakBytes = 0, accumulatorPeakBytes = 0;
  double energyPj = 0;
  std::map<std::string, double> energyBreakdownPj;
  double hostSeconds = 0;
  std::string matrixEngine = "fast";  ///< the engine model that ran: "fast" or "rtl"
  uint64_t matrixEngineCycles = 0;    ///< cycles the engine clocked (rtl) or accounted (fast)
  std::array<UnitStats, kNumUnits> units{};
  std::vector<LayerStats> layers;
  std::vector<InstructionRecord> records;  ///< in completion order
};

struct SimOptions {
  /// Prints progress lines to stderr when a run takes longer than this (<0: never).
  double progressAfterSeconds = -1;
  /// Called for progress instead of stderr when set.
  std::function<void(const std::string&)> progress;
  /// With the RTL matrix engine: dump its waveforms to this VCD file.
  std::string vcdPath;
  /// Asked every 1024 fetched instructions; true stops the run with the
  /// error "interrupted" (the Python binding's Ctrl-C).
  std::function<bool()> cancelled;
  /// A cycle budget: a run that passes it stops with an error naming the
  /// budget (`--max-cycles`; 0: none).
  uint64_t maxCycles = 0;
};

/// The program's DRAM image before and after a run.
struct DramImage {
  std::vector<uint8_t> bytes;  ///< bundle.dramBytes long
};

/// Places the weight image into a fresh zeroed DRAM image of the bundle's size.
DramImage makeDram(const Bundle& bundle);

/// For its lifetime, makes `cancelled` the cancellation check of every
/// simulate() call on this thread whose options set none. A host that runs
/// models through a backend's device, which passes no options (the Python
/// binding's Ctrl-C in `Compiled.run`), interrupts the simulation this way.
class ScopedCancellation {
 public:
  explicit ScopedCancellation(std::function<bool()> cancelled);
  ~ScopedCancellation();
  ScopedCancellation(const ScopedCancellation&) = delete;
  ScopedCancellation& operator=(const ScopedCancellation&) = delete;

 private:
  std::function<bool()> previous_;
};

/// For its lifetime, gives every simulate() call on this thread whose options
/// set no cycle budget the budget `maxCycles` (`ember run --backend npu
/// --max-cycles`, whose device passes no options).
class ScopedCycleBudget {
 public:
  explicit ScopedCycleBudget(uint64_t maxCycles);
  ~ScopedCycleBudget();
  ScopedCycleBudget(const ScopedCycleBudget&) = delete;
  ScopedCycleBudget& operator=(const ScopedCycleBudget&) = delete;

 private:
  uint64_t previous_;
};

/// Runs the program to FINISH on `dram` (updated in place). Errors: a config
/// the bundle was not compiled for, an illegal instruction (with its index),
/// or deadlock (naming every blocked queue).
Expected<SimStats> simulate(const Bundle& bundle, const NpuConfig& config, DramImage& dram,
                            const SimOptions& options = {});

/// Stats as JSON (keys in docs/npu/timing-model.md and docs/cli.md);
/// `perInstruction` adds the records.
std::string statsToJson(const SimStats& stats, const Bundle& bundle, bool perInstruction);
/// A Chrome trace-event timeline, one track per unit (opens in Perfetto).
std::string traceToJson(const SimStats& stats, const Bundle& bundle);

}  // namespace ember::npu
