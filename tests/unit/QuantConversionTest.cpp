// Calibration profiles (YAML, errors) and the conversion of a small graph to
// the int8 primitives: what gets quantized, what stays float and why, and
// that the int8 model tracks the f32 one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/BuiltinBackends.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

Tensor randomTensor(Type type, uint32_t seed, float lo = -1, float hi = 1) {
  Tensor t(std::move(type));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.type().numElements(); ++i) t.as<float>()[i] = d(rng);
  return t;
}

/// x -> Conv -> Relu -> MaxPool -> (+ Conv branch) Add -> Sigmoid -> ReduceMean(1,2) -> Softmax.
void buildModel(Function& f) {
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 6, 6, 3}));
  Attributes conv{{"strides", std::vector<int64_t>{1, 1}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"group", int64_t(1)}};
  Node* w1 = f.createConstant("w1", randomTensor(Type(ElemKind::F32, {8, 3, 3, 3}), 1, -0.5f, 0.5f));
  Node* b1 = f.createConstant("b1", randomTensor(Type(ElemKind::F32, {8}), 2));
  Node* c1 = *f.create(OpKind::Conv, "conv1", {x->result(), w1->result(), b1->result()}, conv);
  Node* r1 = *f.create(OpKind::Relu, "relu1", {c1->result()});
  Node* mp = *f.create(OpKind::MaxPool, "pool", {r1->result()},
                       Attributes{{"kernel", std::vector<int64_t>{2, 2}},
                                  {"strides", std::vector<int64_t>{2, 2}},
                                  {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                                  {"dilations", std::vector<int64_t>{1, 1}},
                                  {"ceil_mode", int64_t(0)}});
  Node* w2 = f.createConstant("w2", randomTensor(Type(ElemKind::F32, {8, 3, 3, 8}), 3, -0.3f, 0.3f));
  Node* b2 = f.createConstant("b2", randomTensor(Type(ElemKind::F32, {8}), 4));
  Node* c2 = *f.create(OpKind::Conv, "conv2", {mp->result(), w2->result(), b2->result()}, conv);
  Node* add = *f.create(OpKind::Add, "add", {c2->result(), mp->result()});
  Node* sig = *f.create(OpKind::Sigmoid, "sigmoid", {add->result()});
  Node* mean = *f.create(OpKind::ReduceMean, "mean", {sig->result()},
                         Attributes{{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(0)}});
  Node* soft = *f.create(OpKind::Softmax, "softmax", {mean->result()}, Attributes{{"axis", int64_t(1)}});
  f.addOutput("probs", soft->result());
  f.addOutput("features", mean->result());
}

std::unique_ptr<Backend> reference() {
  static const bool registered = (registerBuiltinBackends(), true);
  (void)registered;
  auto b = BackendRegistry::global().create("reference");
  EXPECT_TRUE(bool(b));
  return b.take();
}

std::vector<CalibrationSample> samples(int count) {
  std::vector<CalibrationSample> s(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    s[size_t(i)]["x"] = randomTensor(Type(ElemKind::F32, {1, 6, 6, 3}), 100 + i);
  return s;
}

Expected<QuantizationProfile> calibrated(CalibrationOptions options = {}) {
  Function f("main");
  buildModel(f);
  return calibrate(f, reference(), samples(16), options);
}

std::map<std::string, Tensor> runModel(Function& f, const Tensor& input, const CompileOptions& options = {}) {
  auto model = compileFunction(f, reference(), options);
  EXPECT_TRUE(bool(model)) << (model ? "" : model.error().message());
  ExecutionContext ctx;
  ctx.setInput("x", input);
  auto device = model->backend->createDevice();
  EXPECT_FALSE(device->load("m", model->function));
  Error e = device->run("m", ctx);
  EXPECT_FALSE(e) << e.message();
  return ctx.outputs();
}

double sqnr(const Tensor& ref, const Tensor& test) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < ref.type().numElements(); ++i) {
    double r = ref.as<float>()[i], t = test.as<float>()[i];
    signal += r * r;
    noise += (r - t) * (r - t);
  }
  return 10 * std::log10(signal / std::max(noise, 1e-30));
}

TEST(QuantProfileTest, HashIsStableAndSensitive) {
  Function a("main"), b("main");
  buildModel(a);
  buildModel(b);
  EXPECT_EQ(graphHash(a), graphHash(b));
  EXPECT_EQ(graphHash(a).size(), 16u);
  b.addOutput("extra", b.inputs()[0]->result());
  EXPECT_NE(graphHash(a), graphHash(b));
}

TEST(QuantProfileTest, ChooseQuantization) {
  TensorQuantization q = chooseQuantization(-1.0f, 3.0f, QuantSchema::Asymmetric);
  EXPECT_FLOAT_EQ(q.scale, 4.0f / 255);
  EXPECT_EQ(q.offset, -128 + 64);                               // round(-128 + 1 / (4/255)) = -64
  q = chooseQuantization(0.5f, 3.0f, QuantSchema::Asymmetric);  // widened to include 0
  EXPECT_EQ(q.offset, -128);
  q = chooseQuantization(-1.0f, 3.0f, QuantSchema::Symmetric);
  EXPECT_FLOAT_EQ(q.scale, 3.0f / 127);
  EXPECT_EQ(q.offset, 0);
  q = chooseQuantization(-1.0f, 3.0f, QuantSchema::SymmetricPower2);
  EXPECT_FLOAT_EQ(q.scale, 1.0f / 32);  // 3/127 = 0.0236 -> 2^-5
  q = chooseQuantization(0.0f, 0.0f, QuantSchema::Asymmetric);
  EXPECT_FLOAT_EQ(q.scale, 1.0f);
  // A range whose step is no normal float (a denormal such as 1e-42) is empty:
  // never a scale of 0 or a denormal, which Quantize and every rescale refuse.
  for (QuantSchema schema : {QuantSchema::Asymmetric, QuantSchema::Symmetric, QuantSchema::SymmetricPower2}) {
    q = chooseQuantization(0.0f, 1e-42f, schema);
    EXPECT_FLOAT_EQ(q.scale, 1.0f);
    q = chooseQuantization(-1e-36f, 0.0f, schema);
    EXPECT_FLOAT_EQ(q.scale, 1.0f);
    q = chooseQuantization(0.0f, 1e-30f, schema);  // small but normal steps stay exact
    EXPECT_GT(q.scale, 0.0f);
    EXPECT_LT(q.scale, 1e-31f);
  }
}

TEST(QuantProfileTest, YamlRoundTrip) {
  for (CalibrationMethod method :
       {CalibrationMethod::MinMax, CalibrationMethod::Percentile, CalibrationMethod::KL}) {
    CalibrationOptions options;
    options.method = method;
    options.perChannel = true;
    auto profile = calibrated(options);
    ASSERT_TRUE(bool(profile)) << profile.error().message();
    EXPECT_TRUE(profile->tensors.count("x"));
    EXPECT_TRUE(profile->tensors.count("conv1"));
    EXPECT_TRUE(profile->tensors.count("softmax"));
    auto parsed = QuantizationProfile::parse(profile->toYaml(), "p.yaml");
    ASSERT_TRUE(bool(parsed)) << parsed.error().message();
    EXPECT_EQ(parsed->graphHash, profile->graphHash);
    EXPECT_EQ(parsed->calibration, method);
    EXPECT_TRUE(parsed->perChannel);
    ASSERT_EQ(parsed->tensors.size(), profile->tensors.size());
    for (const auto& [name, t] : profile->tensors) {
      EXPECT_EQ(parsed->tensors[name].scale, t.scale) << name;
      EXPECT_EQ(parsed->tensors[name].offset, t.offset) << name;
    }
  }
}

TEST(QuantProfileTest, BadProfilesNameTheKey) {
  auto expectError = [](const std::string& yaml, const std::string& needle) {
    auto p = QuantizationProfile::parse(yaml, "bad.yaml");
    ASSERT_FALSE(bool(p)) << yaml;
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().message();
    EXPECT_NE(p.error().message().find("bad.yaml"), std::string::npos) << p.error().message();
  };
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: i8q, scale: 0.1, offset: 0}\n",
              "malformed YAML");
  expectError("[1, 2]", "must be a map");
  expectError("version: 1\ntensors: {}\n", "graph_hash");
  expectError("version: 2\ngraph_hash: ab\ntensors: {}\n", "version");
  expectError("version: 1\ngraph_hash: ab\nschema: weird\ntensors: {}\n", "schema");
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: i8q, scale: -1, offset: 0}}\n", "tensor 'x'");
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: i8q, scale: 0.1, offset: 300}}\n", "offset");
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: f32, scale: 0.1, offset: 0}}\n", "kind");
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: i8q, offset: 0}}\n", "scale");
  expectError("version: 1\ngraph_hash: ab\ntensors: {x: {kind: i8q, scale: abc, offset: 0}}\n", "scale");
  expectError("version: 1\ngraph_hash: ab\ntypo: 1\ntensors: {}\n", "typo");
  // Found by fuzz_quant_profile: a name that is not UTF-8 was read as it is
  // but written as U+FFFD, so the profile changed on its next write.
  expectError("version: 1\ngraph_hash: ab\ntensors:\n  c\xb6: {kind: i8q, scale: 0.1, offset: 0}\n",
              "bad.yaml:4: not valid UTF-8");
  // Found by fuzz_quant_profile: yaml-cpp read "NUL N" as the escape \N and
  // gave a lone 0x85 byte, which the next write kept.
  expectError(std::string("version: 1\ngraph_hash: ab\0Nc\ntensors: {}\n", 41),
              "bad.yaml:2: character U+0000");
  expectError(
      "version: 1\ngraph_hash: ab\ntensors:\n  x: {kind: i8q, scale: 0.1, offset: 0}\n"
      "  x: {kind: i8q, scale: 0.2, offset: 0}\n",
      "tensor 'x' is listed twice");
  EXPECT_FALSE(bool(QuantizationProfile::load("/nonexistent/profile.yaml")));
}

TEST(QuantConversionTest, HashMismatchAndMissingTensor) {
  auto profile = calibrated();
  ASSERT_TRUE(bool(profile));
  Function f("main");
  buildModel(f);
  QuantizationProfile wrong = *profile;
  wrong.graphHash = "0000000000000000";
  Error e = quantizeFunction(f, wrong, *reference());
  ASSERT_TRUE(bool(e));
  EXPECT_NE(e.message().find("graph_hash"), std::string::npos) << e.message();
  QuantizationProfile missing = *profile;
  missing.tensors.erase("conv2");
  e = quantizeFunction(f, missing, *reference());
  ASSERT_TRUE(bool(e));
  EXPECT_NE(e.message().find("'conv2'"), std::string::npos) << e.message();
}

TEST(QuantConversionTest, ConvertsAndTracksFloat) {
  for (QuantSchema schema : {QuantSchema::Asymmetric, QuantSchema::Symmetric, QuantSchema::SymmetricPower2}) {
    CalibrationOptions options;
    options.schema = schema;
    options.perChannel = true;
    auto profile = calibrated(options);
    ASSERT_TRUE(bool(profile)) << profile.error().message();
    Function f("main"), q("main");
    buildModel(f);
    buildModel(q);
    QuantizationReport report;
    Error e = quantizeFunction(q, *profile, *reference(), &report);
    ASSERT_FALSE(e) << e.message();
    std::map<OpKind, int> kinds;
    for (const Node* n : q.nodes()) kinds[n->kind()]++;
    EXPECT_EQ(kinds[OpKind::QuantizedConv], 2);
    EXPECT_EQ(kinds[OpKind::Relu], 0);  // fused into conv1
    EXPECT_EQ(kinds[OpKind::QuantizedAdd], 1);
    EXPECT_EQ(kinds[OpKind::Lookup], 1);
    EXPECT_EQ(kinds[OpKind::QuantizedAvgPool], 1);
    EXPECT_EQ(kinds[OpKind::Softmax], 0);  // integer-only (docs/quantization.md 2.11)
    EXPECT_EQ(kinds[OpKind::QuantizedSoftmax], 1);
    EXPECT_TRUE(report.floatNodes.empty()) << report.floatNodes[0].name;
    for (const auto& [name, v] : q.outputs()) EXPECT_EQ(v.type().kind, ElemKind::F32) << name;

    Tensor input = randomTensor(Type(ElemKind::F32, {1, 6, 6, 3}), 999);
    auto ref = runModel(f, input);
    auto got = runModel(q, input);
    EXPECT_GT(sqnr(ref["features"], got["features"]), 25.0) << schemaName(schema);
    EXPECT_GT(sqnr(ref["probs"], got["probs"]), 25.0) << schemaName(schema);
  }
}

/// The attributes each Tabulable op with attributes is tested with.
Attributes tabulableAttrs(OpKind kind) {
  switch (kind) {
    case OpKind::Clip:
      return {{"min", 0.2}, {"max", 0.8}};
    case OpKind::LeakyRelu:
    case OpKind::Elu:
      return {{"alpha", 0.1}};
    case OpKind::Selu:
      return {{"alpha", 1.6}, {"gamma", 1.05}};
    case OpKind::HardSigmoid:
      return {{"alpha", 0.2}, {"beta", 0.5}};
    case OpKind::Gelu:
      return {{"approximate", std::string("tanh")}};
    default:
      EXPECT_TRUE(opInfo(kind).attributes.empty()) << opInfo(kind).name << ": give it attributes here";
      return {};
  }
}

// Ops.def's Tabulable ops are what the quantizer turns into a 256-entry
// Lookup (a binary one with a one-element constant operand): each converts
// on the reference backend, and the table tracks the float function.
TEST(QuantConversionTest, EveryTabulableOpBecomesALookupTable) {
  int tested = 0;
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpKind kind = OpKind(k);
    const OpInfo& info = opInfo(kind);
    if (!info.has(Tabulable)) continue;
    SCOPED_TRACE(info.name);
    auto build = [&](Function& f) {
      Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {64}));
      std::vector<NodeValue> inputs = {x->result()};
      if (info.operandNames.size() == 2) {
        Tensor half(Type(ElemKind::F32, {}));
        half.as<float>()[0] = 0.5f;
        inputs.push_back(f.createConstant("half", std::move(half))->result());
      }
      Expected<Node*> y = f.create(kind, "y", inputs, tabulableAttrs(kind));
      ASSERT_TRUE(bool(y)) << y.error().message();
      f.addOutput("y", (*y)->result());
    };
    // Positive inputs keep Log, Sqrt, Reciprocal and Pow(x, 0.5) finite.
    std::vector<CalibrationSample> calibration(4);
    for (size_t i = 0; i < calibration.size(); ++i)
      calibration[i]["x"] = randomTensor(Type(ElemKind::F32, {64}), 300 + uint32_t(i), 0.1f, 1.0f);
    Function calibrationGraph("main"), f("main"), q("main");
    build(calibrationGraph);
    build(f);
    build(q);
    auto profile = calibrate(calibrationGraph, reference(), calibration, CalibrationOptions{});
    ASSERT_TRUE(bool(profile)) << profile.error().message();
    QuantizationReport report;
    Error e = quantizeFunction(q, *profile, *reference(), &report);
    ASSERT_FALSE(e) << e.message();
    EXPECT_TRUE(report.floatNodes.empty()) << report.floatNodes[0].reason;
    std::map<OpKind, int> kinds;
    for (const Node* n : q.nodes()) kinds[n->kind()]++;
    EXPECT_EQ(kinds[kind], 0);
    // Gelu has an integer-only form of its own (i-GELU), tried first.
    EXPECT_EQ(kinds[OpKind::Lookup] + kinds[OpKind::QuantizedGelu], 1);

    Tensor input = randomTensor(Type(ElemKind::F32, {64}), 7, 0.1f, 1.0f);
    auto ref = runModel(f, input);
    auto got = runModel(q, input);
    const Tensor &r = ref["y"], &t = got["y"];
    float lo = r.as<float>()[0], hi = lo;
    double error = 0;
    for (int64_t i = 0; i < 64; ++i) {
      lo = std::min(lo, r.as<float>()[i]);
      hi = std::max(hi, r.as<float>()[i]);
      error += std::fabs(double(r.as<float>()[i]) - double(t.as<float>()[i]));
    }
    EXPECT_LE(error / 64, 0.05 * std::max(double(hi - lo), 0.1));
    ++tested;
  }
  EXPECT_GE(tested, 30);
}

/// A backend that has no int8 convolution: convs stay float, with the reason.
class NoQuantConvBackend : public Backend {
 public:
  NoQuantConvBackend() : inner_(reference()) {}
  std::string name() const override { return "noqconv"; }
  bool supports(const NodeInfo& info) const override {
    return info.kind != OpKind::QuantizedConv && inner_->supports(info);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return inner_->compile(ir);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

TEST(QuantConversionTest, UnsupportedNodesStayFloatThroughThePipeline) {
  auto profile = calibrated();
  ASSERT_TRUE(bool(profile));
  Function f("main"), q("main");
  buildModel(f);
  buildModel(q);
  auto report = std::make_shared<QuantizationReport>();
  CompileOptions options;
  options.optimizeGraph = false;  // the profile is of the unoptimized graph here
  options.beforeLowering = [&](Function& fn, const Backend& b) {
    return quantizeFunction(fn, *profile, b, report.get());
  };
  auto model = compileFunction(q, std::make_unique<NoQuantConvBackend>(), options);
  ASSERT_TRUE(bool(model)) << model.error().message();
  int convs = 0;
  for (const auto& r : report->floatNodes) {
    if (r.op != "Conv") continue;
    ++convs;
    EXPECT_NE(r.reason.find("does not support QuantizedConv"), std::string::npos) << r.reason;
  }
  EXPECT_EQ(convs, 2);
  EXPECT_GT(report->quantizedNodes, 0u);
}

}  // namespace
}  // namespace ember
