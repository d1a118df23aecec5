// `ember sweep`'s objective (docs/codesign.md): which latency the Pareto front
// minimises. A point that spills a layer to the host has fewer NPU cycles but a
// longer end-to-end latency, so the two objectives give different fronts.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "TestUtil.h"

namespace ember::codesign::test {
namespace {

/// tiny_cnn on two configs: `on-chip` runs every layer on the NPU (slow DRAM,
/// cheap DRAM bytes); `spills` has a 1 KiB scratchpad, so conv2 falls back to
/// the host: fewer NPU cycles, more energy per cycle, more host time.
std::string spec(const std::string& objective) {
  std::string models = EMBER_EXAMPLE_MODELS_DIR;
  return "name: objective\nmodels:\n  - {path: " + models + "/tiny_cnn.onnx, calibrate: " + models +
         "/tiny_cnn.input.npy}\n" + objective +
         "axes:\n  config:\n"
         "    - {label: on-chip, dram.bandwidth_bytes_per_cycle: 4, energy_pj.dram_byte: 10}\n"
         "    - {label: spills, scratchpad.size_kib: 1}\n";
}

struct Point {
  double cycles, latency, endToEnd, energy, fallbacks;
  std::string pareto;
};

/// The rows of results.csv by config label.
std::map<std::string, Point> readPoints(const fs::path& csv) {
  auto rows = readCsv(csv);
  const auto& h = rows.at(0);
  std::map<std::string, Point> points;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    EXPECT_EQ(row[column(h, "status")], "ok") << row[column(h, "error")];
    if (row[column(h, "status")] != "ok") continue;
    points[row[column(h, "config")]] = {std::stod(row[column(h, "cycles")]),
                                        std::stod(row[column(h, "latency_us")]),
                                        std::stod(row[column(h, "end_to_end_latency_us")]),
                                        std::stod(row[column(h, "energy_pj")]),
                                        std::stod(row[column(h, "fallback_nodes")]),
                                        row[column(h, "pareto")]};
  }
  return points;
}

/// Whether `a` is on the front of `all` when ranked by `latency` and energy.
bool onFront(const Point& a, const std::map<std::string, Point>& all, double Point::*latency) {
  for (const auto& [label, b] : all)
    if (b.*latency <= a.*latency && b.energy <= a.energy && (b.*latency < a.*latency || b.energy < a.energy))
      return false;
  return true;
}

TEST(CodesignObjective, EndToEndLatencyTakesTheSpillingPointOffTheFront) {
  fs::path dir = freshDir("objective");
  writeFile(dir / "default.yaml", spec(""));
  writeFile(dir / "e2e.yaml", spec("objective: end_to_end_latency_us\n"));
  const std::string out = " -o " + (dir / "out").string();
  CommandResult run = runEmber("sweep " + (dir / "default.yaml").string() + out + " -j 2");
  ASSERT_EQ(run.status, 0) << run.output;
  std::map<std::string, Point> points = readPoints(dir / "out/results.csv");
  ASSERT_EQ(points.size(), 2u);
  const Point &onChip = points.at("on-chip"), &spills = points.at("spills");
  // The scenario, from the CSV's own columns: the spilling point runs more on
  // the host, has fewer NPU cycles, and is slower end to end.
  ASSERT_GT(spills.fallbacks, onChip.fallbacks);
  ASSERT_LT(spills.cycles, onChip.cycles);
  ASSERT_GT(spills.endToEnd - spills.latency, onChip.endToEnd - onChip.latency);
  ASSERT_GT(spills.endToEnd, onChip.endToEnd);

  // Default objective: the front of latency_us and energy.
  for (const auto& [label, p] : points)
    EXPECT_EQ(p.pareto, onFront(p, points, &Point::latency) ? "1" : "0") << label;
  EXPECT_EQ(spills.pareto, "1");
  const std::string csv = readFile(dir / "out/results.csv"), html = readFile(dir / "out/report.html"),
                    svg = readFile(dir / "out/plots/pareto_tiny_cnn.svg");
  EXPECT_NE(html.find("Pareto front (latency vs energy, per model)"), std::string::npos);
  EXPECT_NE(svg.find(">latency (µs)<"), std::string::npos);
  EXPECT_EQ(html.find("end-to-end latency"), std::string::npos);
  // Naming the default changes nothing.
  CommandResult same =
      runEmber("sweep " + (dir / "default.yaml").string() + out + " --report-only --objective latency_us");
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(readFile(dir / "out/results.csv"), csv);
  EXPECT_EQ(readFile(dir / "out/report.html"), html);
  EXPECT_EQ(readFile(dir / "out/plots/pareto_tiny_cnn.svg"), svg);

  // objective: end_to_end_latency_us: the same points (same ids, none rerun), another front.
  CommandResult e2e = runEmber("sweep " + (dir / "e2e.yaml").string() + out + " -j 2");
  ASSERT_EQ(e2e.status, 0) << e2e.output;
  EXPECT_NE(e2e.output.find("2 points, 2 already done"), std::string::npos) << e2e.output;
  EXPECT_NE(e2e.output.find("pareto front tiny_cnn: on-chip ("), std::string::npos) << e2e.output;
  EXPECT_NE(e2e.output.find(" µs end to end, "), std::string::npos) << e2e.output;
  points = readPoints(dir / "out/results.csv");
  for (const auto& [label, p] : points)
    EXPECT_EQ(p.pareto, onFront(p, points, &Point::endToEnd) ? "1" : "0") << label;
  EXPECT_EQ(points.at("spills").pareto, "0");
  EXPECT_EQ(points.at("on-chip").pareto, "1");
  EXPECT_NE(readFile(dir / "out/report.html").find("Pareto front (end-to-end latency vs energy, per model)"),
            std::string::npos);
  EXPECT_NE(readFile(dir / "out/plots/pareto_tiny_cnn.svg").find(">end-to-end latency (µs)<"),
            std::string::npos);
  // The command line overrides the spec.
  CommandResult back =
      runEmber("sweep " + (dir / "e2e.yaml").string() + out + " --report-only --objective latency_us");
  ASSERT_EQ(back.status, 0) << back.output;
  EXPECT_EQ(readFile(dir / "out/results.csv"), csv);

  CommandResult bad = runEmber("sweep " + (dir / "default.yaml").string() + out + " --objective cycles");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("default.yaml: --objective: 'cycles' is not one of latency_us, "
                            "end_to_end_latency_us"),
            std::string::npos)
      << bad.output;
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
}

}  // namespace
}  // namespace ember::codesign::test
