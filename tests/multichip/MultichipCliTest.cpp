// `ember multichip` as a user runs it (docs/multichip.md): the batch's outputs
// equal `ember run`'s on the same random inputs bit for bit, the JSON report
// has the figures, and bad command lines and systems name the option, the
// file and the chip.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "ember/Npy.h"
#include "ember/Tensor.h"
#include "tests/common/RunTool.h"

namespace {

namespace fs = std::filesystem;
using ember::test::readWholeFile;
using ember::test::runTool;
using ember::test::ToolRun;

const std::string kModels = EMBER_NPU_MODEL_DIR;
const std::string kSystems = EMBER_MULTICHIP_CONFIG_DIR;

class MultichipCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("multichip_cli_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ToolRun ember(const std::vector<std::string>& args) { return runTool(EMBER_TOOL_PATH, args, dir_); }
  fs::path dir_;
};

TEST_F(MultichipCli, BatchOutputsEqualTheOneChipRun) {
  // Three digits images (the test input, reversed, and every pixel shifted) stacked as one batch:
  // `ember multichip --batch 3` against three one-chip `ember run`s.
  const std::string model = kModels + "/digits.onnx", profile = kModels + "/digits.profile.yaml";
  ember::Expected<ember::Tensor> image = ember::readNpy(kModels + "/digits.input.npy");
  ASSERT_TRUE(image) << image.error().message();
  ASSERT_EQ(image->type().kind, ember::ElemKind::F32);
  const int64_t n = image->type().numElements();
  std::vector<ember::Tensor> images(3, *image);
  for (int64_t i = 0; i < n; ++i) {
    images[1].as<float>()[i] = image->as<float>()[n - 1 - i];
    images[2].as<float>()[i] = image->as<float>()[(i + 5) % n];
  }
  ember::Dims batchDims = image->type().dims;
  batchDims[0] = 3;
  ember::Tensor batch(image->type().withDims(batchDims));
  std::vector<ember::Tensor> expected;
  for (size_t b = 0; b < images.size(); ++b) {
    std::memcpy(batch.as<float>() + b * size_t(n), images[b].as<float>(), size_t(n) * sizeof(float));
    const fs::path in = dir_ / ("image" + std::to_string(b) + ".npy"),
                   out = dir_ / ("one" + std::to_string(b));
    ASSERT_FALSE(ember::writeNpy(in.string(), images[b]));
    ToolRun one = ember({"run", model, "--backend", "npu", "--quantize", profile, "--dim", "N=1", "--input",
                         in.string(), "--output-dir", out.string(), "--quiet"});
    ASSERT_EQ(one.status, 0) << one.err;
    ASSERT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
    ember::Expected<ember::Tensor> output = ember::readNpy(fs::directory_iterator(out)->path().string());
    ASSERT_TRUE(output);
    expected.push_back(output.take());
  }
  ASSERT_FALSE(ember::writeNpy((dir_ / "batch.npy").string(), batch));
  // Co-simulated (the default) on both splits, and the event schedule alone.
  const std::pair<const char*, bool> modes[] = {{"pipeline", false}, {"data", false}, {"pipeline", true}};
  for (const auto& [split, scheduleOnly] : modes) {
    const std::string name = std::string(split) + (scheduleOnly ? "-schedule" : "");
    const fs::path out = dir_ / name;
    std::vector<std::string> args{"multichip",     model,
                                  "--system",      kSystems + "/ring4-npu16.yaml",
                                  "--split",       split,
                                  "--quantize",    profile,
                                  "--dim",         "N=1",
                                  "--batch",       "3",
                                  "--input",       (dir_ / "batch.npy").string(),
                                  "--output-dir",  out.string(),
                                  "--report-json", (dir_ / (name + ".json")).string()};
    if (scheduleOnly) args.push_back("--schedule-only");
    ToolRun multi = ember(args);
    ASSERT_EQ(multi.status, 0) << multi.err;
    EXPECT_NE(multi.out.find(scheduleOnly ? "not co-simulated" : "co-simulated in one SystemC elaboration"),
              std::string::npos)
        << multi.out;
    ASSERT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
    ember::Expected<ember::Tensor> got = ember::readNpy(fs::directory_iterator(out)->path().string());
    ASSERT_TRUE(got) << got.error().message();
    const size_t bytes = expected[0].sizeInBytes();
    ASSERT_EQ(got->sizeInBytes(), 3 * bytes);
    for (size_t b = 0; b < 3; ++b)
      EXPECT_EQ(
          std::memcmp(static_cast<const std::byte*>(got->data()) + b * bytes, expected[b].data(), bytes), 0)
          << name << ": image " << b;
    const std::string report = readWholeFile(dir_ / (name + ".json"));
    for (const char* key : {"\"latency_us\"", "\"throughput_images_per_s\"", "\"links\"", "\"utilization\"",
                            "\"busy_cycles\"", "\"host_partitions\"", "\"micro_batches\": 3"})
      EXPECT_NE(report.find(key), std::string::npos) << key;
    EXPECT_NE(report.find(scheduleOnly ? "\"co_simulated\": false" : "\"co_simulated\": true"),
              std::string::npos);
    EXPECT_EQ(report.find("\"schedule_estimate\"") != std::string::npos, !scheduleOnly);
  }
}

TEST_F(MultichipCli, TwelveChipsOnASharedDramWithTimedHosts) {
  // More chips than the 8 a process elaborated before, on one shared DRAM:
  // co-simulated, the report has the DRAM's use and each chip's stalls; the
  // event schedule says it cannot model the contention. The host partitions
  // (digits' input Quantize, output Dequantize) take time unless --untimed-host.
  const std::string model = kModels + "/digits.onnx", profile = kModels + "/digits.profile.yaml";
  std::ofstream(dir_ / "twelve.yaml") << "chips: {count: 12, config: " << EMBER_NPU_CONFIG_DIR
                                      << "/npu-16x16.yaml}\n"
                                         "interconnect: {topology: ring, bandwidth_gb_per_s: 8}\n"
                                         "dram: {kind: shared, size_mib: 4096, bandwidth_gb_per_s: 4}\n";
  auto runWith = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args{"multichip",
                                  model,
                                  "--system",
                                  (dir_ / "twelve.yaml").string(),
                                  "--split",
                                  "data",
                                  "--quantize",
                                  profile,
                                  "--dim",
                                  "N=1",
                                  "--batch",
                                  "12",
                                  "--random-inputs",
                                  "--report-json",
                                  (dir_ / (name + ".json")).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    ToolRun r = ember(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return std::make_pair(r.out, readWholeFile(dir_ / (name + ".json")));
  };
  const auto [text, report] = runWith("cosim", {});
  EXPECT_NE(report.find("\"num_chips\": 12"), std::string::npos);
  EXPECT_NE(report.find("\"co_simulated\": true"), std::string::npos);
  EXPECT_NE(report.find("\"kind\": \"shared\""), std::string::npos);
  EXPECT_NE(report.find("\"contention_modelled\": true"), std::string::npos);
  EXPECT_NE(report.find("\"shared_dram_wait_cycles\""), std::string::npos);
  EXPECT_NE(report.find("\"warnings\": []"), std::string::npos);
  EXPECT_NE(text.find("shared DRAM:  4.0 GB/s, busy"), std::string::npos) << text;
  EXPECT_NE(text.find("us per micro-batch (modelled"), std::string::npos) << text;
  EXPECT_EQ(report.find("\"host_us_per_micro_batch\": 0,"), std::string::npos);

  const auto [scheduleText, scheduleReport] = runWith("schedule", {"--schedule-only", "--untimed-host"});
  EXPECT_NE(scheduleReport.find("\"contention_modelled\": false"), std::string::npos);
  EXPECT_NE(scheduleReport.find("does not model shared-DRAM contention"), std::string::npos);
  EXPECT_NE(scheduleText.find("warning:      the event schedule (--schedule-only) does not model"),
            std::string::npos)
      << scheduleText;
  EXPECT_NE(scheduleReport.find("\"timed\": false"), std::string::npos);
  EXPECT_NE(scheduleReport.find("\"host_us_per_micro_batch\": 0,"), std::string::npos);
}

TEST_F(MultichipCli, BadCommandLinesAndSystems) {
  const std::string model = kModels + "/digits.onnx";
  ToolRun r = ember({"multichip", model});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--system SYSTEM.yaml is required"), std::string::npos) << r.err;
  r = ember({"multichip", model, "--system", kSystems + "/ring4-npu16.yaml", "--split", "tensor"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--split must be pipeline or data, not 'tensor'"), std::string::npos) << r.err;
  r = ember({"multichip", model, "--system", kSystems + "/ring4-npu16.yaml", "--backend", "cpu"});
  EXPECT_EQ(r.status, 2);
  r = ember({"multichip", model, "--system", (dir_ / "nothere.yaml").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("nothere.yaml"), std::string::npos) << r.err;
  // A listed interconnect that leaves a chip out names it.
  std::ofstream(dir_ / "cut.yaml") << "chips: {count: 3, config: " << EMBER_NPU_CONFIG_DIR
                                   << "/npu-16x16.yaml}\n"
                                      "interconnect: {topology: listed, links: [{between: [npu0, npu1]}]}\n";
  r = ember({"multichip", model, "--system", (dir_ / "cut.yaml").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cut.yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chip 'npu2'"), std::string::npos) << r.err;
  // The host section is checked like the rest.
  std::ofstream(dir_ / "host.yaml") << "chips: {count: 1, config: " << EMBER_NPU_CONFIG_DIR
                                    << "/npu-16x16.yaml}\nhost: {macs_per_second: 1e9}\n";
  r = ember({"multichip", model, "--system", (dir_ / "host.yaml").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("host: unknown key 'macs_per_second'"), std::string::npos) << r.err;
}

}  // namespace
