// `ember run --backend npu` with host (fallback) partitions: the end-to-end
// latency is the NPU's time + the host partitions' + the host-link transfers,
// the transferred bytes are those of the tensors that cross the partition
// boundaries (computed here from the ONNX model's shapes), and the modelled
// host time follows the configured host MAC/s (docs/cli.md, "End-to-end latency").
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../common/RunTool.h"
#include "Json.h"

namespace {

namespace fs = std::filesystem;
using ember::codesign::Json;

const std::string kExamples = EMBER_EXAMPLES_DIR;
std::string digits() { return kExamples + "/models/digits.onnx"; }

/// Elements of a model input or output, its symbolic dims bound to 1 (--dim N=1).
int64_t elementsOf(const onnx::ValueInfoProto& info) {
  int64_t n = 1;
  for (const auto& dim : info.type().tensor_type().shape().dim())
    n *= dim.has_dim_value() ? dim.dim_value() : 1;
  return n;
}

class EndToEndLatencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_e2e_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ASSERT_EQ(ember({"quantize", digits(), "--dim", "N=1", "--calibrate",
                     kExamples + "/models/digits.calibration.npy", "-o", path("digits.yaml")})
                  .status,
              0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  ember::test::ToolRun ember(const std::vector<std::string>& args) {
    return ember::test::runTool(EMBER_TOOL_PATH, args, dir_);
  }
  /// Runs digits int8 on the npu (its Quantize and Dequantize fall back to
  /// the host) and returns the --report-json document.
  Json runNpu(const std::string& config, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run",
                                     digits(),
                                     "--dim",
                                     "N=1",
                                     "--backend",
                                     "npu",
                                     "--config",
                                     config,
                                     "--quantize",
                                     path("digits.yaml"),
                                     "--random-inputs",
                                     "--report-json",
                                     path("r.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    const ember::test::ToolRun run = ember(args);
    EXPECT_EQ(run.status, 0) << run.err;
    auto json = ember::codesign::readJsonFile(path("r.json"));
    EXPECT_TRUE(bool(json)) << (json ? "" : json.error().message());
    return json ? json.take() : Json();
  }
  static double number(const Json& json, const char* key) {
    std::optional<double> value = json.numberAt(key);
    EXPECT_TRUE(value.has_value()) << key;
    return value.value_or(-1);
  }

  fs::path dir_;
};

std::string npuConfig(const std::string& name) { return std::string(EMBER_NPU_CONFIG_DIR) + "/" + name; }

TEST_F(EndToEndLatencyTest, SumsNpuHostAndTheTransfersThatCrossed) {
  const double linkGbps = 0.5, linkUs = 3;
  Json report =
      runNpu(npuConfig("npu-16x16.yaml"), {"--repeat", "3", "--host-link-gbps", std::to_string(linkGbps),
                                           "--host-link-us", "3", "--trace", path("t.json")});
  const double npuUs = number(report, "latency_us"), hostUs = number(report, "host_partitions_us"),
               transfersUs = number(report, "transfers_us"), total = number(report, "end_to_end_latency_us");
  EXPECT_GT(npuUs, 0);
  EXPECT_GT(hostUs, 0);
  EXPECT_NEAR(total, npuUs + hostUs + transfersUs, 1e-6 * total);

  // The int8 model input (after the host's Quantize) goes to the npu and the
  // int8 logits come back for the host's Dequantize: one byte per element.
  onnx::ModelProto model;
  std::ifstream in(digits(), std::ios::binary);
  ASSERT_TRUE(model.ParseFromIstream(&in));
  ASSERT_EQ(model.graph().input_size(), 1);
  ASSERT_EQ(model.graph().output_size(), 1);
  const int64_t crossingBytes = elementsOf(model.graph().input(0)) + elementsOf(model.graph().output(0));
  EXPECT_EQ(number(report, "transfer_bytes"), double(crossingBytes));
  EXPECT_EQ(number(report, "host_transfers"), 2);
  EXPECT_NEAR(transfersUs, 2 * linkUs + double(crossingBytes) / (linkGbps * 1e9) * 1e6, 1e-6);

  // The trace holds the host partitions and the transfers as their own tracks.
  auto trace = ember::codesign::readJsonFile(path("t.json"));
  ASSERT_TRUE(bool(trace)) << trace.error().message();
  const Json* events = trace->find("traceEvents");
  ASSERT_TRUE(events && events->isArray());
  double hostSpan = -1, transferSpan = -1;
  for (const Json& event : events->items()) {
    if (event.numberAt("pid") != 1.0 || event.stringAt("ph") != "X") continue;
    (event.numberAt("tid") == 0.0 ? hostSpan : transferSpan) = event.numberAt("dur").value_or(-1);
  }
  EXPECT_NEAR(hostSpan, hostUs, 1e-3);
  EXPECT_NEAR(transferSpan, transfersUs, 1e-3);
}

// A config whose SRAMs fit no convolution tiling sends the convolutions to
// the host too: their MACs dominate the modelled host time, which then halves
// when the host's MAC/s doubles.
TEST_F(EndToEndLatencyTest, ModelledHostTimeFollowsTheHostMacRate) {
  std::ifstream in(npuConfig("npu-16x16.yaml"));
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  config.replace(config.find("size_kib: 256"), 13, "size_kib: 1");
  config.replace(config.find("banks: 4"), 8, "banks: 1");
  std::ofstream(path("tiny.yaml")) << config;
  auto hostUs = [&](const std::string& macsPerSecond) {
    Json report = runNpu(path("tiny.yaml"),
                         {"--host-model", "--host-macs-per-s", macsPerSecond, "--host-gbps", "1000000"});
    EXPECT_EQ(report.find("host_partitions_modelled") && report.find("host_partitions_modelled")->boolean(),
              true);
    return number(report, "host_partitions_us");
  };
  const double slow = hostUs("1e6"), fast = hostUs("2e6");
  EXPECT_GT(slow, 0);
  EXPECT_NEAR(slow / fast, 2.0, 1e-3);
}

}  // namespace
