// Models split over 1 to 4 NPUs (docs/multichip.md), bit for bit: every
// micro-batch's outputs, with the chips co-simulated, equal the one-chip npu
// run's and the reference backend's, pipelined and data parallel, on the model tests' int8 models
// (scripts/gen_npu_models.py, profiles calibrated by `ember quantize` at
// build time). The co-simulated links against bytes / bandwidth + latency,
// and a slow link binding the pipeline. And the errors: a stage a chip
// cannot hold names the chip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"
#include "ember/multichip/MultichipModel.h"

namespace ember::multichip {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs = EMBER_NPU_CONFIG_DIR;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (fs::path(EMBER_NPU_MODEL_DIR) / (model + suffix)).string();
}

/// A ring of `chips` chips, npu-16x16 and npu-16x16-v3 alternating (they differ: the split balances
/// with each chip's estimates), written next to the NPU configs so that relative paths resolve.
SystemConfig ringOf(size_t chips, const std::string& dir = kConfigs) {
  std::string yaml = "chips:\n";
  for (size_t c = 0; c < chips; ++c)
    yaml += "  - {name: c" + std::to_string(c) +
            ", config: " + (c % 2 ? "npu-16x16-v3.yaml" : "npu-16x16.yaml") + "}\n";
  if (chips > 1) yaml += "interconnect: {topology: ring, bandwidth_gb_per_s: 32, latency_ns: 500}\n";
  Expected<SystemConfig> system = parseSystemConfig(yaml, dir + "/system.yaml");
  EXPECT_TRUE(system) << system.error().message();
  return system.take();
}

struct Model {
  std::unique_ptr<Module> module = std::make_unique<Module>();
  Function* function = nullptr;
  QuantizationProfile profile;
};

Expected<Model> load(const std::string& name) {
  Model model;
  ImportOptions importOptions;
  importOptions.dimValues["N"] = 1;
  EMBER_ASSIGN_OR_RETURN(model.function,
                         importOnnxFile(dataPath(name, ".onnx"), *model.module, importOptions));
  EMBER_ASSIGN_OR_RETURN(model.profile, QuantizationProfile::load(dataPath(name, ".profile.yaml")));
  return model;
}

CompileOptions quantizing(const QuantizationProfile& profile, bool withFallback) {
  CompileOptions options;
  options.beforeLowering = [&profile](Function& f, const Backend& backend) {
    return quantizeFunction(f, profile, backend);
  };
  if (withFallback) options.fallbackBackends = {"reference"};
  return options;
}

/// Two micro-batches: the test input and its elements in reverse order.
std::vector<std::map<std::string, Tensor>> microBatches(const std::string& name, const Function& function) {
  Expected<Tensor> input = readNpy(dataPath(name, ".input.npy"));
  EXPECT_TRUE(input) << input.error().message();
  Tensor reversed = *input;
  const size_t element = reversed.sizeInBytes() / size_t(reversed.type().numElements());
  const auto* from = static_cast<const std::byte*>(input->data());
  auto* to = static_cast<std::byte*>(reversed.data());
  const size_t count = size_t(reversed.type().numElements());
  for (size_t i = 0; i < count; ++i) std::memcpy(to + i * element, from + (count - 1 - i) * element, element);
  const std::string inputName = function.inputs().front()->name();
  return {{{inputName, *input}}, {{inputName, reversed}}};
}

/// The one-chip run of each micro-batch on `backendName` (npu-16x16 for the npu).
std::vector<std::map<std::string, Tensor>> oneChip(const std::string& name, const std::string& backendName,
                                                   const std::vector<std::map<std::string, Tensor>>& inputs) {
  Expected<Model> model = load(name);
  EXPECT_TRUE(model) << model.error().message();
  auto backend = BackendRegistry::global().create(backendName);
  EXPECT_TRUE(backend);
  if (backendName == "npu") {
    EXPECT_FALSE((*backend)->setOption("config", kConfigs + "/npu-16x16.yaml"));
  }
  Expected<CompiledModel> compiled = compileFunction(*model->function, backend.take(),
                                                     quantizing(model->profile, backendName != "reference"));
  EXPECT_TRUE(compiled) << compiled.error().message();
  std::vector<std::map<std::string, Tensor>> outputs;
  for (const auto& values : inputs) {
    ExecutionContext context;
    for (const auto& [input, tensor] : values) context.setInput(input, tensor);
    Error e = compiled->function->execute(context);
    EXPECT_FALSE(e) << e.message();
    outputs.push_back(context.outputs());
  }
  return outputs;
}

class MultichipModelTest : public testing::TestWithParam<std::tuple<std::string, SplitMode>> {
 protected:
  static void SetUpTestSuite() { registerBuiltinBackends(); }
};

TEST_P(MultichipModelTest, BitExactOnOneToFourChips) {
  const auto& [name, split] = GetParam();
  Expected<Model> probe = load(name);
  ASSERT_TRUE(probe) << probe.error().message();
  const auto inputs = microBatches(name, *probe->function);
  const auto reference = oneChip(name, "reference", inputs);
  const auto npu = oneChip(name, "npu", inputs);
  for (size_t chips = 1; chips <= 4; ++chips) {
    SCOPED_TRACE(std::to_string(chips) + " chips, " + std::string(splitModeName(split)));
    Expected<Model> model = load(name);
    ASSERT_TRUE(model) << model.error().message();
    MultichipOptions options;
    options.split = split;
    options.compile = quantizing(model->profile, true);
    Expected<MultichipModel> compiled = compileMultichip(*model->function, ringOf(chips), options);
    ASSERT_TRUE(compiled) << compiled.error().message();
    ASSERT_EQ(compiled->stages.size(), chips);
    Expected<CoSimulatedRun> coSimulated = coSimulateMultichip(*compiled, inputs, compiled->system);
    ASSERT_TRUE(coSimulated) << coSimulated.error().message();
    const MultichipRun* run = &coSimulated->run;
    ASSERT_EQ(run->outputs.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_EQ(run->outputs[i].size(), npu[i].size());
      for (const auto& [output, tensor] : npu[i]) {
        ASSERT_TRUE(run->outputs[i].count(output)) << output;
        EXPECT_TRUE(run->outputs[i].at(output).bitwiseEqual(tensor))
            << "micro-batch " << i << " output " << output;
        EXPECT_TRUE(run->outputs[i].at(output).bitwiseEqual(reference[i].at(output)))
            << "micro-batch " << i << " output " << output << " against the reference backend";
      }
    }
    // Every chip worked, and the timing is consistent: the co-simulation's
    // chip busy times are the stage runs' cycles the event schedule adds up.
    const MultichipFigures& figures = coSimulated->figures;
    EXPECT_GT(figures.latencyNs, 0);
    EXPECT_GE(figures.makespanNs, figures.latencyNs);
    const MultichipFigures scheduled = timeRun(*compiled, *run, compiled->system);
    for (size_t c = 0; c < chips; ++c)
      EXPECT_NEAR(figures.schedule.chipBusyNs[c], scheduled.schedule.chipBusyNs[c], 1e-6) << "chip " << c;
    for (size_t l = 0; l < figures.schedule.links.size(); ++l)
      EXPECT_EQ(figures.schedule.links[l].bytes[0] + figures.schedule.links[l].bytes[1],
                scheduled.schedule.links[l].bytes[0] + scheduled.schedule.links[l].bytes[1]);
    if (split == SplitMode::Pipeline && chips > 1) {
      EXPECT_FALSE(compiled->transfers.empty());
    }
    if (split == SplitMode::Data) {
      EXPECT_TRUE(compiled->transfers.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CiModels, MultichipModelTest,
                         testing::Combine(testing::Values("digits", "resnet18_64", "mobilenet_v2_64",
                                                          "transformer_encoder"),
                                          testing::Values(SplitMode::Pipeline, SplitMode::Data)),
                         [](const testing::TestParamInfo<MultichipModelTest::ParamType>& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::string(splitModeName(std::get<1>(info.param)));
                         });

/// digits on two npu-16x16 chips linked at `gbps`, pipelined.
Expected<MultichipModel> twoChipDigits(double gbps, double latencyNs) {
  registerBuiltinBackends();
  const std::string yaml = "chips: {count: 2, config: npu-16x16.yaml}\ninterconnect: {bandwidth_gb_per_s: " +
                           std::to_string(gbps) + ", latency_ns: " + std::to_string(latencyNs) + "}\n";
  EMBER_ASSIGN_OR_RETURN(SystemConfig system, parseSystemConfig(yaml, kConfigs + "/system.yaml"));
  EMBER_ASSIGN_OR_RETURN(Model model, load("digits"));
  MultichipOptions options;
  options.compile = quantizing(model.profile, true);
  return compileMultichip(*model.function, system, options);
}

TEST(MultichipCoSimulation, LinkBusyIsBytesOverBandwidthAndTransfersAddTheLatency) {
  Expected<MultichipModel> model = twoChipDigits(2.0, 700.0);
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_FALSE(model->transfers.empty());
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const auto two = microBatches("digits", *probe->function);
  std::vector<std::map<std::string, Tensor>> inputs = two;
  inputs.insert(inputs.end(), two.begin(), two.end());  // four micro-batches
  Expected<CoSimulatedRun> run = coSimulateMultichip(*model, inputs, model->system);
  ASSERT_TRUE(run) << run.error().message();
  int64_t bytesPerMicroBatch = 0;
  for (const CutTransfer& transfer : model->transfers) bytesPerMicroBatch += transfer.bytes;
  const LinkUse& link = run->figures.schedule.links.at(0);
  EXPECT_EQ(link.bytes[0], 4 * bytesPerMicroBatch);
  EXPECT_EQ(link.bytes[1], 0);
  EXPECT_EQ(link.transfers, 4 * model->transfers.size());
  // 2 GB/s: each byte holds the link 0.5 ns.
  EXPECT_NEAR(link.busyNs[0], 4 * double(bytesPerMicroBatch) / 2.0, 0.01);
  // The first image: stage 0, its cut tensors one after the other on the
  // link plus the latency once they are sent, then stage 1.
  const double stage0 = double(run->run.stageCycles[0].at(0)), stage1 = double(run->run.stageCycles[0].at(1));
  EXPECT_NEAR(run->figures.latencyNs, stage0 + double(bytesPerMicroBatch) / 2.0 + 700.0 + stage1, 0.01);
}

TEST(MultichipCoSimulation, SlowLinkMakesThePipelineLinkBound) {
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const auto inputs = microBatches("digits", *probe->function);
  for (double gbps : {32.0, 0.001}) {
    SCOPED_TRACE(std::to_string(gbps) + " GB/s");
    Expected<MultichipModel> model = twoChipDigits(gbps, 0.0);
    ASSERT_TRUE(model) << model.error().message();
    Expected<CoSimulatedRun> run = coSimulateMultichip(*model, inputs, model->system);
    ASSERT_TRUE(run) << run.error().message();
    const double link = run->figures.linkUtilization.at(0);
    const double busiestChip =
        *std::max_element(run->figures.chipUtilization.begin(), run->figures.chipUtilization.end());
    if (gbps > 1) {
      EXPECT_LT(link, busiestChip);
    } else {
      EXPECT_GT(link, busiestChip);
      EXPECT_GT(link, 0.5);
      // The steady state is the link's: one micro-batch per its busy time.
      EXPECT_NEAR(run->figures.steadyThroughputPerSecond * run->figures.schedule.links[0].busyNs[0],
                  double(inputs.size()) * 1e9, 1.0);
    }
  }
}

TEST(MultichipErrors, StageTooBigForItsChipNamesTheChip) {
  registerBuiltinBackends();
  // A copy of npu-16x16 with 1 MiB of DRAM: resnet18_64's weights alone need more.
  const fs::path dir = fs::path(testing::TempDir()) / "multichip_small_dram";
  fs::create_directories(dir);
  std::ifstream in(kConfigs + "/npu-16x16.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const size_t at = config.find("size_mib: 1024");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, std::string("size_mib: 1024").size(), "size_mib: 1");
  config.replace(config.find("name: npu-16x16"), std::string("name: npu-16x16").size(), "name: npu-tiny");
  std::ofstream(dir / "npu-tiny.yaml") << config;
  const std::string yaml = "chips:\n  - {name: big, config: " + kConfigs +
                           "/npu-16x16.yaml}\n  - {name: tiny, config: npu-tiny.yaml}\n"
                           "interconnect: {bandwidth_gb_per_s: 32}\n";
  Expected<SystemConfig> system = parseSystemConfig(yaml, (dir / "system.yaml").string());
  ASSERT_TRUE(system) << system.error().message();
  for (SplitMode split : {SplitMode::Pipeline, SplitMode::Data}) {
    Expected<Model> model = load("resnet18_64");
    ASSERT_TRUE(model);
    MultichipOptions options;
    options.split = split;
    options.compile = quantizing(model->profile, true);
    Expected<MultichipModel> compiled = compileMultichip(*model->function, *system, options);
    ASSERT_FALSE(compiled);
    EXPECT_NE(compiled.error().message().find("chip 'tiny' (npu-tiny) cannot hold stage 's1'"),
              std::string::npos)
        << compiled.error().message();
  }
}

TEST(MultichipErrors, DisconnectedLinksNameTheChipsAndLinks) {
  Expected<SystemConfig> system = parseSystemConfig(
      "chips: {count: 3, config: npu-16x16.yaml}\n"
      "interconnect: {topology: listed, links: [{between: [npu0, npu1]}]}\n",
      kConfigs + "/system.yaml");
  ASSERT_FALSE(system);
  EXPECT_NE(system.error().message().find("do not connect chip"), std::string::npos)
      << system.error().message();
  system = parseSystemConfig(
      "chips: {count: 2, config: npu-16x16.yaml}\n"
      "interconnect: {topology: listed, links: [{between: [npu0, npu5]}]}\n",
      kConfigs + "/system.yaml");
  ASSERT_FALSE(system);
  EXPECT_NE(system.error().message().find("link 'npu0-npu5'"), std::string::npos) << system.error().message();
}

}  // namespace
}  // namespace ember::multichip
