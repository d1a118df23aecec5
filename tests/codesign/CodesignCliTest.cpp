// End-to-end tests of `ember sweep` and `ember report` (docs/codesign.md):
// they run the built tool on NPU programs and a shipped model and check the
// files it writes, failures, resume and the Slurm script.
#include <gtest/gtest.h>

#include <regex>

#include "Json.h"
#include "TestUtil.h"

namespace ember::codesign::test {
namespace {

/// Two NPU programs x 2 scratchpad sizes x 2 DRAM bandwidths; the 64 KiB
/// scratchpad cannot hold the programs' buffers, so those points fail.
const char* kProgramSpec = R"(name: programs
variables:
  npu: .
models:
  - ${npu}/gemm_64x48x32.s
  - {path: "${npu}/conv_im2col.s", name: conv}
axes:
  scratchpad.size_kib: [256, 64]
  dram.bandwidth_bytes_per_cycle: [4, 32]
)";

TEST(CodesignCli, SweepRecordsMetricsFailuresAndResumes) {
  fs::path dir = freshDir("programs");
  writeFile(dir / "spec.yaml", kProgramSpec);
  std::string common =
      (dir / "spec.yaml").string() + " -o " + (dir / "out").string() + " --var npu=" + EMBER_NPU_TEST_DIR;
  CommandResult run = runEmber("sweep " + common + " -j 2");
  EXPECT_EQ(run.status, 1) << run.output;  // some points fail, the sweep goes on
  EXPECT_NE(run.output.find("8 points, 0 already done, running 8 with -j 2"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("pareto front gemm_64x48x32: "), std::string::npos) << run.output;

  auto rows = readCsv(dir / "out/results.csv");
  ASSERT_EQ(rows.size(), 9u) << readFile(dir / "out/results.csv");
  const auto& h = rows[0];
  for (const char* name :
       {"cycles", "latency_us", "mac_utilization", "dram_read_bytes", "dram_write_bytes", "energy_pj",
        "sram_peak_bytes", "pes", "sram_bytes", "area_mm2", "status", "error"})
    column(h, name);
  size_t status = column(h, "status"), error = column(h, "error"), cycles = column(h, "cycles"),
         model = column(h, "model"), kib = column(h, "scratchpad.size_kib"),
         bandwidth = column(h, "dram.bandwidth_bytes_per_cycle"), area = column(h, "area_mm2"),
         id = column(h, "id"), pareto = column(h, "pareto");
  std::map<std::string, double> cyclesOf;
  size_t ok = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    ASSERT_EQ(row.size(), h.size());
    bool big = row[kib] == "scratchpad.size_kib=256";
    if (big) {
      EXPECT_EQ(row[status], "ok") << row[error];
      EXPECT_GT(std::stod(row[cycles]), 0);
      cyclesOf[row[model] + " " + row[bandwidth]] = std::stod(row[cycles]);
      ++ok;
    } else {
      EXPECT_EQ(row[status], "failed");
      EXPECT_NE(row[error].find("exit status 1"), std::string::npos) << row[error];
      EXPECT_TRUE(row[cycles].empty());
      EXPECT_EQ(row[pareto], "0");
    }
    Expected<Json> json = readJsonFile((dir / "out/points" / row[id] / "point.json").string());
    ASSERT_TRUE(json) << json.error().message();
    EXPECT_EQ(json->stringAt("status"), row[status]);
    EXPECT_TRUE(fs::exists(dir / "out/points" / row[id] / "log.txt"));
    EXPECT_GT(std::stod(row[area]), 0);
  }
  EXPECT_EQ(ok, 4u);
  // More DRAM bandwidth never makes a program slower.
  EXPECT_LE(cyclesOf["conv dram.bandwidth_bytes_per_cycle=32"],
            cyclesOf["conv dram.bandwidth_bytes_per_cycle=4"]);
  EXPECT_LT(cyclesOf["gemm_64x48x32 dram.bandwidth_bytes_per_cycle=32"],
            cyclesOf["gemm_64x48x32 dram.bandwidth_bytes_per_cycle=4"]);
  std::string html = readFile(dir / "out/report.html");
  EXPECT_GE(std::count(html.begin(), html.end(), '<'), 100);
  EXPECT_NE(html.find("Pareto front"), std::string::npos);
  EXPECT_GE(std::regex_search(html, std::regex("<svg")), true);
  EXPECT_TRUE(fs::exists(dir / "out/plots/pareto_conv.svg"));
  EXPECT_TRUE(fs::exists(dir / "out/plots/roofline_conv.svg"));
  EXPECT_TRUE(fs::exists(dir / "out/plots/utilization.svg"));

  // Resume: the four ok points are skipped and their files left alone.
  std::string okId = rows[1][status] == "ok" ? rows[1][id] : rows[2][id];
  auto before = fs::last_write_time(dir / "out/points" / okId / "point.json");
  CommandResult again = runEmber("sweep " + common + " -j 2");
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.output.find("8 points, 4 already done, running 4"), std::string::npos) << again.output;
  EXPECT_EQ(fs::last_write_time(dir / "out/points" / okId / "point.json"), before);
}

TEST(CodesignCli, SlurmScriptRunsOneArrayTaskPerPoint) {
  fs::path dir = freshDir("slurm");
  writeFile(dir / "spec.yaml", kProgramSpec);
  std::string common =
      (dir / "spec.yaml").string() + " -o " + (dir / "out").string() + " --var npu=" + EMBER_NPU_TEST_DIR;
  CommandResult emit = runEmber("sweep " + common + " --emit-slurm");
  ASSERT_EQ(emit.status, 0) << emit.output;
  std::string script = readFile(dir / "out/sweep.slurm");
  EXPECT_NE(script.find("#SBATCH --array=0-7\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--point \"$SLURM_ARRAY_TASK_ID\""), std::string::npos) << script;
  EXPECT_FALSE(fs::exists(dir / "out/results.csv"));  // nothing ran

  // Without Slurm the #SBATCH lines are comments: run array task 1 by hand.
  CommandResult task = runShell("SLURM_ARRAY_TASK_ID=1 EMBER=" + std::string(EMBER_TOOL_PATH) + " bash " +
                                (dir / "out/sweep.slurm").string());
  EXPECT_EQ(task.status, 0) << task.output;
  auto tsv = readFile(dir / "out/points.tsv");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(tsv, m, std::regex("\n1\t([^\t]+)\t")));
  Expected<Json> point = readJsonFile((dir / "out/points" / m[1].str() / "point.json").string());
  ASSERT_TRUE(point) << point.error().message();
  EXPECT_EQ(point->stringAt("status"), "ok");
  EXPECT_EQ(point->find("metrics")->numberAt("cycles").value_or(0) > 0, true);

  CommandResult collect = runEmber("sweep " + common + " --report-only");
  EXPECT_EQ(collect.status, 1);  // seven points have not run
  auto csv = readCsv(dir / "out/results.csv");
  ASSERT_EQ(csv.size(), 9u);
  EXPECT_EQ(csv[2][column(csv[0], "status")], "ok");
  EXPECT_EQ(csv[3][column(csv[0], "status")], "not run");
}

TEST(CodesignCli, SlurmOptionsAreCheckedAndCarriedIntoTheScript) {
  fs::path dir = freshDir("slurm_options");
  writeFile(dir / "spec.yaml", kProgramSpec);
  std::string common =
      (dir / "spec.yaml").string() + " -o " + (dir / "out").string() + " --var npu=" + EMBER_NPU_TEST_DIR;
  CommandResult emit =
      runEmber("sweep " + common + " --emit-slurm --partition batch --time 1:30:00 --mem 4G --account hw");
  ASSERT_EQ(emit.status, 0) << emit.output;
  std::string script = readFile(dir / "out/sweep.slurm");
  for (const char* line : {"#SBATCH --partition=batch\n", "#SBATCH --time=1:30:00\n", "#SBATCH --mem=4G\n",
                           "#SBATCH --account=hw\n"})
    EXPECT_NE(script.find(line), std::string::npos) << line << script;

  CommandResult bad = runEmber("sweep " + common + " --emit-slurm --time 'ten minutes'");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("--time 'ten minutes': not a Slurm time"), std::string::npos) << bad.output;
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;

  // --resume on a machine without Slurm: one line, nothing submitted.
  CommandResult resume =
      runShell("PATH=/nonexistent " + std::string(EMBER_TOOL_PATH) + " sweep " + common + " --resume");
  EXPECT_EQ(resume.status, 1);
  EXPECT_NE(resume.output.find("sbatch not found"), std::string::npos) << resume.output;
  EXPECT_EQ(std::count(resume.output.begin(), resume.output.end(), '\n'), 1) << resume.output;
  EXPECT_FALSE(fs::exists(dir / "out/slurm/jobs.txt"));
}

TEST(CodesignCli, ReferenceBackendSweepCalibratesOncePerModel) {
  fs::path dir = freshDir("reference");
  writeFile(dir / "spec.yaml", std::string("backend: reference\nquantize: true\nmodels: [") +
                                   EMBER_EXAMPLE_MODELS_DIR +
                                   "/tiny_cnn.onnx]\naxes:\n  vector.lanes: [16, 32]\n");
  CommandResult run =
      runEmber("sweep " + (dir / "spec.yaml").string() + " -o " + (dir / "out").string() + " -j 2");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("calibrating tiny_cnn (random data)"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(dir / "out/profiles/tiny_cnn.yaml"));
  auto rows = readCsv(dir / "out/results.csv");
  ASSERT_EQ(rows.size(), 3u);
  for (size_t r = 1; r < 3; ++r) {
    EXPECT_EQ(rows[r][column(rows[0], "status")], "ok");
    EXPECT_FALSE(rows[r][column(rows[0], "compile_seconds")].empty());
    EXPECT_TRUE(rows[r][column(rows[0], "cycles")].empty());  // a host backend has no cycles
  }
}

TEST(CodesignCli, BadSpecsAreOneLineErrors) {
  fs::path dir = freshDir("bad");
  writeFile(dir / "spec.yaml", std::string("models: [") + EMBER_NPU_TEST_DIR +
                                   "/pool.s]\naxes:\n  dram.bandwidth_bytes_per_cyc: [16]\n");
  CommandResult run = runEmber("sweep " + (dir / "spec.yaml").string() + " -o " + (dir / "out").string());
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("dram.bandwidth_bytes_per_cyc"), std::string::npos) << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  writeFile(dir / "missing.yaml", "models: [nothere.onnx]\n");
  run = runEmber("sweep " + (dir / "missing.yaml").string() + " -o " + (dir / "out").string());
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("nothere.onnx: no such file"), std::string::npos) << run.output;
  EXPECT_EQ(runEmber("sweep " + (dir / "missing.yaml").string()).status, 2);  // no -o
}

TEST(CodesignCli, ReportCommandWritesThePerLayerPage) {
  fs::path dir = freshDir("report");
  CommandResult sim =
      runEmber("sim " + std::string(EMBER_NPU_TEST_DIR) + "/conv_im2col.s --random-inputs --quiet --stats " +
               (dir / "stats.json").string());
  ASSERT_EQ(sim.status, 0) << sim.output;
  CommandResult report =
      runEmber("report " + (dir / "stats.json").string() + " --svg-dir " + (dir / "svg").string());
  ASSERT_EQ(report.status, 0) << report.output;
  std::string html = readFile(dir / "stats.html");
  Expected<Json> stats = readJsonFile((dir / "stats.json").string());
  ASSERT_TRUE(stats);
  for (const Json& layer : stats->find("layers")->items())
    EXPECT_NE(html.find("<td>" + layer.stringAt("name") + "</td>"), std::string::npos)
        << layer.stringAt("name");
  EXPECT_NE(html.find("Roofline"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "svg/roofline.svg"));
  writeFile(dir / "host.json", R"({"backend": "reference", "compile_seconds": 0.1})");
  CommandResult host = runEmber("report " + (dir / "host.json").string());
  EXPECT_EQ(host.status, 1);
  EXPECT_NE(host.output.find("no NPU statistics"), std::string::npos);
}

}  // namespace
}  // namespace ember::codesign::test
