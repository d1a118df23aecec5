// Vendor ops (ember/VendorOp.h) end to end, with the toy example plugin
// (examples/oot-backend, built here from its sources with the SDK's
// ember_add_backend_plugin) and plugins the loader must refuse:
// - the toy's patterns turn Conv -> Relu and Conv -> Add(per-channel
//   constant) -> Relu into one toy.ConvBiasRelu, only for the toy, only when
//   every intermediate has a single use;
// - the reference backend runs a vendor op through its registered kernel;
// - ResNet-18 on the toy has one vendor op per Conv(+BN)+ReLU chain of the
//   ONNX graph (counted here from the ONNX nodes) and matches PyTorch's
//   output and the reference backend's;
// - unregistered and mistyped vendor ops, and bad registrations, are one-line
//   errors naming the node, the op or the plugin file.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "Conformance.h"
#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Runtime.h"
#include "ember/VendorOp.h"

#ifndef VENDOR_OP_PLUGIN_DIR
#error "VENDOR_OP_PLUGIN_DIR must name the directory of the test plugins"
#endif
#ifndef EMBER_MODEL_TESTDATA_DIR
#error "EMBER_MODEL_TESTDATA_DIR must name the directory written by scripts/gen_models.py"
#endif

namespace {

using namespace ember;
namespace fs = std::filesystem;

constexpr const char* kConvBiasRelu = "toy.ConvBiasRelu";

std::string pluginDir(const std::string& name) { return (fs::path(VENDOR_OP_PLUGIN_DIR) / name).string(); }

class VendorOpTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    registerBuiltinBackends();
    Error loaded = BackendRegistry::global().loadDirectory(pluginDir("toy"));
    ASSERT_FALSE(loaded) << loaded.message();
  }
};

Tensor randomTensor(Dims dims, uint32_t seed) {
  Tensor t(Type(ElemKind::F32, std::move(dims)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.type().numElements(); ++i) t.as<float>()[i] = uniform(rng);
  return t;
}

Attributes convAttrs() {
  return Attributes{{"strides", std::vector<int64_t>{1, 1}},
                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"dilations", std::vector<int64_t>{1, 1}},
                    {"group", int64_t(1)}};
}

/// What the small graphs put between the Conv and the Relu.
enum class Shape { ConvRelu, ConvAddConstantRelu, ConvAddInputRelu, ConvAlsoAnOutput };

/// x [1,6,6,3] -> Conv 3x3 to 4 channels (pad 1) -> ... -> Relu -> "y".
Function& buildConvGraph(Module& module, Shape shape) {
  Function& f = module.createFunction("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 6, 6, 3}));
  Node* w = f.createConstant("w", randomTensor({4, 3, 3, 3}, 1));
  Node* b = f.createConstant("b", randomTensor({4}, 2));
  Node* conv = *f.create(OpKind::Conv, "conv", {x, w, b}, convAttrs());
  NodeValue pre = conv->result();
  if (shape == Shape::ConvAddConstantRelu) {
    Node* c = f.createConstant("c", randomTensor({1, 1, 1, 4}, 3));
    pre = (*f.create(OpKind::Add, "add", {conv, c}))->result();
  } else if (shape == Shape::ConvAddInputRelu) {
    Node* skip = f.createPlaceholder("skip", Type(ElemKind::F32, {1, 6, 6, 4}));
    pre = (*f.create(OpKind::Add, "add", {conv, skip}))->result();
  }
  Node* relu = *f.create(OpKind::Relu, "relu", {pre});
  f.addOutput("y", relu->result());
  if (shape == Shape::ConvAlsoAnOutput) f.addOutput("conv_out", conv->result());
  return f;
}

std::map<std::string, Tensor> inputsFor(const Function& f) {
  std::map<std::string, Tensor> inputs;
  uint32_t seed = 10;
  for (const Node* in : f.inputs()) inputs.emplace(in->name(), randomTensor(in->resultType().dims, seed++));
  return inputs;
}

struct Ran {
  std::map<std::string, Tensor> outputs;
  std::map<std::string, uint64_t> vendorOps;  ///< the compile report's: registered op -> instructions
};

/// Instructions per vendor op in a compiled model's IR (every partition),
/// counted here to cross-check the compile report.
std::map<std::string, uint64_t> vendorOpsIn(const CompiledModel& model) {
  std::map<std::string, uint64_t> counts;
  auto count = [&](const IRFunction& ir) {
    for (const Instruction& inst : ir.instructions())
      if (inst.kind == OpKind::VendorOp) ++counts[vendorOpName(inst.attrs)];
  };
  if (model.partitionIRs.empty() && model.ir) count(*model.ir);
  for (const auto& [backend, ir] : model.partitionIRs) count(*ir);
  return counts;
}

Expected<Ran> compileAndRunOn(Function& f, const std::string& backendName,
                              const std::map<std::string, Tensor>& inputs) {
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  CompileOptions options;
  options.verifyEachPass = true;
  auto model = compileFunction(f, backend.take(), options);
  if (!model) return model.error();
  ExecutionContext context;
  for (const auto& [name, tensor] : inputs) context.setInput(name, tensor);
  EMBER_RETURN_IF_ERROR(model->function->execute(context));
  EXPECT_EQ(model->report.vendorOps, vendorOpsIn(*model));
  return Ran{std::move(context.outputs()), model->report.vendorOps};
}

/// max |got - expected| / max |expected|.
double relativeError(const Tensor& got, const Tensor& expected) {
  EXPECT_EQ(got.type(), expected.type());
  double maxExpected = 0, maxError = 0;
  for (int64_t i = 0; i < expected.type().numElements(); ++i) {
    maxExpected = std::max(maxExpected, std::fabs(expected.elementAsDouble(i)));
    const double error = std::fabs(got.elementAsDouble(i) - expected.elementAsDouble(i));
    maxError = std::max(maxError, std::isnan(error) ? INFINITY : error);
  }
  return maxExpected > 0 ? maxError / maxExpected : maxError;
}

/// Compiles the graph `shape` for `backend` and for the reference backend
/// (which has no vendor ops) and checks that the outputs agree.
Ran runAgainstReference(Shape shape, const std::string& backend) {
  Module mine, oracle;
  Function& f = buildConvGraph(mine, shape);
  const auto inputs = inputsFor(f);
  auto got = compileAndRunOn(f, backend, inputs);
  EXPECT_TRUE(got) << got.error().message();
  auto expected = compileAndRunOn(buildConvGraph(oracle, shape), "reference", inputs);
  EXPECT_TRUE(expected) << expected.error().message();
  if (!got || !expected) return {};
  EXPECT_TRUE(expected->vendorOps.empty());
  for (const auto& [name, tensor] : expected->outputs)
    EXPECT_LE(relativeError(got->outputs.at(name), tensor), 1e-5);
  return got.take();
}

TEST_F(VendorOpTest, ConvReluBecomesOneVendorOp) {
  Ran ran = runAgainstReference(Shape::ConvRelu, "toy");
  EXPECT_EQ(ran.vendorOps, (std::map<std::string, uint64_t>{{kConvBiasRelu, 1}}));
}

TEST_F(VendorOpTest, ConvAddOfPerChannelConstantReluFoldsTheConstantIntoTheBias) {
  Ran ran = runAgainstReference(Shape::ConvAddConstantRelu, "toy");
  EXPECT_EQ(ran.vendorOps, (std::map<std::string, uint64_t>{{kConvBiasRelu, 1}}));
}

TEST_F(VendorOpTest, AResidualAddIsNotABias) {
  EXPECT_TRUE(runAgainstReference(Shape::ConvAddInputRelu, "toy").vendorOps.empty());
}

TEST_F(VendorOpTest, AConvWithAnotherUseIsNotFused) {
  EXPECT_TRUE(runAgainstReference(Shape::ConvAlsoAnOutput, "toy").vendorOps.empty());
}

TEST_F(VendorOpTest, OnlyTheRegisteringBackendGetsItsVendorOps) {
  EXPECT_TRUE(runAgainstReference(Shape::ConvRelu, "reference").vendorOps.empty());
}

/// Runs only Add, on the reference backend's kernels: with the toy as its
/// fallback, the Conv and the Relu form a toy partition.
class AddsOnlyBackend final : public Backend {
 public:
  AddsOnlyBackend() : reference_(BackendRegistry::global().create("reference").take()) {}
  std::string name() const override { return "adds_only"; }
  bool supports(const NodeInfo& info) const override {
    return info.kind == OpKind::Add && reference_->supports(info);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return reference_->compile(ir);
  }

 private:
  std::unique_ptr<Backend> reference_;
};

TEST_F(VendorOpTest, AFallbackPluginsPartitionsGetItsVendorOps) {
  static const EmberBackendPlugin addsOnly{EMBER_PLUGIN_ABI_VERSION, "adds_only",
                                           "Add only (tests/vendor_op)",
                                           []() -> Backend* { return new AddsOnlyBackend(); }};
  Error added = BackendRegistry::global().add(&addsOnly);
  ASSERT_FALSE(added) << added.message();
  // x -> Conv -> Relu -> Add(c) -> y: the Add runs on adds_only, the rest on the toy.
  auto build = [](Module& module) -> Function& {
    Function& f = buildConvGraph(module, Shape::ConvRelu);
    NodeValue relu = f.outputs()[0].second;
    Node* c = f.createConstant("c", randomTensor({4}, 4));
    f.outputs()[0].second = (*f.create(OpKind::Add, "shift", {relu, c}))->result();
    return f;
  };
  Module mine, oracle;
  Function& f = build(mine);
  const auto inputs = inputsFor(f);
  auto backend = BackendRegistry::global().create("adds_only");
  ASSERT_TRUE(backend) << backend.error().message();
  CompileOptions options;
  options.fallbackBackends = {"toy"};
  auto model = compileFunction(f, backend.take(), options);
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ(model->report.partitions.size(), 2u);
  EXPECT_EQ(model->report.vendorOps, (std::map<std::string, uint64_t>{{kConvBiasRelu, 1}}));
  ExecutionContext context;
  for (const auto& [name, tensor] : inputs) context.setInput(name, tensor);
  Error ran = model->function->execute(context);
  ASSERT_FALSE(ran) << ran.message();
  auto expected = compileAndRunOn(build(oracle), "reference", inputs);
  ASSERT_TRUE(expected) << expected.error().message();
  EXPECT_LE(relativeError(*context.output("y"), expected->outputs.at("y")), 1e-5);
}

/// x -> toy.ConvBiasRelu(x, w, b) -> "y", built directly.
Function& buildVendorOpGraph(Module& module) {
  Function& f = module.createFunction("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 6, 6, 3}));
  Node* w = f.createConstant("w", randomTensor({4, 3, 3, 3}, 1));
  Node* b = f.createConstant("b", randomTensor({4}, 2));
  Attributes attrs = convAttrs();
  attrs.set(std::string(kVendorOpAttr), std::string(kConvBiasRelu));
  auto fused = f.create(OpKind::VendorOp, "fused", {x, w, b}, attrs);
  EXPECT_TRUE(fused) << fused.error().message();
  f.addOutput("y", (*fused)->result());
  return f;
}

TEST_F(VendorOpTest, ReferenceBackendRunsTheRegisteredKernelAndTheToyItsOwn) {
  Module plain, onReference, onToy;
  Function& expectedGraph = buildConvGraph(plain, Shape::ConvRelu);
  const auto inputs = inputsFor(expectedGraph);
  auto expected = compileAndRunOn(expectedGraph, "reference", inputs);
  ASSERT_TRUE(expected) << expected.error().message();
  auto reference = compileAndRunOn(buildVendorOpGraph(onReference), "reference", inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  EXPECT_EQ(reference->vendorOps, (std::map<std::string, uint64_t>{{kConvBiasRelu, 1}}));
  EXPECT_TRUE(reference->outputs.at("y").bitwiseEqual(expected->outputs.at("y")));
  auto toy = compileAndRunOn(buildVendorOpGraph(onToy), "toy", inputs);
  ASSERT_TRUE(toy) << toy.error().message();
  EXPECT_LE(relativeError(toy->outputs.at("y"), expected->outputs.at("y")), 1e-5);
}

/// Creates a VendorOp node "fused" of `op` on x f32|i32 [1,6,6,3].
Error createVendorOp(const std::string& op, ElemKind kind, Attributes attrs) {
  Module module;
  Function& f = module.createFunction("main");
  Node* x = f.createPlaceholder("x", Type(kind, {1, 6, 6, 3}));
  Node* w = f.createPlaceholder("w", Type(kind, {4, 3, 3, 3}));
  Node* b = f.createPlaceholder("b", Type(kind, {4}));
  attrs.set(std::string(kVendorOpAttr), op);
  auto node = f.create(OpKind::VendorOp, "fused", {x, w, b}, std::move(attrs));
  return node ? Error::success() : node.error();
}

void expectOneLine(const Error& e, const std::vector<std::string>& parts) {
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message().find('\n'), std::string::npos) << e.message();
  for (const std::string& part : parts) EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
}

TEST_F(VendorOpTest, AnUnregisteredVendorOpIsAnErrorNamingTheNodeAndTheOp) {
  expectOneLine(createVendorOp("acme.Missing", ElemKind::F32, convAttrs()),
                {"node 'fused' (VendorOp)", "vendor op 'acme.Missing' is not registered", kConvBiasRelu});
}

TEST_F(VendorOpTest, AMistypedVendorOpIsAnErrorNamingTheNodeAndTheOp) {
  expectOneLine(createVendorOp(kConvBiasRelu, ElemKind::I32, convAttrs()),
                {"node 'fused' (VendorOp)", "toy.ConvBiasRelu: operands must be f32"});
  const Attributes noGroup{{"strides", std::vector<int64_t>{1, 1}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"dilations", std::vector<int64_t>{1, 1}}};
  expectOneLine(createVendorOp(kConvBiasRelu, ElemKind::F32, noGroup),
                {"node 'fused' (VendorOp)", "vendor op 'toy.ConvBiasRelu'", "missing attribute 'group'"});
}

TEST_F(VendorOpTest, TheLoaderRefusesBadRegistrations) {
  struct Case {
    std::string dir, backend;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"duplicate_name",
       "dup",
       {"libduplicate_name.so: ", "backend 'dup' registers vendor op 'dup.Twice' twice"}},
      {"taken_name",
       "taken",
       {"libtaken_name.so: ", "vendor op 'toy.ConvBiasRelu' is already registered by backend 'toy'"}},
      {"unnamespaced", "plain", {"libunnamespaced.so: ", "vendor op name 'NoNamespace' must be namespaced"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dir);
    expectOneLine(BackendRegistry::global().loadDirectory(pluginDir(c.dir)), c.message);
    EXPECT_FALSE(BackendRegistry::global().create(c.backend)) << "a refused plugin must not be registered";
  }
  // Nothing of a refused plugin is registered, not even its valid ops.
  EXPECT_EQ(VendorOpRegistry::global().find("dup.Once"), nullptr);
  EXPECT_EQ(VendorOpRegistry::global().ownerOf(kConvBiasRelu), "toy");
}

TEST_F(VendorOpTest, ConformanceComparesTheToysKernelWithItsRegisteredReference) {
  auto factory = [](const std::string& name) -> conformance::BackendFactory {
    return [name] { return BackendRegistry::global().create(name); };
  };
  conformance::Options options;
  options.filter = std::string(kConvBiasRelu) + "/";
  auto report = conformance::runConformance(factory("toy"), factory("reference"), options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->passed, 4);  // the toy's four examples (ToyVendorOps.cpp)
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->unsupported, 0);
}

// ---- ResNet-18 ------------------------------------------------------------------

std::string modelPath(const std::string& suffix) {
  return (fs::path(EMBER_MODEL_TESTDATA_DIR) / ("resnet18" + suffix)).string();
}

/// Conv -> [BatchNormalization ->] Relu chains of an ONNX graph where each
/// intermediate value feeds only the next node (and is no graph output):
/// counted from the ONNX nodes alone, independently of Ember's importer and
/// passes.
size_t countConvBnReluChains(const onnx::GraphProto& graph) {
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers;
  for (const onnx::NodeProto& node : graph.node())
    for (const std::string& input : node.input()) consumers[input].push_back(&node);
  std::set<std::string> graphOutputs;
  for (const onnx::ValueInfoProto& output : graph.output()) graphOutputs.insert(output.name());
  auto onlyConsumer = [&](const std::string& value) -> const onnx::NodeProto* {
    auto it = consumers.find(value);
    if (graphOutputs.count(value) || it == consumers.end() || it->second.size() != 1) return nullptr;
    return it->second[0];
  };
  size_t chains = 0;
  for (const onnx::NodeProto& node : graph.node()) {
    if (node.op_type() != "Conv") continue;
    const onnx::NodeProto* next = onlyConsumer(node.output(0));
    if (next && next->op_type() == "BatchNormalization") next = onlyConsumer(next->output(0));
    chains += next && next->op_type() == "Relu";
  }
  return chains;
}

Expected<CompiledModel> compileResNet18(Module& module, const std::string& backendName) {
  auto function = importOnnxFile(modelPath(".onnx"), module);
  if (!function) return function.error();
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  return compileFunction(**function, backend.take());
}

Expected<Tensor> runOnce(CompiledModel& model, const Tensor& input) {
  ExecutionContext context;
  context.setInput(model.inputs.at(0).first, input);
  EMBER_RETURN_IF_ERROR(model.function->execute(context));
  const Tensor* out = context.output(model.outputs.at(0).first);
  if (!out) return makeError("no output '", model.outputs.at(0).first, "'");
  return *out;
}

TEST_F(VendorOpTest, ResNet18RunsEveryConvBnReluAsOneToyVendorOpAndMatches) {
  ASSERT_TRUE(fs::exists(modelPath(".onnx")))
      << modelPath(".onnx") << " is missing: build the model_data target (scripts/gen_models.py)";
  onnx::ModelProto proto;
  std::ifstream file(modelPath(".onnx"), std::ios::binary);
  ASSERT_TRUE(proto.ParseFromIstream(&file));
  const size_t chains = countConvBnReluChains(proto.graph());
  ASSERT_GT(chains, 0u);

  Module toyModule, referenceModule;
  auto toy = compileResNet18(toyModule, "toy");
  ASSERT_TRUE(toy) << toy.error().message();
  EXPECT_EQ(toy->report.partitions, std::vector<std::string>{toy->report.partitions.at(0)})
      << "the toy runs the whole model";
  EXPECT_EQ(toy->report.vendorOps, (std::map<std::string, uint64_t>{{kConvBiasRelu, chains}}));
  EXPECT_EQ(vendorOpsIn(*toy), toy->report.vendorOps);
  std::cout << "[ resnet18 ] " << chains << " Conv(+BN)+ReLU chains in the ONNX graph, "
            << toy->report.vendorOps[kConvBiasRelu]
            << " toy.ConvBiasRelu instructions in the compile report\n";

  auto input = readNpy(modelPath(".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto golden = readNpy(modelPath(".output.npy"));
  ASSERT_TRUE(golden) << golden.error().message();
  auto got = runOnce(*toy, *input);
  ASSERT_TRUE(got) << got.error().message();

  auto reference = compileResNet18(referenceModule, "reference");
  ASSERT_TRUE(reference) << reference.error().message();
  auto expected = runOnce(*reference, *input);
  ASSERT_TRUE(expected) << expected.error().message();
  // The fused kernel sums in another order than the reference's Conv; 1e-4
  // of the output's magnitude is the model tests' PyTorch tolerance.
  EXPECT_LE(relativeError(*got, *expected), 1e-4);
  EXPECT_LE(relativeError(*got, *golden), 1e-4);
}

}  // namespace
