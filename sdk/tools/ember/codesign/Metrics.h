// What one simulation measured: the totals and per-layer stats read from an
// `ember run --report-json` report (npu backend) or an `ember sim --stats`
// file, the area proxy of a config, and the latency-energy Pareto front.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "Json.h"
#include "ember/Error.h"
#include "ember/npu/Config.h"

namespace ember::codesign {

struct LayerStats {
  std::string name;
  std::string op;
  double cycles = 0;
  double macs = 0;
  double macUtilization = 0;
  double dramBytes = 0;
  /// Stall cycles per reason, in the report's order.
  std::vector<std::pair<std::string, double>> stalls;
};

struct RunStats {
  std::string backend;
  std::string configName;
  std::optional<double> cycles, macs, macUtilization, dramReadBytes, dramWriteBytes, energyPj, sramPeakBytes,
      compileSeconds, runSeconds, hostSeconds, clockGhz;
  /// Nodes that ran on a fallback backend (run reports only): their time is
  /// not in `cycles`, so a point with fallbacks is not comparable to one without.
  std::optional<double> fallbackNodes;
  /// `ember run`'s NPU + host partitions + host-link transfers (docs/cli.md, "End-to-end latency").
  std::optional<double> endToEndLatencyUs;
  std::vector<LayerStats> layers;
  bool hasNpuStats() const { return cycles.has_value(); }
};

/// Reads either report kind; `origin` names the file in errors.
Expected<RunStats> parseRunStats(const Json& report, const std::string& origin);

/// Area proxy (docs/codesign.md): PEs and SRAM bytes times per-unit areas of
/// a 28 nm-class process. A ranking aid, not a floorplan.
inline constexpr double kAreaPerPeMm2 = 0.0012;        ///< one int8 MAC PE with its registers
inline constexpr double kAreaPerSramByteMm2 = 3.8e-6;  ///< ~4 mm^2 per MiB incl. periphery
struct AreaProxy {
  double pes = 0;
  double sramBytes = 0;  ///< scratchpad + accumulator
  double mm2 = 0;
};
AreaProxy areaProxy(const npu::NpuConfig& config);

/// For each (latency, energy) pair: whether no other pair is at least as good
/// in both and better in one. Missing values are never on the front.
std::vector<bool> paretoFront(const std::vector<std::optional<std::pair<double, double>>>& points);

/// The columns of results.csv after the identifying ones, in order.
const std::vector<std::string>& metricColumns();

/// The metric columns of one run, by metricColumns() name (absent: not measured).
std::vector<std::pair<std::string, std::optional<double>>> metricValues(const RunStats& stats,
                                                                        const npu::NpuConfig& config);

/// What one `ember multichip --report-json` measured (docs/multichip.md).
struct MultichipStats {
  std::optional<double> numChips, latencyUs, makespanUs, throughput, steadyThroughput;
  std::optional<double> chipUtilizationMax, chipUtilizationMean, chipMacUtilizationMax,
      chipMacUtilizationMean;
  std::optional<double> linkUtilizationMax, linkUtilizationMean, linkBytes;  ///< none without links
  std::optional<double> hostSeconds;
};

/// Reads an `ember multichip` report; `origin` names the file in errors.
Expected<MultichipStats> parseMultichipStats(const Json& report, const std::string& origin);

/// The extra columns of a multi-chip sweep's results.csv, after metricColumns(),
/// and the one derived from other points (the speed-up over the same point on one chip).
const std::vector<std::string>& multichipMetricColumns();
inline constexpr const char* kSpeedupColumn = "speedup_vs_1_chip";

/// A multi-chip point's metric columns: metricColumns() (latency_us the
/// system's; the area columns per chip) then multichipMetricColumns() but the speed-up.
std::vector<std::pair<std::string, std::optional<double>>> multichipMetricValues(const MultichipStats& stats,
                                                                                 const npu::NpuConfig& config,
                                                                                 double batch);

/// Quotes a CSV field when it needs it (RFC 4180).
std::string csvField(const std::string& text);

}  // namespace ember::codesign
