// `ember sweep` over multi-chip systems (docs/codesign.md): the example spec
// examples/codesign/multichip.yaml, each point's figures checked against a
// direct `ember multichip` run of the same system, split and batch; a point
// run as a Slurm array task by hand; bad systems named in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "Json.h"
#include "TestUtil.h"

namespace ember::codesign::test {
namespace {

const std::string kExample = std::string(EMBER_CODESIGN_EXAMPLES_DIR) + "/multichip.yaml";
const std::string kModel = std::string(EMBER_EXAMPLE_MODELS_DIR) + "/tiny_cnn.onnx";

/// One results.csv row by column name.
using CsvRow = std::map<std::string, std::string>;

std::vector<CsvRow> readRows(const fs::path& csv) {
  std::vector<std::vector<std::string>> cells = readCsv(csv);
  std::vector<CsvRow> rows;
  for (size_t r = 1; r < cells.size(); ++r) {
    EXPECT_EQ(cells[r].size(), cells[0].size()) << "row " << r;
    CsvRow row;
    for (size_t c = 0; c < cells[r].size() && c < cells[0].size(); ++c) row[cells[0][c]] = cells[r][c];
    rows.push_back(row);
  }
  return rows;
}

/// `ember multichip` on a sweep point's own system.yaml, as the point ran it; its --report-json.
Json directRun(const fs::path& out, const CsvRow& row, const fs::path& report) {
  CommandResult run =
      runEmber("multichip " + kModel + " --system " +
               (out / "points" / row.at("id") / "system.yaml").string() + " --split " + row.at("split") +
               " --batch " + row.at("batch") + " --quantize " + (out / "profiles/tiny_cnn.yaml").string() +
               " --random-inputs --seed 0 --quiet --report-json " + report.string());
  EXPECT_EQ(run.status, 0) << run.output;
  Expected<Json> json = readJsonFile(report.string());
  EXPECT_TRUE(json) << json.error().message();
  return json ? json.take() : Json();
}

/// The CSV keeps 10 significant digits.
void expectSame(const std::string& csv, std::optional<double> direct, const std::string& what) {
  ASSERT_TRUE(direct) << what;
  ASSERT_FALSE(csv.empty()) << what;
  EXPECT_NEAR(std::stod(csv), *direct, std::fabs(*direct) * 1e-9) << what;
}

double largest(const Json& report, std::string_view array, std::string_view key) {
  double value = 0;
  for (const Json& item : report.find(array)->items()) value = std::max(value, *item.numberAt(key));
  return value;
}

TEST(CodesignMultichip, ExampleSweepMatchesDirectMultichipRuns) {
  fs::path dir = freshDir("multichip");
  fs::path out = dir / "out";
  CommandResult sweep = runEmber("sweep " + kExample + " -o " + out.string() + " -j 2");
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  EXPECT_NE(sweep.output.find("highest throughput tiny_cnn: "), std::string::npos) << sweep.output;
  std::vector<CsvRow> rows = readRows(out / "results.csv");
  ASSERT_EQ(rows.size(), 12u);

  std::optional<double> oneChip;
  std::map<std::string, double> pipelineByBandwidth;
  for (const CsvRow& row : rows) {
    ASSERT_EQ(row.at("status"), "ok") << row.at("error");
    EXPECT_TRUE(fs::exists(out / "points" / row.at("id") / "config.yaml"));
    Json direct = directRun(out, row, dir / ("direct-" + row.at("index") + ".json"));
    ASSERT_TRUE(direct.isObject());
    expectSame(row.at("throughput_images_per_s"), direct.numberAt("throughput_images_per_s"), "throughput");
    expectSame(row.at("steady_throughput_images_per_s"), direct.numberAt("steady_throughput_images_per_s"),
               "steady throughput");
    expectSame(row.at("latency_us"), direct.numberAt("latency_us"), "latency");
    expectSame(row.at("makespan_us"), direct.numberAt("makespan_us"), "makespan");
    expectSame(row.at("num_chips"), direct.numberAt("num_chips"), "chips");
    EXPECT_EQ(row.at("batch"), "4");
    EXPECT_EQ(direct.stringAt("split"), row.at("split"));
    expectSame(row.at("chip_utilization_max"), largest(direct, "chips", "utilization"), "chip busy");
    const double throughput = std::stod(row.at("throughput_images_per_s"));
    if (row.at("num_chips") == "1") {
      // One chip: no links, and every split and bandwidth runs the same.
      EXPECT_TRUE(row.at("link_utilization_max").empty());
      if (oneChip) {
        EXPECT_EQ(throughput, *oneChip);
      }
      oneChip = throughput;
      EXPECT_EQ(row.at("speedup_vs_1_chip"), "1");
    } else {
      expectSame(row.at("link_utilization_max"), largest(direct, "links", "utilization"), "link use");
      ASSERT_TRUE(oneChip);  // the 1-chip points come first
      expectSame(row.at("speedup_vs_1_chip"), throughput / *oneChip, "speed-up");
      if (row.at("split") == "data") {
        EXPECT_EQ(row.at("link_bytes"), "0");
      }
      if (row.at("split") == "pipeline")
        pipelineByBandwidth[row.at("system.interconnect.bandwidth_gb_per_s")] = throughput;
    }
    Expected<Json> point = readJsonFile((out / "points" / row.at("id") / "point.json").string());
    ASSERT_TRUE(point);
    ASSERT_TRUE(point->find("system"));
    EXPECT_EQ(point->find("system")->stringAt("split"), row.at("split"));
  }
  // A faster link never slows the pipeline down.
  ASSERT_EQ(pipelineByBandwidth.size(), 3u);
  EXPECT_LE(pipelineByBandwidth["system.interconnect.bandwidth_gb_per_s=0.05"],
            pipelineByBandwidth["system.interconnect.bandwidth_gb_per_s=8"]);

  std::string html = readFile(out / "report.html");
  EXPECT_NE(html.find("Throughput vs link bandwidth: tiny_cnn"), std::string::npos);
  EXPECT_NE(html.find("Highest throughput (per model)"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "plots/throughput_vs_link_bandwidth_tiny_cnn.svg"));
  EXPECT_TRUE(fs::exists(out / "plots/throughput_vs_chips_tiny_cnn.svg"));
  // Resume: nothing runs again, and the report is rebuilt identically.
  std::string csv = readFile(out / "results.csv");
  CommandResult again = runEmber("sweep " + kExample + " -o " + out.string() + " -j 2");
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("12 already done, running 0"), std::string::npos) << again.output;
  EXPECT_EQ(readFile(out / "results.csv"), csv);
}

TEST(CodesignMultichip, SharedDramAndHostAxesChangeTheFigures) {
  // Two chips, data parallel, on one shared DRAM: a slower DRAM, or timed
  // hosts, lower the throughput; each point is its direct `ember multichip` run.
  fs::path dir = freshDir("multichip_dram");
  fs::path out = dir / "out";
  writeFile(dir / "spec.yaml", "name: dram\nbackend: npu\nbase_config: " + std::string(EMBER_NPU_CONFIG_DIR) +
                                   "/npu-16x16.yaml\nmodels:\n  - path: " + kModel +
                                   "\n    calibrate: " + std::string(EMBER_EXAMPLE_MODELS_DIR) +
                                   "/tiny_cnn.input.npy\n"
                                   "system:\n  chips: 2\n  interconnect: {bandwidth_gb_per_s: 32}\n"
                                   "  dram: {kind: shared, size_mib: 2048, bandwidth_gb_per_s: 16}\n"
                                   "split: data\nbatch: 4\naxes:\n"
                                   "  system.dram.bandwidth_gb_per_s: [0.5, 64]\n"
                                   "  system.host.timed: [true, false]\n");
  CommandResult sweep = runEmber("sweep " + (dir / "spec.yaml").string() + " -o " + out.string() + " -j 2");
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  std::map<std::string, double> throughput;
  for (const CsvRow& row : readRows(out / "results.csv")) {
    ASSERT_EQ(row.at("status"), "ok") << row.at("error");
    Json direct = directRun(out, row, dir / ("direct-" + row.at("index") + ".json"));
    expectSame(row.at("throughput_images_per_s"), direct.numberAt("throughput_images_per_s"), "throughput");
    throughput[row.at("system.dram.bandwidth_gb_per_s") + ", " + row.at("system.host.timed")] =
        std::stod(row.at("throughput_images_per_s"));
  }
  ASSERT_EQ(throughput.size(), 4u);
  const std::string slow = "system.dram.bandwidth_gb_per_s=0.5", fast = "system.dram.bandwidth_gb_per_s=64";
  for (const char* host : {"system.host.timed=true", "system.host.timed=false"}) {
    EXPECT_LT(throughput.at(slow + ", " + host), throughput.at(fast + ", " + host)) << host;
  }
  for (const std::string& dram : {slow, fast})
    EXPECT_LT(throughput.at(dram + ", system.host.timed=true"),
              throughput.at(dram + ", system.host.timed=false"))
        << dram;
}

TEST(CodesignMultichip, SlurmTaskRunsAMultichipPoint) {
  fs::path dir = freshDir("multichip_slurm");
  fs::path out = dir / "out";
  CommandResult emit = runEmber("sweep " + kExample + " -o " + out.string() + " --emit-slurm");
  ASSERT_EQ(emit.status, 0) << emit.output;
  std::string script = readFile(out / "sweep.slurm");
  EXPECT_NE(script.find("#SBATCH --array=0-11\n"), std::string::npos) << script;
  CommandResult task = runShell("SLURM_ARRAY_TASK_ID=9 EMBER=" + std::string(EMBER_TOOL_PATH) + " bash " +
                                (out / "sweep.slurm").string());
  ASSERT_EQ(task.status, 0) << task.output;
  CommandResult report = runEmber("sweep " + kExample + " -o " + out.string() + " --report-only");
  EXPECT_EQ(report.status, 1) << report.output;  // the other 11 points have not run
  std::vector<CsvRow> rows = readRows(out / "results.csv");
  ASSERT_EQ(rows.size(), 12u);
  const CsvRow& row = rows[9];
  ASSERT_EQ(row.at("status"), "ok") << row.at("error");
  EXPECT_EQ(rows[8].at("status"), "not run");
  EXPECT_EQ(row.at("num_chips"), "2");
  Json direct = directRun(out, row, dir / "direct.json");
  expectSame(row.at("throughput_images_per_s"), direct.numberAt("throughput_images_per_s"), "throughput");
  expectSame(row.at("latency_us"), direct.numberAt("latency_us"), "latency");
}

TEST(CodesignMultichip, BadSystemsNameTheSpecAndTheKey) {
  fs::path dir = freshDir("multichip_bad");
  const std::string head = "models: [" + kModel + "]\n";
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {head + "system:\n  chips: 2\n  interconnect: {topology: mesh, bandwidth_gb_per_s: 1}\n",
            "topology 'mesh'"},
           {head + "system: {chips: 1}\naxes:\n  system.chips: [1, 3]\n", "3 chips but no 'interconnect'"},
           {head + "system:\n  chips: 2\n  interconnect: {bandwidth_gb_per_s: 1}\naxes:\n"
                   "  system.interconnect.latency_ns: [-5]\n",
            "'latency_ns' must be >= 0"}}) {
    writeFile(dir / "spec.yaml", text);
    CommandResult run = runEmber("sweep " + (dir / "spec.yaml").string() + " -o " + (dir / "out").string());
    EXPECT_EQ(run.status, 1) << text;
    EXPECT_NE(run.output.find((dir / "spec.yaml").string() + ": system with "), std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  }
  CommandResult reference =
      runEmber("sweep " + kExample + " -o " + (dir / "ref").string() + " --backend reference");
  EXPECT_EQ(reference.status, 1);
  EXPECT_NE(reference.output.find("--backend reference: a multi-chip sweep"), std::string::npos)
      << reference.output;
}

}  // namespace
}  // namespace ember::codesign::test
