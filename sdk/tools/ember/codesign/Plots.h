// The co-design plots as SVG text: roofline, per-layer stall breakdown,
// latency-energy Pareto front and MAC utilisation against array size.
#pragma once

#include <string>
#include <vector>

#include "Metrics.h"
#include "Svg.h"

namespace ember::codesign {

/// The stall reasons' colours, shared by the plot and the HTML legend.
std::string stallColour(const std::string& reason, size_t index);
inline constexpr const char* kRoofColour = "#d62728";
inline constexpr const char* kLayerColour = "#1f77b4";
inline constexpr const char* kFrontColour = "#ff7f0e";
inline constexpr const char* kDominatedColour = "#8fb8dc";

/// Each layer at (2*macs/dram_bytes ops/byte, 2*macs/cycles ops/cycle) under
/// the roofs min(peak, bandwidth * intensity) of its config.
std::string rooflineSvg(const std::string& title, const std::vector<LayerStats>& layers,
                        double peakOpsPerCycle, double dramBytesPerCycle);

/// One bar per layer: its cycles (grey) and its stall cycles by reason (stacked).
std::string stallBreakdownSvg(const std::string& title, const std::vector<LayerStats>& layers);

struct ParetoDot {
  double latencyUs = 0;
  double energyPj = 0;
  std::string label;
  bool onFront = false;
};
/// Latency against energy (log-log); the non-dominated points are highlighted,
/// labelled and joined. `latencyLabel` names the x axis (the sweep's objective).
std::string paretoSvg(const std::string& title, const std::vector<ParetoDot>& dots,
                      const std::string& latencyLabel = "latency (µs)");

struct UtilizationDot {
  std::string series;  ///< the model
  double pes = 0;
  double utilization = 0;
  std::string label;
};
/// MAC utilisation against PEs (log2 axis), one colour per model, each joined
/// through its best point per array size.
std::string utilizationSvg(const std::string& title, const std::vector<UtilizationDot>& dots);

struct SeriesDot {
  std::string series;
  double x = 0, y = 0;
  std::string label;  ///< the dot's tooltip, before its values
};
/// y against x, one colour per series, each series joined in x order (e.g.
/// throughput against link bandwidth, one line per chip count and split). The
/// axes' ranges come from the dots; a linear y axis starts at 0.
std::string seriesSvg(const std::string& title, AxisSpec xAxis, AxisSpec yAxis,
                      const std::vector<SeriesDot>& dots);

}  // namespace ember::codesign
