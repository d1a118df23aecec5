#include "Metrics.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace ember::codesign {
namespace {

std::optional<double> numberAt(const Json& object, std::string_view key) { return object.numberAt(key); }

std::vector<std::pair<std::string, double>> stallsOf(const Json& layer) {
  std::vector<std::pair<std::string, double>> stalls;
  // `ember sim` writes "stalls"; the npu backend's run report "stall_cycles".
  const Json* s = layer.find("stall_cycles");
  if (!s || !s->isObject()) s = layer.find("stalls");
  if (!s || !s->isObject()) return stalls;
  for (const auto& [reason, value] : s->members())
    if (value.isNumber()) stalls.emplace_back(reason, value.number());
  return stalls;
}

}  // namespace

Expected<RunStats> parseRunStats(const Json& report, const std::string& origin) {
  if (!report.isObject()) return makeError(origin, ": expected a JSON object (a run report or sim stats)");
  RunStats stats;
  stats.backend = report.stringAt("backend", report.find("config") ? "npu (ember sim)" : "");
  stats.configName = report.stringAt("config");
  stats.cycles = numberAt(report, "cycles");
  stats.macs = numberAt(report, "macs");
  stats.macUtilization = numberAt(report, "mac_utilization");
  stats.dramReadBytes = numberAt(report, "dram_read_bytes");
  stats.dramWriteBytes = numberAt(report, "dram_write_bytes");
  stats.energyPj = numberAt(report, "energy_pj");
  stats.sramPeakBytes = numberAt(report, "sram_peak_bytes");
  if (!stats.sramPeakBytes) {
    auto scratch = numberAt(report, "scratchpad_peak_bytes"),
         acc = numberAt(report, "accumulator_peak_bytes");
    if (scratch || acc) stats.sramPeakBytes = scratch.value_or(0) + acc.value_or(0);
  }
  stats.compileSeconds = numberAt(report, "compile_seconds");
  stats.endToEndLatencyUs = numberAt(report, "end_to_end_latency_us");
  stats.runSeconds = numberAt(report, "run_seconds_median");
  stats.hostSeconds = numberAt(report, "host_seconds");
  stats.clockGhz = numberAt(report, "clock_ghz");
  if (const Json* fallback = report.find("fallback_nodes"); fallback && fallback->isArray())
    stats.fallbackNodes = double(fallback->items().size());
  if (const Json* layers = report.find("layers"); layers && layers->isArray()) {
    for (const Json& l : layers->items()) {
      if (!l.isObject()) return makeError(origin, ": 'layers' holds a non-object");
      LayerStats layer;
      layer.name = l.stringAt("name", "?");
      layer.op = l.stringAt("op");
      layer.cycles = l.numberAt("cycles").value_or(0);
      layer.macs = l.numberAt("macs").value_or(0);
      layer.macUtilization = l.numberAt("mac_utilization").value_or(0);
      layer.dramBytes = l.numberAt("dram_bytes").value_or(0);
      layer.stalls = stallsOf(l);
      stats.layers.push_back(std::move(layer));
    }
  }
  return stats;
}

AreaProxy areaProxy(const npu::NpuConfig& config) {
  AreaProxy area;
  area.pes = double(config.rows * config.cols);
  area.sramBytes = double(config.scratchpadBytes + config.accumulatorBytes);
  area.mm2 = area.pes * kAreaPerPeMm2 + area.sramBytes * kAreaPerSramByteMm2;
  return area;
}

std::vector<bool> paretoFront(const std::vector<std::optional<std::pair<double, double>>>& points) {
  std::vector<bool> front(points.size(), false);
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i]) continue;
    auto [li, ei] = *points[i];
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      if (j == i || !points[j]) continue;
      auto [lj, ej] = *points[j];
      dominated = lj <= li && ej <= ei && (lj < li || ej < ei);
    }
    front[i] = !dominated;
  }
  return front;
}

const std::vector<std::string>& metricColumns() {
  static const std::vector<std::string> kColumns = {"cycles",
                                                    "latency_us",
                                                    "macs",
                                                    "mac_utilization",
                                                    "dram_read_bytes",
                                                    "dram_write_bytes",
                                                    "energy_pj",
                                                    "sram_peak_bytes",
                                                    "pes",
                                                    "sram_bytes",
                                                    "area_mm2",
                                                    "compile_seconds",
                                                    "run_seconds",
                                                    "host_seconds",
                                                    "fallback_nodes",
                                                    "end_to_end_latency_us"};
  return kColumns;
}

std::vector<std::pair<std::string, std::optional<double>>> metricValues(const RunStats& stats,
                                                                        const npu::NpuConfig& config) {
  AreaProxy area = areaProxy(config);
  std::optional<double> latencyUs;
  if (stats.cycles) latencyUs = *stats.cycles / (config.clockGhz * 1e3);
  return {{"cycles", stats.cycles},
          {"latency_us", latencyUs},
          {"macs", stats.macs},
          {"mac_utilization", stats.macUtilization},
          {"dram_read_bytes", stats.dramReadBytes},
          {"dram_write_bytes", stats.dramWriteBytes},
          {"energy_pj", stats.energyPj},
          {"sram_peak_bytes", stats.sramPeakBytes},
          {"pes", area.pes},
          {"sram_bytes", area.sramBytes},
          {"area_mm2", area.mm2},
          {"compile_seconds", stats.compileSeconds},
          {"run_seconds", stats.runSeconds},
          {"host_seconds", stats.hostSeconds},
          {"fallback_nodes", stats.fallbackNodes},
          {"end_to_end_latency_us", stats.endToEndLatencyUs}};
}

namespace {

/// The largest and the mean of `key` over the objects of the array `array`.
std::pair<std::optional<double>, std::optional<double>> maxAndMean(const Json& report, std::string_view array,
                                                                   std::string_view key) {
  const Json* items = report.find(array);
  if (!items || !items->isArray()) return {};
  double largest = 0, sum = 0;
  size_t count = 0;
  for (const Json& item : items->items()) {
    std::optional<double> value = item.numberAt(key);
    if (!value) continue;
    largest = count ? std::max(largest, *value) : *value;
    sum += *value;
    ++count;
  }
  if (!count) return {};
  return {largest, sum / double(count)};
}

}  // namespace

Expected<MultichipStats> parseMultichipStats(const Json& report, const std::string& origin) {
  if (!report.isObject()) return makeError(origin, ": expected a JSON object (an `ember multichip` report)");
  MultichipStats stats;
  stats.numChips = report.numberAt("num_chips");
  stats.latencyUs = report.numberAt("latency_us");
  stats.makespanUs = report.numberAt("makespan_us");
  stats.throughput = report.numberAt("throughput_images_per_s");
  stats.steadyThroughput = report.numberAt("steady_throughput_images_per_s");
  stats.hostSeconds = report.numberAt("host_seconds");
  if (!stats.throughput || !stats.latencyUs)
    return makeError(origin, ": not an `ember multichip` report (no throughput_images_per_s or latency_us)");
  std::tie(stats.chipUtilizationMax, stats.chipUtilizationMean) = maxAndMean(report, "chips", "utilization");
  std::tie(stats.chipMacUtilizationMax, stats.chipMacUtilizationMean) =
      maxAndMean(report, "chips", "mac_utilization");
  std::tie(stats.linkUtilizationMax, stats.linkUtilizationMean) = maxAndMean(report, "links", "utilization");
  if (const Json* links = report.find("links"); links && links->isArray() && !links->items().empty()) {
    double bytes = 0;
    for (const Json& link : links->items()) bytes += link.numberAt("bytes").value_or(0);
    stats.linkBytes = bytes;
  }
  return stats;
}

const std::vector<std::string>& multichipMetricColumns() {
  static const std::vector<std::string> kColumns = {"num_chips",
                                                    "batch",
                                                    "throughput_images_per_s",
                                                    "steady_throughput_images_per_s",
                                                    "makespan_us",
                                                    kSpeedupColumn,
                                                    "chip_utilization_max",
                                                    "chip_utilization_mean",
                                                    "chip_mac_utilization_max",
                                                    "chip_mac_utilization_mean",
                                                    "link_utilization_max",
                                                    "link_utilization_mean",
                                                    "link_bytes"};
  return kColumns;
}

std::vector<std::pair<std::string, std::optional<double>>> multichipMetricValues(const MultichipStats& stats,
                                                                                 const npu::NpuConfig& config,
                                                                                 double batch) {
  std::vector<std::pair<std::string, std::optional<double>>> values = metricValues(RunStats{}, config);
  for (auto& [name, value] : values) {
    if (name == "latency_us") value = stats.latencyUs;
    if (name == "host_seconds") value = stats.hostSeconds;
  }
  values.insert(values.end(), {{"num_chips", stats.numChips},
                               {"batch", batch},
                               {"throughput_images_per_s", stats.throughput},
                               {"steady_throughput_images_per_s", stats.steadyThroughput},
                               {"makespan_us", stats.makespanUs},
                               {"chip_utilization_max", stats.chipUtilizationMax},
                               {"chip_utilization_mean", stats.chipUtilizationMean},
                               {"chip_mac_utilization_max", stats.chipMacUtilizationMax},
                               {"chip_mac_utilization_mean", stats.chipMacUtilizationMean},
                               {"link_utilization_max", stats.linkUtilizationMax},
                               {"link_utilization_mean", stats.linkUtilizationMean},
                               {"link_bytes", stats.linkBytes}});
  return values;
}

std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c == '\n' || c == '\r' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace ember::codesign
