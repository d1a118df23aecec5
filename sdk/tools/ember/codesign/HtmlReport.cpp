#include "HtmlReport.h"

#include "Plots.h"
#include "Svg.h"

namespace ember::codesign {

std::string renderPage(const Page& page) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     xmlEscape(page.title) +
                     "</title>\n<style>\n"
                     "body { font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif; margin: 24px; color: "
                     "#222; background: "
                     "#fff; }\n"
                     "h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }\n"
                     ".plots { display: flex; flex-wrap: wrap; gap: 18px; }\n"
                     "figure { margin: 0; border: 1px solid #ddd; padding: 6px; }\n"
                     "figcaption { font-size: 12px; color: #555; max-width: 640px; }\n"
                     "table { border-collapse: collapse; font-size: 12px; }\n"
                     "th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }\n"
                     "th { background: #f0f0f0; } td:first-child, td:nth-child(2) { text-align: left; }\n"
                     "tr.front td { background: #ffe8cc; font-weight: bold; }\n"
                     "</style>\n</head>\n<body>\n<h1>" +
                     xmlEscape(page.title) + "</h1>\n";
  for (const std::string& p : page.paragraphs) html += "<p>" + xmlEscape(p) + "</p>\n";
  if (!page.figures.empty()) {
    html += "<div class=\"plots\">\n";
    for (const Figure& f : page.figures)
      html += "<figure>\n" + f.svg + "<figcaption>" + xmlEscape(f.caption) + "</figcaption>\n</figure>\n";
    html += "</div>\n";
  }
  for (const Table& t : page.tables) {
    html += "<h2>" + xmlEscape(t.heading) + "</h2>\n<table>\n<tr>";
    for (const std::string& h : t.header) html += "<th>" + xmlEscape(h) + "</th>";
    html += "</tr>\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      bool front = r < t.highlight.size() && t.highlight[r];
      html += front ? "<tr class=\"front\">" : "<tr>";
      for (size_t c = 0; c < t.rows[r].size(); ++c) {
        const bool linked = c == 0 && r < t.links.size() && !t.links[r].empty();
        html += "<td>";
        if (linked) {
          html += "<a href=\"";
          html += xmlEscape(t.links[r]);
          html += "\">";
        }
        html += xmlEscape(t.rows[r][c]);
        if (linked) html += "</a>";
        html += "</td>";
      }
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  return html + "</body>\n</html>\n";
}

Page statsPage(const std::string& title, const RunStats& stats, const npu::NpuConfig& config,
               const std::string& source) {
  Page page;
  page.title = title;
  const double peak = 2.0 * double(config.rows * config.cols);
  const double bandwidth = double(config.dramBytesPerCycle);
  std::string summary = "Source: " + source + ". Config: " + config.name + " (" +
                        std::to_string(config.rows) + "×" + std::to_string(config.cols) + ", DRAM " +
                        std::to_string(config.dramBytesPerCycle) + " B/cycle, " +
                        shortNumber(config.clockGhz) + " GHz).";
  page.paragraphs.push_back(summary);
  if (stats.cycles) {
    std::string totals = "Cycles " + shortNumber(*stats.cycles) + ", latency " +
                         shortNumber(*stats.cycles / (config.clockGhz * 1e3)) + " µs";
    if (stats.macUtilization) totals += ", MAC utilisation " + shortNumber(*stats.macUtilization * 100) + "%";
    if (stats.energyPj) totals += ", energy " + shortNumber(*stats.energyPj / 1e6) + " µJ";
    if (stats.dramReadBytes) totals += ", DRAM read " + shortNumber(*stats.dramReadBytes) + " B";
    if (stats.dramWriteBytes) totals += ", written " + shortNumber(*stats.dramWriteBytes) + " B";
    page.paragraphs.push_back(totals + ".");
  } else {
    page.paragraphs.push_back("This report has no NPU statistics (backend " + stats.backend + ").");
  }
  page.figures.push_back(
      {rooflineSvg("Roofline: " + config.name, stats.layers, peak, bandwidth),
       "Each layer at its arithmetic intensity (2·MACs / DRAM bytes) and achieved ops per cycle (2·MACs / "
       "cycles), under the roofs of its config: peak 2·rows·cols ops/cycle and DRAM bandwidth × intensity."});
  page.figures.push_back({stallBreakdownSvg("Per-layer cycles and stalls", stats.layers),
                          "Grey: the layer's cycles. Coloured: cycles its units spent stalled, by reason."});
  Table table;
  table.heading = "Layers";
  table.header = {"layer",           "op",         "cycles",   "MACs",
                  "MAC utilisation", "DRAM bytes", "ops/byte", "stall cycles"};
  for (const LayerStats& l : stats.layers) {
    double stalled = 0;
    std::string detail;
    for (const auto& [reason, cycles] : l.stalls) {
      stalled += cycles;
      if (cycles > 0) detail += (detail.empty() ? " (" : ", ") + reason + " " + shortNumber(cycles);
    }
    table.rows.push_back({l.name, l.op, shortNumber(l.cycles), shortNumber(l.macs),
                          shortNumber(l.macUtilization * 100) + "%", shortNumber(l.dramBytes),
                          l.dramBytes > 0 ? shortNumber(2 * l.macs / l.dramBytes) : "-",
                          shortNumber(stalled) + (detail.empty() ? "" : detail + ")")});
  }
  page.tables.push_back(std::move(table));
  return page;
}

}  // namespace ember::codesign
