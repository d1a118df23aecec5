#include "Plots.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "Svg.h"

namespace ember::codesign {

std::string stallColour(const std::string& reason, size_t index) {
  static const std::map<std::string, std::string> kKnown = {{"token", "#9467bd"},
                                                            {"dram_bandwidth", "#d62728"},
                                                            {"bank_conflict", "#ff7f0e"},
                                                            {"accumulator_port", "#2ca02c"},
                                                            {"queue_full", "#8c564b"}};
  auto it = kKnown.find(reason);
  if (it != kKnown.end()) return it->second;
  static const char* const kOthers[] = {"#e377c2", "#bcbd22", "#17becf", "#7f7f7f"};
  return kOthers[index % 4];
}

std::string rooflineSvg(const std::string& title, const std::vector<LayerStats>& layers,
                        double peakOpsPerCycle, double dramBytesPerCycle) {
  struct Dot {
    double intensity, perf;
    const LayerStats* layer;
  };
  std::vector<Dot> dots;
  size_t unplaced = 0;
  for (const LayerStats& l : layers) {
    if (l.macs <= 0 || l.dramBytes <= 0 || l.cycles <= 0) {
      ++unplaced;
      continue;
    }
    dots.push_back({2 * l.macs / l.dramBytes, 2 * l.macs / l.cycles, &l});
  }
  double ridge = peakOpsPerCycle / std::max(dramBytesPerCycle, 1e-9);
  double xLo = ridge / 10, xHi = ridge * 10, yLo = peakOpsPerCycle / 100;
  for (const Dot& d : dots) {
    xLo = std::min(xLo, d.intensity);
    xHi = std::max(xHi, d.intensity);
    yLo = std::min(yLo, d.perf);
  }
  yLo = std::min(yLo, dramBytesPerCycle * xLo);
  Chart chart(title, {"arithmetic intensity (ops per DRAM byte)", xLo, xHi, true},
              {"achieved ops per cycle", yLo, peakOpsPerCycle * 1.5, true});
  SvgCanvas& c = chart.canvas();
  // Roofs: the bandwidth slope up to the ridge, then the compute ceiling.
  double x0 = xLo / 10;
  chart.clip();
  c.polyline({{chart.x(x0), chart.y(dramBytesPerCycle * x0)},
              {chart.x(ridge), chart.y(peakOpsPerCycle)},
              {chart.x(xHi * 10), chart.y(peakOpsPerCycle)}},
             kRoofColour, 3);
  chart.unclip();
  c.text(chart.x(ridge) + 6, chart.y(peakOpsPerCycle) + 14,
         "peak " + shortNumber(peakOpsPerCycle) + " ops/cycle", 11, "start", kRoofColour);
  for (const Dot& d : dots) {
    const LayerStats& l = *d.layer;
    c.circle(chart.x(d.intensity), chart.y(d.perf), 5, kLayerColour,
             l.name + " (" + l.op + "): " + shortNumber(d.intensity) + " ops/B, " + shortNumber(d.perf) +
                 " ops/cycle, utilisation " + shortNumber(l.macUtilization * 100) + "%",
             "#ffffff");
  }
  chart.legend("roofs: peak, DRAM " + shortNumber(dramBytesPerCycle) + " B/cycle", kRoofColour, true);
  chart.legend("layer (" + std::to_string(dots.size()) + ")", kLayerColour);
  if (dots.empty()) chart.note("no layer with MACs and DRAM traffic");
  if (unplaced)
    c.text(chart.plotLeft() + 6, chart.plotBottom() - 6,
           std::to_string(unplaced) + " layer(s) without MACs or DRAM bytes not shown", 10, "start", "#666");
  return chart.finish();
}

namespace {

/// The layers a stall chart draws: all of them, or the kMaxLayers most
/// expensive in program order, and how many cheaper ones were left out.
struct StallRows {
  std::vector<const LayerStats*> shown;
  size_t hidden = 0;
};

StallRows stallChartLayers(const std::vector<LayerStats>& layers) {
  constexpr size_t kMaxLayers = 80;
  StallRows rows;
  rows.shown.reserve(layers.size());
  for (const LayerStats& l : layers) rows.shown.push_back(&l);
  if (rows.shown.size() <= kMaxLayers) return rows;
  std::vector<const LayerStats*> byCycles = rows.shown;
  std::nth_element(byCycles.begin(), byCycles.begin() + kMaxLayers - 1, byCycles.end(),
                   [](auto* a, auto* b) { return a->cycles > b->cycles; });
  double cut = byCycles[kMaxLayers - 1]->cycles;
  std::vector<const LayerStats*> kept;
  kept.reserve(kMaxLayers);
  for (auto* l : rows.shown)
    if (l->cycles >= cut && kept.size() < kMaxLayers) kept.push_back(l);
  rows.hidden = rows.shown.size() - kept.size();
  rows.shown = std::move(kept);
  return rows;
}

/// The stall reasons in order of first appearance (their legend and colour
/// order), and the x-axis end: the largest layer or summed-stall cycles.
struct StallScale {
  std::vector<std::string> reasons;
  double maxCycles = 1;
};

StallScale stallScale(const std::vector<const LayerStats*>& shown) {
  StallScale scale;
  for (auto* l : shown) {
    double stalled = 0;
    for (const auto& [reason, cycles] : l->stalls) {
      stalled += cycles;
      if (std::find(scale.reasons.begin(), scale.reasons.end(), reason) == scale.reasons.end())
        scale.reasons.push_back(reason);
    }
    scale.maxCycles = std::max({scale.maxCycles, l->cycles, stalled});
  }
  return scale;
}

/// The stall chart's fixed geometry: one row per layer between top and the
/// axis, bars from left to right.
struct StallLayout {
  static constexpr double kRowHeight = 18, kLeft = 190, kRight = 620, kTop = 80;
  double maxCycles;
  double x(double cycles) const { return kLeft + (kRight - kLeft) * cycles / maxCycles; }
};

// Legend, wrapped onto a second row when it does not fit.
void drawStallLegend(SvgCanvas& c, const std::vector<std::string>& reasons) {
  double lx = 10, ly = 34;
  c.rect(lx, ly, 12, 10, "#c8c8c8");
  c.text(lx + 16, ly + 9, "layer cycles", 11);
  lx += 100;
  for (size_t i = 0; i < reasons.size(); ++i) {
    double w = 30 + 6.5 * double(reasons[i].size() + 6);
    if (lx + w > 640) {
      lx = 10;
      ly += 15;
    }
    c.rect(lx, ly, 12, 10, stallColour(reasons[i], i));
    c.text(lx + 16, ly + 9, reasons[i] + " stall", 11);
    lx += w;
  }
}

void drawStallAxis(SvgCanvas& c, const StallLayout& layout, double bottom) {
  using L = StallLayout;
  for (int t = 0; t <= 4; ++t) {
    double x = layout.x(layout.maxCycles * t / 4);
    c.line(x, L::kTop - 4, x, bottom, "#e4e4e4");
    c.text(x, bottom + 14, shortNumber(layout.maxCycles * t / 4), 10, "middle", "#333");
  }
  c.text((L::kLeft + L::kRight) / 2, bottom + 32, "cycles (stalls are summed over the units that waited)", 11,
         "middle");
}

// One row per layer: its cycles in grey, under it its stalls stacked by reason.
void drawStallBars(SvgCanvas& c, const StallLayout& layout, const std::vector<const LayerStats*>& shown,
                   const std::vector<std::string>& reasons) {
  using L = StallLayout;
  for (size_t i = 0; i < shown.size(); ++i) {
    const LayerStats& l = *shown[i];
    double y = L::kTop + double(i) * L::kRowHeight;
    std::string name = truncate(l.name, 28);
    c.text(L::kLeft - 6, y + 12, name, 10, "end", "#222");
    c.rect(L::kLeft, y + 1, layout.x(l.cycles) - L::kLeft, 8, "#c8c8c8",
           l.name + " (" + l.op + "): " + shortNumber(l.cycles) + " cycles");
    double x = L::kLeft;
    for (const auto& [reason, cycles] : l.stalls) {
      size_t index = size_t(std::find(reasons.begin(), reasons.end(), reason) - reasons.begin());
      double w = layout.x(cycles) - L::kLeft;
      c.rect(x, y + 9, w, 7, stallColour(reason, index), l.name + ": " + shortNumber(cycles) + " " + reason);
      x += w;
    }
  }
}

}  // namespace

std::string stallBreakdownSvg(const std::string& title, const std::vector<LayerStats>& layers) {
  using L = StallLayout;
  StallRows rows = stallChartLayers(layers);
  StallScale scale = stallScale(rows.shown);
  const StallLayout layout{scale.maxCycles};
  const double height = L::kTop + std::max<double>(1, double(rows.shown.size())) * L::kRowHeight + 48;
  SvgCanvas c(640, height);
  c.text(10, 22, truncate(title, 72), 15, "start", "#111", 0, true);
  drawStallLegend(c, scale.reasons);
  drawStallAxis(c, layout, L::kTop + double(rows.shown.size()) * L::kRowHeight);
  drawStallBars(c, layout, rows.shown, scale.reasons);
  if (rows.shown.empty()) c.text(320, L::kTop + 12, "no per-layer statistics", 12, "middle", "#888");
  if (rows.hidden)
    c.text(10, height - 4, std::to_string(rows.hidden) + " cheaper layer(s) not shown", 10, "start", "#666");
  return c.str();
}

std::string paretoSvg(const std::string& title, const std::vector<ParetoDot>& dots,
                      const std::string& latencyLabel) {
  double xLo = 1e300, xHi = 0, yLo = 1e300, yHi = 0;
  for (const ParetoDot& d : dots) {
    xLo = std::min(xLo, d.latencyUs);
    xHi = std::max(xHi, d.latencyUs);
    yLo = std::min(yLo, d.energyPj / 1e6);
    yHi = std::max(yHi, d.energyPj / 1e6);
  }
  if (dots.empty()) xLo = yLo = xHi = yHi = 1;
  Chart chart(title, {latencyLabel, xLo, xHi, true}, {"energy (µJ)", yLo, yHi, true});
  SvgCanvas& c = chart.canvas();
  std::vector<const ParetoDot*> front;
  for (const ParetoDot& d : dots)
    if (d.onFront) front.push_back(&d);
  std::sort(front.begin(), front.end(), [](auto* a, auto* b) { return a->latencyUs < b->latencyUs; });
  std::vector<std::pair<double, double>> steps;
  for (size_t i = 0; i < front.size(); ++i) {
    if (i) steps.emplace_back(chart.x(front[i]->latencyUs), chart.y(front[i - 1]->energyPj / 1e6));
    steps.emplace_back(chart.x(front[i]->latencyUs), chart.y(front[i]->energyPj / 1e6));
  }
  c.polyline(steps, kFrontColour, 2, "6,4");
  auto tooltip = [](const ParetoDot& d) {
    return d.label + ": " + shortNumber(d.latencyUs) + " µs, " + shortNumber(d.energyPj / 1e6) + " µJ";
  };
  for (const ParetoDot& d : dots)
    if (!d.onFront)
      c.circle(chart.x(d.latencyUs), chart.y(d.energyPj / 1e6), 5, kDominatedColour, tooltip(d));
  for (size_t i = 0; i < front.size(); ++i) {
    const ParetoDot* d = front[i];
    double x = chart.x(d->latencyUs), y = chart.y(d->energyPj / 1e6);
    c.circle(x, y, 7, kFrontColour, tooltip(*d), "#ffffff");
    // Configs that tie exactly share one label.
    bool tiedWithEarlier = false;
    size_t ties = 0;
    for (size_t j = 0; j < front.size(); ++j) {
      if (j == i || front[j]->latencyUs != d->latencyUs || front[j]->energyPj != d->energyPj) continue;
      tiedWithEarlier |= j < i;
      ++ties;
    }
    if (tiedWithEarlier) continue;
    std::string label = truncate(d->label, 40) + (ties ? " (+" + std::to_string(ties) + " tied)" : "");
    // Labels near the right edge grow leftwards so that they stay visible.
    bool nearRight = x > chart.plotRight() - 220;
    c.text(nearRight ? x - 9 : x + 9, y - 8, label, 10, nearRight ? "end" : "start", "#333");
  }
  chart.legend("Pareto front (" + std::to_string(front.size()) + ")", kFrontColour);
  chart.legend("dominated", kDominatedColour);
  if (dots.empty()) chart.note("no point with latency and energy");
  return chart.finish();
}

std::string utilizationSvg(const std::string& title, const std::vector<UtilizationDot>& dots) {
  double xLo = 1e300, xHi = 0;
  std::vector<std::string> series;
  for (const UtilizationDot& d : dots) {
    xLo = std::min(xLo, d.pes);
    xHi = std::max(xHi, d.pes);
    if (std::find(series.begin(), series.end(), d.series) == series.end()) series.push_back(d.series);
  }
  if (dots.empty()) xLo = xHi = 256;
  if (xHi <= xLo) {
    // One array size: centre it.
    xLo /= 2;
    xHi *= 2;
  }
  AxisSpec yAxis{"MAC utilisation", 0, 1, false};
  yAxis.percent = true;
  Chart chart(title, {"processing elements (rows × cols)", xLo, xHi, false, true}, yAxis);
  SvgCanvas& c = chart.canvas();
  for (size_t s = 0; s < series.size(); ++s) {
    const std::string& colour = palette()[s % palette().size()];
    std::map<double, double> best;
    for (const UtilizationDot& d : dots) {
      if (d.series != series[s]) continue;
      best[d.pes] = std::max(best.count(d.pes) ? best[d.pes] : 0.0, d.utilization);
    }
    std::vector<std::pair<double, double>> linePoints;
    linePoints.reserve(best.size());
    for (auto [pes, utilization] : best) linePoints.emplace_back(chart.x(pes), chart.y(utilization));
    c.polyline(linePoints, colour, 2);
    for (const UtilizationDot& d : dots)
      if (d.series == series[s])
        c.circle(chart.x(d.pes), chart.y(d.utilization), 5, colour,
                 d.series + " " + d.label + ": " + shortNumber(d.utilization * 100) + "%", "#ffffff");
    chart.legend(series[s], colour);
  }
  if (dots.empty()) chart.note("no point with MAC utilisation");
  return chart.finish();
}

std::string seriesSvg(const std::string& title, AxisSpec xAxis, AxisSpec yAxis,
                      const std::vector<SeriesDot>& dots) {
  std::vector<std::string> series;
  xAxis.lo = yAxis.lo = 1e300;
  xAxis.hi = yAxis.hi = 0;
  for (const SeriesDot& d : dots) {
    xAxis.lo = std::min(xAxis.lo, d.x);
    xAxis.hi = std::max(xAxis.hi, d.x);
    yAxis.lo = std::min(yAxis.lo, d.y);
    yAxis.hi = std::max(yAxis.hi, d.y);
    if (std::find(series.begin(), series.end(), d.series) == series.end()) series.push_back(d.series);
  }
  if (dots.empty()) xAxis.lo = xAxis.hi = yAxis.lo = yAxis.hi = 1;
  if (!yAxis.log) yAxis.lo = 0;
  // As many legend rows as the series' labels need, the plot keeping its height.
  constexpr double kWidth = 640, kLegendWidth = kWidth - 78 - 20;
  int rows = 1;
  double used = 0;
  for (const std::string& name : series) {
    const double width = Chart::legendEntryWidth(name);
    if (used > 0 && used + width - 20 > kLegendWidth) {
      ++rows;
      used = 0;
    }
    used += width;
  }
  Chart chart(title, xAxis, yAxis, kWidth, 420 + 15 * (rows - 1), rows);
  SvgCanvas& c = chart.canvas();
  for (size_t s = 0; s < series.size(); ++s) {
    const std::string& colour = palette()[s % palette().size()];
    std::vector<const SeriesDot*> members;
    for (const SeriesDot& d : dots)
      if (d.series == series[s]) members.push_back(&d);
    std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->x < b->x; });
    std::vector<std::pair<double, double>> line;
    line.reserve(members.size());
    for (const SeriesDot* d : members) line.emplace_back(chart.x(d->x), chart.y(d->y));
    c.polyline(line, colour, 2);
    for (const SeriesDot* d : members)
      c.circle(chart.x(d->x), chart.y(d->y), 5, colour,
               d->label + ": " + xAxis.label + " " + shortNumber(d->x) + ", " + yAxis.label + " " +
                   shortNumber(d->y),
               "#ffffff");
    chart.legend(series[s], colour);
  }
  if (dots.empty()) chart.note("no point to draw");
  return chart.finish();
}

}  // namespace ember::codesign
