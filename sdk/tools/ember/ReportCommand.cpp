// ember report: the per-layer HTML page (roofline, stall breakdown, layer
// table) of one simulation, from `ember sim --stats` or an npu backend's
// `ember run --report-json` (docs/codesign.md).
#include <filesystem>
#include <iostream>

#include "Commands.h"
#include "Tool.h"
#include "codesign/HtmlReport.h"
#include "codesign/Json.h"
#include "codesign/Metrics.h"
#include "codesign/Plots.h"

namespace ember::cli {

int reportCommand(const std::vector<std::string>& args) {
  std::string statsPath, configPath, outPath, svgDir;
  OptionParser parser(
      "ember report", "STATS.json [--config NPU.yaml] [-o REPORT.html]",
      "Writes an HTML page with the roofline and per-layer stall breakdown of one simulation.\n"
      "STATS.json is `ember sim --stats` output or an npu `ember run --report-json` report.");
  parser.addPositional("STATS.json", &statsPath, "the statistics");
  parser.addString("--config", "NPU.yaml", &configPath,
                   "the config that was simulated: its roofs (default: the built-in npu-16x16)");
  parser.addString("--output", "FILE", &outPath, "the page to write (default: STATS.html beside STATS.json)");
  parser.addAlias("-o", "--output");
  parser.addString("--svg-dir", "DIR", &svgDir,
                   "also write the plots as DIR/roofline.svg and DIR/stalls.svg");
  if (auto status = parser.parse(args)) return *status;

  Expected<codesign::Json> json = codesign::readJsonFile(statsPath);
  if (!json) return fail(json.error());
  Expected<codesign::RunStats> stats = codesign::parseRunStats(*json, statsPath);
  if (!stats) return fail(stats.error());
  if (!stats->hasNpuStats())
    return fail(statsPath +
                ": no NPU statistics (no 'cycles' key); give `ember sim --stats` output or an npu "
                "backend's --report-json");
  npu::NpuConfig config;
  if (!configPath.empty()) {
    Expected<npu::NpuConfig> loaded = npu::loadConfig(configPath);
    if (!loaded) return fail(loaded.error());
    config = loaded.take();
  }
  if (outPath.empty()) outPath = std::filesystem::path(statsPath).replace_extension(".html").string();
  std::string title = "Ember NPU report: " + std::filesystem::path(statsPath).filename().string();
  codesign::Page page = codesign::statsPage(title, *stats, config, statsPath);
  if (configPath.empty())
    page.paragraphs.push_back(
        "The roofs are those of the built-in npu-16x16 config; pass --config for another.");
  if (Error e = codesign::writeTextFileAtomic(outPath, codesign::renderPage(page))) return fail(e);
  if (!svgDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(svgDir, ec);
    if (ec) return fail(svgDir + ": cannot create: " + ec.message());
    double peak = 2.0 * double(config.rows * config.cols);
    if (Error e = codesign::writeTextFileAtomic(
            svgDir + "/roofline.svg", codesign::rooflineSvg("Roofline: " + config.name, stats->layers, peak,
                                                            double(config.dramBytesPerCycle))))
      return fail(e);
    if (Error e = codesign::writeTextFileAtomic(
            svgDir + "/stalls.svg", codesign::stallBreakdownSvg("Per-layer stalls", stats->layers)))
      return fail(e);
  }
  std::cout << "wrote " << outPath << " (" << stats->layers.size() << " layers)\n";
  return kExitSuccess;
}

}  // namespace ember::cli
