// Graceful limits (docs/cli.md, docs/codesign.md): a model over --memory-limit,
// a simulation over --max-cycles and a sweep point over its time limit each
// end with one line naming the limit and its value, exit non-zero, and leave
// no output file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../common/RunTool.h"

namespace ember::test {
namespace {

namespace fs = std::filesystem;

class Limits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_limits_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
  }
  void TearDown() override { fs::remove_all(dir_); }

  ToolRun ember(const std::vector<std::string>& args) { return runTool(EMBER_TOOL_PATH, args, dir_ / "run"); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// The failure is one line on stderr that names `limit` and `value`.
  static void expectOneLineNaming(const ToolRun& run, const std::string& limit, const std::string& value) {
    EXPECT_EQ(run.status, 1) << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;  // exactly one line
    EXPECT_EQ(run.err.rfind("ember: ", 0), 0u) << run.err;
    EXPECT_NE(run.err.find(limit), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(value), std::string::npos) << run.err;
  }

  fs::path dir_;
};

const std::string kTinyCnn = std::string(EMBER_EXAMPLES_DIR) + "/models/tiny_cnn.onnx";
const std::string kGemm = std::string(EMBER_NPU_TEST_DIR) + "/gemm_64x48x32.s";

// tiny_cnn's linear layer holds a 10 x 128 float weight: 5,120 bytes.
TEST_F(Limits, MemoryLimitBelowOneConstantStopsCompileAndRun) {
  ToolRun compile =
      ember({"compile", kTinyCnn, "--memory-limit", "4K", "--report-json", path("report.json")});
  expectOneLineNaming(compile, "--memory-limit 4K", "4096");
  EXPECT_NE(compile.err.find("5120"), std::string::npos) << compile.err;
  EXPECT_FALSE(fs::exists(path("report.json")));

  ToolRun run = ember({"run", kTinyCnn, "--memory-limit", "4K", "--random-inputs", "--output-dir",
                       path("out"), "--report-json", path("report.json")});
  expectOneLineNaming(run, "--memory-limit 4K", "4096");
  EXPECT_FALSE(fs::exists(path("report.json")));
  EXPECT_TRUE(!fs::exists(path("out")) || fs::is_empty(path("out")));
}

TEST_F(Limits, MemoryLimitBelowTheWholePlanStopsTheCompile) {
  // tiny_cnn's constants (8.3 KiB) fit in 16 KiB, but with its input, output
  // and activations (3.1 + 11.0 KiB) it does not.
  ToolRun run = ember({"compile", kTinyCnn, "--memory-limit", "16K", "--report-json", path("report.json")});
  expectOneLineNaming(run, "--memory-limit 16K", "16384");
  EXPECT_NE(run.err.find("above the memory limit"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(path("report.json")));
  // A limit above the need compiles.
  EXPECT_EQ(ember({"compile", kTinyCnn, "--memory-limit", "1M", "--quiet"}).status, 0);
}

/// The cycles of an unlimited run, from its --stats file.
uint64_t cyclesOf(const std::string& statsJson) {
  const std::string text = readWholeFile(statsJson);
  const size_t at = text.find("\"cycles\":");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + 9));
}

TEST_F(Limits, MaxCyclesIsExactOnEmberSim) {
  ToolRun full = ember({"sim", kGemm, "--random-inputs", "--stats", path("full.json"), "--quiet"});
  ASSERT_EQ(full.status, 0) << full.err;
  const uint64_t cycles = cyclesOf(path("full.json"));
  ASSERT_GT(cycles, 100u);

  // A budget of exactly the run's cycles passes; one cycle less fails.
  EXPECT_EQ(
      ember({"sim", kGemm, "--random-inputs", "--max-cycles", std::to_string(cycles), "--quiet"}).status, 0);
  const std::string tight = std::to_string(cycles - 1);
  ToolRun over = ember({"sim", kGemm, "--random-inputs", "--max-cycles", tight, "--output-dir", path("out"),
                        "--stats", path("stats.json"), "--trace", path("trace.json"), "--quiet"});
  expectOneLineNaming(over, "--max-cycles " + tight, "cycle budget of " + tight);
  EXPECT_FALSE(fs::exists(path("stats.json")));
  EXPECT_FALSE(fs::exists(path("trace.json")));
  EXPECT_FALSE(fs::exists(path("out")));

  // A long program stops early, while its instructions are still fetched.
  ToolRun early = ember({"sim", std::string(EMBER_NPU_TEST_DIR) + "/gemm_256x256x256.s", "--random-inputs",
                         "--max-cycles", "1000", "--quiet"});
  expectOneLineNaming(early, "--max-cycles 1000", "cycle budget of 1000");
  EXPECT_NE(early.err.find("of 673)"), std::string::npos) << early.err;  // "(instruction i of 673)"

  EXPECT_EQ(ember({"sim", kGemm, "--random-inputs", "--max-cycles", "0"}).status, 2);
}

TEST_F(Limits, MaxCyclesOnEmberRunWithTheNpuBackend) {
  const std::string digits = std::string(EMBER_EXAMPLES_DIR) + "/models/digits.onnx";
  const std::string calibration = std::string(EMBER_EXAMPLES_DIR) + "/models/digits.calibration.npy";
  ToolRun quantize =
      ember({"quantize", digits, "--dim", "N=1", "--calibrate", calibration, "-o", path("digits.yaml")});
  ASSERT_EQ(quantize.status, 0) << quantize.err;
  const std::vector<std::string> common{
      "run",   digits, "--backend", "npu", "--quantize", path("digits.yaml"), "--random-inputs",
      "--dim", "N=1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return ember(args);
  };
  EXPECT_EQ(with({"--max-cycles", "1000000000", "--quiet"}).status, 0);
  ToolRun over = with({"--max-cycles", "100", "--output-dir", path("out"), "--report-json", path("r.json")});
  expectOneLineNaming(over, "--max-cycles 100", "cycle budget of 100");
  EXPECT_FALSE(fs::exists(path("r.json")));
  EXPECT_TRUE(!fs::exists(path("out")) || fs::is_empty(path("out")));
  // Only a simulated backend counts cycles.
  EXPECT_EQ(ember({"run", kTinyCnn, "--random-inputs", "--max-cycles", "100"}).status, 2);
}

TEST_F(Limits, SweepPointOverItsTimeLimitIsStoppedAndRecorded) {
  // The RTL matrix engine makes one point of a 256^3 gemm take far longer
  // than 10 ms: the pool stops it at its first check after the limit.
  std::ofstream(path("spec.yaml")) << "name: slow\ntimeout_seconds: 0.01\nbase_config: "
                                   << EMBER_NPU_CONFIG_DIR << "/npu-16x16.yaml\nmodels: ["
                                   << EMBER_NPU_TEST_DIR
                                   << "/gemm_256x256x256.s]\naxes:\n  matrix_engine.model: [rtl]\n";
  ToolRun run = ember({"sweep", path("spec.yaml"), "-o", path("out"), "-j", "1"});
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("exceeded the per-point time limit of 0.01 s (timeout_seconds, --timeout)"),
            std::string::npos)
      << run.err;
  const std::string csv = readWholeFile(path("out/results.csv"));
  EXPECT_NE(csv.find("failed"), std::string::npos) << csv;
  EXPECT_NE(csv.find("per-point time limit of 0.01 s"), std::string::npos) << csv;
  // The stopped child's statistics file, if it began one, is gone.
  for (const auto& entry : fs::recursive_directory_iterator(path("out/points")))
    EXPECT_NE(entry.path().filename(), "stats.json") << entry.path();
}

}  // namespace
}  // namespace ember::test
