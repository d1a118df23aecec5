// The run-side device model (docs/backend-guide.md, "Device model"): every
// partition runs through its own backend's Device, memoryLimitBytes() is
// enforced at load, partitions on one device hand tensors over on it, and
// partitions on different devices overlap through runAsync. The "board" test
// backend's device refuses any function it did not compile and counts what
// crosses it; expected outputs are computed here by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "BoardBackend.h"
#include "backends/BuiltinBackends.h"
#include "ember/Plugin.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;
using board::counters;
using board::defaultConfig;

const EmberBackendPlugin kBoardA{EMBER_PLUGIN_ABI_VERSION, "board_a", "test board A",
                                 []() -> Backend* { return board::createBoardBackend("board_a").release(); }};
const EmberBackendPlugin kBoardB{EMBER_PLUGIN_ABI_VERSION, "board_b", "test board B",
                                 []() -> Backend* { return board::createBoardBackend("board_b").release(); }};

class DeviceModel : public ::testing::Test {
 protected:
  void SetUp() override {
    registerBuiltinBackends();
    ASSERT_FALSE(BackendRegistry::global().add(&kBoardA));
    ASSERT_FALSE(BackendRegistry::global().add(&kBoardB));
    defaultConfig("board_a") = {};
    defaultConfig("board_b") = {};
    counters() = {};
  }
};

Tensor ramp(int64_t n) {
  Tensor t(Type(ElemKind::F32, {1, n}));
  for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = float(i % 7) - 3.0f;
  return t;
}

Node* binary(Function& f, OpKind kind, const std::string& name, Node* a, Node* b) {
  return f.create(kind, name, {a->result(), b->result()}).take();
}

/// x -> t = Add(x, x) -> r = Relu(t) -> y = Mul(r, t): with a board that runs
/// Add and Mul and a fallback for Relu, three partitions, and t is read by
/// the last one directly (a skip connection).
std::unique_ptr<Function> skipModel(int64_t n) {
  auto f = std::make_unique<Function>("skip");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, n}));
  Node* t = binary(*f, OpKind::Add, "t", x, x);
  Node* r = f->create(OpKind::Relu, "r", {t->result()}).take();
  f->addOutput("y", binary(*f, OpKind::Mul, "y", r, t)->result());
  return f;
}

float skipExpected(float x) { return std::max(2 * x, 0.0f) * (2 * x); }

Expected<CompiledModel> compileFor(Function& f, const std::string& target,
                                   std::vector<std::string> fallbacks) {
  auto backend = BackendRegistry::global().create(target);
  if (!backend) return backend.error();
  CompileOptions options;
  options.fallbackBackends = std::move(fallbacks);
  return compileFunction(f, backend.take(), options);
}

Expected<Tensor> loadAndRun(const CompiledModel& model, Device& device, const Tensor& x) {
  EMBER_RETURN_IF_ERROR(device.load("m", model.function));
  ExecutionContext context;
  context.setInput("x", x);
  EMBER_RETURN_IF_ERROR(device.run("m", context));
  const Tensor* y = context.output("y");
  if (!y) return makeError("no output 'y'");
  return *y;
}

TEST_F(DeviceModel, EveryPartitionRunsOnItsBackendsDevice) {
  defaultConfig("board_a").ops = {OpKind::Add, OpKind::Mul};
  auto f = skipModel(16);
  auto model = compileFor(*f, "board_a", {"reference"});
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(model->report.partitions.size(), 3u);

  // The board's device refuses anything but its own functions, so a run
  // that bypassed it (or gave it the chain of partitions) would fail.
  std::unique_ptr<Device> device = model->createDevice();
  Tensor x = ramp(16);
  auto y = loadAndRun(*model, *device, x);
  ASSERT_TRUE(y) << y.error().message();
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(y->as<float>()[i], skipExpected(x.as<float>()[i])) << i;
  EXPECT_EQ(counters().runs, 2u);
  EXPECT_EQ(counters().events,
            (std::vector<std::string>{"launch m/p0", "run m/p0", "launch m/p2", "run m/p2"}));

  // Executing the function directly goes through the devices too.
  ExecutionContext context;
  context.setInput("x", x);
  ASSERT_FALSE(model->function->execute(context));
  EXPECT_EQ(counters().runs, 4u);
  ASSERT_TRUE(lastRunStatistics(*model->function));
  EXPECT_EQ(lastRunStatistics(*model->function)->partitions, 3u);
}

TEST_F(DeviceModel, TwoPartitionsOnOneDeviceMoveNoTensorThroughTheHost) {
  // Two backends whose devices share the name "board0": one device, both
  // partitions loaded on it, the tensor between them left in board memory.
  for (const char* name : {"board_a", "board_b"}) {
    defaultConfig(name).deviceName = "board0";
    defaultConfig(name).keepsTensors = true;
  }
  defaultConfig("board_a").ops = {OpKind::Add};
  defaultConfig("board_b").ops = {OpKind::Mul};
  auto f = std::make_unique<Function>("two");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, 8}));
  Node* t = binary(*f, OpKind::Add, "t", x, x);
  f->addOutput("y", binary(*f, OpKind::Mul, "y", t, t)->result());
  auto model = compileFor(*f, "board_a", {"board_b"});
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(model->report.partitions, (std::vector<std::string>{"board_a:2 nodes", "board_b:2 nodes"}));

  std::unique_ptr<Device> device = model->createDevice();
  Tensor in = ramp(8);
  auto y = loadAndRun(*model, *device, in);
  ASSERT_TRUE(y) << y.error().message();
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(y->as<float>()[i], 4 * in.as<float>()[i] * in.as<float>()[i]) << i;
  const RunStatistics* stats = lastRunStatistics(*model->function);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->partitions, 2u);
  EXPECT_EQ(stats->hostTransfers, 0u);
  EXPECT_EQ(stats->hostTransferBytes, 0u);
  EXPECT_EQ(stats->deviceHandoffs, 1u);
  EXPECT_EQ(counters().deviceOutputs, 1u);
  EXPECT_EQ(counters().deviceInputs, 1u);
  EXPECT_EQ(counters().toHost, 0u);
  EXPECT_EQ(counters().hostInputs, 1u);  // the model input x
}

TEST_F(DeviceModel, ADeviceThatDoesNotKeepTensorsCountsTheHostTransfer) {
  defaultConfig("board_a").ops = {OpKind::Add};
  defaultConfig("board_b").ops = {OpKind::Mul};
  for (const char* name : {"board_a", "board_b"}) defaultConfig(name).deviceName = "board0";
  auto f = std::make_unique<Function>("two");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, 8}));
  Node* t = binary(*f, OpKind::Add, "t", x, x);
  f->addOutput("y", binary(*f, OpKind::Mul, "y", t, t)->result());
  auto model = compileFor(*f, "board_a", {"board_b"});
  ASSERT_TRUE(model) << model.error().message();
  std::unique_ptr<Device> device = model->createDevice();
  auto y = loadAndRun(*model, *device, ramp(8));
  ASSERT_TRUE(y) << y.error().message();
  const RunStatistics* stats = lastRunStatistics(*model->function);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->hostTransfers, 1u);
  EXPECT_EQ(stats->hostTransferBytes, 8u * sizeof(float));
  EXPECT_EQ(stats->deviceHandoffs, 0u);
}

TEST_F(DeviceModel, ASkipConnectionStaysOnTheDeviceWhileTheHostReadsACopy) {
  defaultConfig("board_a").ops = {OpKind::Add, OpKind::Mul};
  defaultConfig("board_a").keepsTensors = true;
  auto f = skipModel(16);
  auto model = compileFor(*f, "board_a", {"reference"});
  ASSERT_TRUE(model) << model.error().message();
  std::unique_ptr<Device> device = model->createDevice();
  Tensor x = ramp(16);
  auto y = loadAndRun(*model, *device, x);
  ASSERT_TRUE(y) << y.error().message();
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(y->as<float>()[i], skipExpected(x.as<float>()[i])) << i;
  // t: kept on the board for partition 2, copied once for the host's Relu;
  // r: from the host partition to the board.
  const RunStatistics* stats = lastRunStatistics(*model->function);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->deviceHandoffs, 1u);
  EXPECT_EQ(stats->hostTransfers, 2u);
  EXPECT_EQ(counters().toHost, 1u);
}

TEST_F(DeviceModel, DeviceMemoryIsEnforcedAtLoad) {
  // Each board partition fits 1 MiB alone (so it compiles); both loaded on
  // the one board do not.
  defaultConfig("board_a").ops = {OpKind::Add, OpKind::Mul};
  defaultConfig("board_a").memoryBytes = 1 << 20;
  auto f = skipModel(80000);
  auto model = compileFor(*f, "board_a", {"reference"});
  ASSERT_TRUE(model) << model.error().message();
  std::unique_ptr<Device> device = model->createDevice();
  Error refused = device->load("m", model->function);
  ASSERT_TRUE(refused);
  const std::string message = refused.message();
  EXPECT_NE(message.find("device of backend 'board_a': cannot load partition 2 (board_a, "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(" already loaded, above the device memory of 1048576 bytes"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  std::cout << "refused: " << message << "\n";
  EXPECT_EQ(counters().runs, 0u);
  // Nothing stays loaded after a refused load, and execute() refuses the same way.
  ExecutionContext context;
  context.setInput("x", ramp(80000));
  Error executed = model->function->execute(context);
  ASSERT_TRUE(executed);
  EXPECT_NE(executed.message().find("above the device memory of 1048576 bytes"), std::string::npos);
}

TEST_F(DeviceModel, APluginDeviceWithOneMebibyteRefusesTheModel) {
  ASSERT_FALSE(BackendRegistry::global().loadLibrary(BOARD_PLUGIN));
  auto backend = BackendRegistry::global().create("board");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_FALSE((*backend)->setOption("ops", "Add,Mul"));
  ASSERT_FALSE((*backend)->setOption("memory", "1048576"));
  auto f = skipModel(80000);
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  auto model = compileFunction(*f, backend.take(), options);
  ASSERT_TRUE(model) << model.error().message();
  Error refused = model->createDevice()->load("m", model->function);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("device of backend 'board': cannot load partition 2"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("above the device memory of 1048576 bytes"), std::string::npos);

  // Under the limit the plugin's device runs its partitions.
  auto backend2 = BackendRegistry::global().create("board");
  ASSERT_FALSE((*backend2)->setOption("ops", "Add,Mul"));
  ASSERT_FALSE((*backend2)->setOption("memory", "1048576"));
  auto small = skipModel(1000);
  auto fits = compileFunction(*small, backend2.take(), options);
  ASSERT_TRUE(fits) << fits.error().message();
  Tensor x = ramp(1000);
  auto y = loadAndRun(*fits, *fits->createDevice(), x);
  ASSERT_TRUE(y) << y.error().message();
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(y->as<float>()[i], skipExpected(x.as<float>()[i])) << i;
}

/// x -> Add(x, x) -> y1 and x -> Relu(x) -> y2: two independent partitions.
std::unique_ptr<Function> twoBranches() {
  auto f = std::make_unique<Function>("branches");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, 8}));
  f->addOutput("y1", binary(*f, OpKind::Add, "a", x, x)->result());
  f->addOutput("y2", f->create(OpKind::Relu, "r", {x->result()}).take()->result());
  return f;
}

TEST_F(DeviceModel, AnAsyncDeviceOverlapsAnIndependentPartition) {
  // board_a's runAsync returns at once and runs in wait(): the runtime starts
  // the independent partition on board_b before it waits for board_a.
  defaultConfig("board_a").ops = {OpKind::Add};
  defaultConfig("board_a").deferred = true;
  defaultConfig("board_b").ops = {OpKind::Relu};
  auto f = twoBranches();
  auto model = compileFor(*f, "board_a", {"board_b"});
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(model->report.partitions.size(), 2u);
  std::unique_ptr<Device> device = model->createDevice();
  ASSERT_FALSE(device->load("m", model->function));
  ExecutionContext context;
  Tensor x = ramp(8);
  context.setInput("x", x);
  ASSERT_FALSE(device->run("m", context));
  EXPECT_EQ(counters().events,
            (std::vector<std::string>{"launch m/p0", "launch m/p1", "run m/p1", "run m/p0"}));
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(context.output("y1")->as<float>()[i], 2 * x.as<float>()[i]);
    EXPECT_EQ(context.output("y2")->as<float>()[i], std::max(x.as<float>()[i], 0.0f));
  }
}

TEST_F(DeviceModel, AnAsyncDeviceIsWaitedForBeforeItsResultIsRead) {
  defaultConfig("board_a").ops = {OpKind::Add};
  defaultConfig("board_a").deferred = true;
  defaultConfig("board_b").ops = {OpKind::Relu};
  auto f = std::make_unique<Function>("chain");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, 8}));
  Node* a = binary(*f, OpKind::Add, "a", x, x);
  f->addOutput("y", f->create(OpKind::Relu, "r", {a->result()}).take()->result());
  auto model = compileFor(*f, "board_a", {"board_b"});
  ASSERT_TRUE(model) << model.error().message();
  std::unique_ptr<Device> device = model->createDevice();
  Tensor x8 = ramp(8);
  auto y = loadAndRun(*model, *device, x8);
  ASSERT_TRUE(y) << y.error().message();
  EXPECT_EQ(counters().events,
            (std::vector<std::string>{"launch m/p0", "run m/p0", "launch m/p1", "run m/p1"}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(y->as<float>()[i], std::max(2 * x8.as<float>()[i], 0.0f));
}

TEST_F(DeviceModel, TheDefaultAsyncRunIsSynchronousAndCarriesTheError) {
  Device device;
  ExecutionContext context;
  std::unique_ptr<RunHandle> handle = device.runAsync("missing", context);
  ASSERT_TRUE(handle);
  Error e = handle->wait();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("'missing' is not loaded"), std::string::npos);
  EXPECT_FALSE(device.keepsTensors());
  EXPECT_EQ(device.name(), "");
}

TEST_F(DeviceModel, TheNpuDeviceHasItsConfigsDramAsMemory) {
  auto npu = BackendRegistry::global().create("npu");
  ASSERT_TRUE(npu) << npu.error().message();
  EXPECT_EQ((*npu)->createDevice()->memoryLimitBytes(), uint64_t(1) << 30);  // the default config's 1 GiB
  // The shipped config with dram.size_mib 2.
  std::ifstream in(std::string(NPU_CONFIG_DIR) + "/npu-16x16.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const size_t at = yaml.find("size_mib: 1024");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, 14, "size_mib: 2");
  const std::string path = (std::filesystem::temp_directory_path() / "ember_device_test_npu.yaml").string();
  std::ofstream(path) << yaml;
  ASSERT_FALSE((*npu)->setOption("config", path));
  EXPECT_EQ((*npu)->createDevice()->memoryLimitBytes(), uint64_t(2) << 20);
  std::filesystem::remove(path);
}

}  // namespace
