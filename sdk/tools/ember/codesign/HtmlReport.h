// A self-contained HTML page (inline SVG plots, tables, no scripts) for the
// sweep report and the single-simulation report.
#pragma once

#include <string>
#include <vector>

#include "Metrics.h"

namespace ember::codesign {

struct Figure {
  std::string svg;
  std::string caption;
};

struct Table {
  std::string heading;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< plain text, escaped by the page
  std::vector<bool> highlight;                 ///< per row (e.g. on the Pareto front)
  std::vector<std::string> links;              ///< per row: a relative link for the first cell, or ""
};

struct Page {
  std::string title;
  std::vector<std::string> paragraphs;  ///< plain text
  std::vector<Figure> figures;
  std::vector<Table> tables;
};

std::string renderPage(const Page& page);

/// The one-simulation page of `ember report` and of each sweep point: the
/// totals, the roofline, the stall breakdown and the per-layer table.
Page statsPage(const std::string& title, const RunStats& stats, const npu::NpuConfig& config,
               const std::string& source);

}  // namespace ember::codesign
