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
  // Each stage's host partitions (the input's Quantize, the output's Dequantize) follow its programs.
  const double stage0 = double(run->run.stageCycles[0].at(0)) + run->run.stageHostNs[0].at(0);
  const double stage1 = double(run->run.stageCycles[0].at(1)) + run->run.stageHostNs[0].at(1);
  EXPECT_GT(run->run.stageHostNs[0].at(0), 0);
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

// ---- a shared DRAM, and the host's time ----

/// digits (int8) on `chips` npu-16x16 chips, data parallel, with `extra`
/// system lines; the host not timed unless `extra` says otherwise.
Expected<MultichipModel> digitsDataParallel(size_t chips, const std::string& extra) {
  registerBuiltinBackends();
  std::string yaml = "chips: {count: " + std::to_string(chips) + ", config: npu-16x16.yaml}\n" + extra;
  if (extra.find("host:") == std::string::npos) yaml += "host: {timed: false}\n";
  EMBER_ASSIGN_OR_RETURN(SystemConfig system, parseSystemConfig(yaml, kConfigs + "/system.yaml"));
  EMBER_ASSIGN_OR_RETURN(Model model, load("digits"));
  MultichipOptions options;
  options.split = SplitMode::Data;
  options.compile = quantizing(model.profile, true);
  return compileMultichip(*model.function, system, options);
}

/// The DRAM bytes a stage's last run read and wrote (the npu's device counters).
uint64_t lastRunDramBytes(const CompiledStage& stage) {
  const DeviceReport* device = stage.model->function->deviceReport();
  EXPECT_TRUE(device);
  if (!device) return 0;
  uint64_t bytes = 0;
  for (const char* name : {"dram_read_bytes", "dram_write_bytes"})
    if (const ReportCounter* counter = device->counter(name)) bytes += std::get<uint64_t>(counter->value);
  return bytes;
}

TEST(MultichipSharedDram, DataParallelChipsShareItsBandwidth) {
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const auto inputs = microBatches("digits", *probe->function);  // one per chip
  Expected<MultichipModel> own = digitsDataParallel(2, "interconnect: {bandwidth_gb_per_s: 32}\n");
  ASSERT_TRUE(own) << own.error().message();
  Expected<CoSimulatedRun> alone = coSimulateMultichip(*own, inputs, own->system);
  ASSERT_TRUE(alone) << alone.error().message();
  // Each image's DRAM traffic, as the chip's own counters saw it.
  const uint64_t bytesPerImage = lastRunDramBytes(own->stages[0]);
  ASSERT_GT(bytesPerImage, 0u);
  ASSERT_EQ(lastRunDramBytes(own->stages[1]), bytesPerImage);

  // A shared DRAM far below the chips' 2 x 16 GB/s: both images' bytes pass
  // through it one after the other, so the batch takes at least 2 x bytes /
  // bandwidth, and the chips' own work adds at most the one-chip-per-image time.
  for (double gbps : {0.5, 0.1}) {
    SCOPED_TRACE(std::to_string(gbps) + " GB/s shared");
    Expected<MultichipModel> shared = digitsDataParallel(
        2,
        "interconnect: {bandwidth_gb_per_s: 32}\ndram: {kind: shared, size_mib: 1024, bandwidth_gb_per_s: " +
            std::to_string(gbps) + "}\n");
    ASSERT_TRUE(shared) << shared.error().message();
    Expected<CoSimulatedRun> contended = coSimulateMultichip(*shared, inputs, shared->system);
    ASSERT_TRUE(contended) << contended.error().message();
    const double dramNs = 2.0 * double(bytesPerImage) / gbps;  // GB/s = bytes per ns
    const MultichipFigures& figures = contended->figures;
    EXPECT_EQ(figures.sharedDramBytes, 2 * bytesPerImage);
    EXPECT_NEAR(figures.sharedDramBusyNs, dramNs, 2.0);  // each transaction's hold rounds down to 1 ps
    EXPECT_GE(figures.makespanNs, dramNs);
    EXPECT_LE(figures.makespanNs, dramNs + alone->figures.makespanNs);
    // Throughput drops by the factor the DRAM sets: (one image's own time) / (the DRAM's time per image).
    EXPECT_NEAR(figures.throughputPerSecond / alone->figures.throughputPerSecond,
                alone->figures.makespanNs / dramNs, 0.1 * alone->figures.makespanNs / dramNs + 0.02);
    EXPECT_GT(figures.chipSharedDramWaitCycles[0] + figures.chipSharedDramWaitCycles[1], 0u);
    // The outputs do not depend on the DRAM's timing.
    for (size_t i = 0; i < inputs.size(); ++i)
      for (const auto& [name, tensor] : alone->run.outputs[i])
        EXPECT_EQ(std::memcmp(tensor.data(), contended->run.outputs[i].at(name).data(), tensor.sizeInBytes()),
                  0);
  }
}

TEST(MultichipSharedDram, HugeBandwidthGivesTheFiguresOfDramPerChip) {
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const auto two = microBatches("digits", *probe->function);
  std::vector<std::map<std::string, Tensor>> inputs = two;
  inputs.insert(inputs.end(), two.begin(), two.end());  // four micro-batches, two per chip
  Expected<MultichipModel> own = digitsDataParallel(2, "interconnect: {bandwidth_gb_per_s: 32}\n");
  Expected<MultichipModel> shared = digitsDataParallel(2,
                                                       "interconnect: {bandwidth_gb_per_s: 32}\ndram: {kind: "
                                                       "shared, size_mib: 1024, bandwidth_gb_per_s: 1e6}\n");
  ASSERT_TRUE(own) << own.error().message();
  ASSERT_TRUE(shared) << shared.error().message();
  Expected<CoSimulatedRun> a = coSimulateMultichip(*own, inputs, own->system);
  Expected<CoSimulatedRun> b = coSimulateMultichip(*shared, inputs, shared->system);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->figures.makespanNs, a->figures.makespanNs);
  EXPECT_EQ(b->figures.latencyNs, a->figures.latencyNs);
  EXPECT_EQ(b->figures.schedule.chipBusyNs, a->figures.schedule.chipBusyNs);
  EXPECT_EQ(b->figures.chipDramStallCycles, a->figures.chipDramStallCycles);
  EXPECT_EQ(b->run.stageCycles, a->run.stageCycles);
}

TEST(MultichipSharedDram, OneChipOnADramOfItsOwnBandwidthIsCycleIdentical) {
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const auto inputs = microBatches("digits", *probe->function);
  Expected<MultichipModel> own = digitsDataParallel(1, "");
  Expected<MultichipModel> shared =
      digitsDataParallel(1, "dram: {kind: shared, size_mib: 1024, bandwidth_gb_per_s: 16}\n");
  ASSERT_TRUE(own && shared);
  Expected<CoSimulatedRun> a = coSimulateMultichip(*own, inputs, own->system);
  Expected<CoSimulatedRun> b = coSimulateMultichip(*shared, inputs, shared->system);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->run.stageCycles, a->run.stageCycles);
  EXPECT_EQ(b->figures.makespanNs, a->figures.makespanNs);
  EXPECT_EQ(b->figures.chipDramStallCycles, a->figures.chipDramStallCycles);
  EXPECT_EQ(b->figures.chipSharedDramWaitCycles, (std::vector<uint64_t>{0}));
  EXPECT_GT(b->figures.sharedDramUtilization, 0);
}

/// Multiply-accumulates of the convolutions and matrix products of `function`, from the graph's shapes.
double graphMacs(const Function& function) {
  double macs = 0;
  for (const Node* node : function.nodes()) {
    const std::string_view op = opName(node->kind());
    const Type& out = node->resultType();
    if (op == "Conv") {
      const Type& weights = node->input(1).type();  // [O, I/g, kh, kw]
      macs += double(out.numElements()) * double(weights.numElements() / weights.dims[0]);
    } else if (op == "Gemm" || op == "MatMul") {
      macs += double(out.numElements()) * double(node->input(0).type().dims.back());
    }
  }
  return macs;
}

TEST(MultichipHost, HostPartitionsTakeTheirModelledTime) {
  // Float digits: the npu runs no float node, so the whole model is one host
  // partition on the reference backend. With a host memory so fast that only
  // MACs count and a free host link, its time is MACs / (MAC/s).
  registerBuiltinBackends();
  Expected<Model> probe = load("digits");
  ASSERT_TRUE(probe);
  const double macs = graphMacs(*probe->function);
  ASSERT_GT(macs, 1e4);
  const auto inputs = microBatches("digits", *probe->function);
  std::map<double, CoSimulatedRun> runs;
  for (double macsPerSecond : {1e9, 2e9}) {
    const std::string yaml =
        "chips: {count: 1, config: npu-16x16.yaml}\nhost: {macs_per_s: " + std::to_string(macsPerSecond) +
        ", gbps: 1e12, link_gb_per_s: 1e12, link_latency_us: 0}\n";
    Expected<SystemConfig> system = parseSystemConfig(yaml, kConfigs + "/system.yaml");
    ASSERT_TRUE(system) << system.error().message();
    Expected<Model> model = load("digits");
    ASSERT_TRUE(model);
    MultichipOptions options;
    options.split = SplitMode::Data;
    options.compile.fallbackBackends = {"reference"};
    Expected<MultichipModel> compiled = compileMultichip(*model->function, *system, options);
    ASSERT_TRUE(compiled) << compiled.error().message();
    ASSERT_EQ(compiled->stages[0].hostPartitions.size(), 1u);
    Expected<CoSimulatedRun> run = coSimulateMultichip(*compiled, inputs, compiled->system);
    ASSERT_TRUE(run) << run.error().message();
    const double expectedNs = macs / macsPerSecond * 1e9;
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_NEAR(run->run.stageHostNs[i].at(0), expectedNs, 1e-3 * expectedNs);
    EXPECT_NEAR(run->figures.schedule.hostBusyNs[0], 2 * expectedNs, 2e-3 * expectedNs);
    // The event schedule of the same runs counts it the same way.
    const MultichipFigures scheduled = timeRun(*compiled, run->run, compiled->system);
    EXPECT_NEAR(scheduled.latencyNs, run->figures.latencyNs, 0.01);  // the co-simulation counts whole ps
    EXPECT_NEAR(scheduled.makespanNs, run->figures.makespanNs, 0.01);
    runs.emplace(macsPerSecond, run.take());
  }
  // Doubling the host's MAC/s halves the host part; latency and makespan lose exactly that.
  const CoSimulatedRun &slow = runs.at(1e9), &fast = runs.at(2e9);
  const double saved = slow.run.stageHostNs[0].at(0) - fast.run.stageHostNs[0].at(0);
  EXPECT_NEAR(saved, macs / 2e9 * 1e9, 1e-3 * macs);
  EXPECT_NEAR(slow.figures.latencyNs - fast.figures.latencyNs, saved, 1e-6 * saved);
  EXPECT_NEAR(slow.figures.makespanNs - fast.figures.makespanNs, 2 * saved, 1e-6 * saved);
}

}  // namespace
}  // namespace ember::multichip
