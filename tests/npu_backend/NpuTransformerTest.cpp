// Transformer layers on the npu backend against the reference backend, bit for
// bit: QuantizedMatMul with an activation right operand (batched over heads,
// sizes that do not divide the array, every zero-point case), QuantizedGelu and
// other i8 -> i8 elementwise ops as a lut, and the head split and merge
// (Reshape/Transpose) of attention, Softmax (with masks) and LayerNorm on the
// vector unit's row normalisations, all without a fallback node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <tuple>

#include "LowerTransformer.h"
#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

using GraphBuilder = std::function<Error(Function&)>;

std::string configPath(const std::string& name) { return std::string(EMBER_NPU_CONFIG_DIR) + "/" + name; }

Tensor randomI8(const Type& type, uint32_t seed) {
  Tensor t(type);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  for (int64_t i = 0; i < type.numElements(); ++i) t.as<int8_t>()[i] = int8_t(dist(rng));
  return t;
}

struct Run {
  std::map<std::string, Tensor> outputs;
  std::vector<FallbackNode> fallbackNodes;
  uint64_t cycles = 0;
};

Expected<Run> compileAndRun(const GraphBuilder& build, const std::string& backendName,
                            const std::string& config) {
  registerBuiltinBackends();
  Module module;
  Function& f = module.createFunction("main");
  EMBER_RETURN_IF_ERROR(build(f));
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  if (!config.empty()) EMBER_RETURN_IF_ERROR((*backend)->setOption("config", configPath(config)));
  CompileOptions options;
  if (backendName != "reference") options.fallbackBackends = {"reference"};
  EMBER_ASSIGN_OR_RETURN(CompiledModel model, compileFunction(f, backend.take(), options));
  ExecutionContext context;
  uint32_t seed = 3;
  for (const auto& [name, type] : model.inputs) context.setInput(name, randomI8(type, seed++));
  EMBER_RETURN_IF_ERROR(model.function->execute(context));
  Run run;
  run.outputs = context.outputs();
  run.fallbackNodes = model.report.fallbackNodes;
  if (const DeviceReport* device = model.function->deviceReport()) run.cycles = device->cycles;
  return run;
}

/// Every output of `run` equals the reference run's byte for byte.
void expectSameBytes(const Run& run, const Run& reference) {
  ASSERT_EQ(run.outputs.size(), reference.outputs.size());
  for (const auto& [name, expected] : reference.outputs) {
    const Tensor& got = run.outputs.at(name);
    ASSERT_EQ(got.type().str(), expected.type().str()) << name;
    int64_t differing = 0, first = -1;
    for (size_t i = 0; i < got.sizeInBytes(); ++i)
      if (static_cast<const uint8_t*>(got.data())[i] != static_cast<const uint8_t*>(expected.data())[i] &&
          differing++ == 0)
        first = int64_t(i);
    EXPECT_EQ(differing, 0) << name << ": " << differing << " of " << got.sizeInBytes()
                            << " bytes differ, first at " << first;
  }
}

/// The npu run equals the reference run byte for byte, with no node on the fallback.
void expectBitExactOnNpu(const GraphBuilder& build, const std::string& config) {
  SCOPED_TRACE(config.empty() ? "npu-16x16 (built in)" : config);
  auto npu = compileAndRun(build, "npu", config);
  ASSERT_TRUE(npu) << npu.error().message();
  auto reference = compileAndRun(build, "reference", "");
  ASSERT_TRUE(reference) << reference.error().message();
  for (const FallbackNode& node : npu->fallbackNodes) ADD_FAILURE() << "fell back: " << node.name;
  EXPECT_GT(npu->cycles, 0u);
  expectSameBytes(*npu, *reference);
}

const std::vector<std::string> kConfigs = {"", "npu-16x16-v3.yaml", "npu-64x64-v3.yaml"};

// ---- Activation x activation QuantizedMatMul -------------------------------------------

struct AttentionMatMul {
  Dims lhs, rhs;  ///< [..., M, K] and [..., K, N]
  int32_t lhsZero, rhsZero;
  bool relu = false;
};

GraphBuilder activationMatMul(const AttentionMatMul& p) {
  return [p](Function& f) -> Error {
    const int64_t n = p.rhs.back(), k = p.lhs.back();
    Node* a = f.createPlaceholder("a", Type(ElemKind::Int8Q, p.lhs, 0.02f, p.lhsZero));
    Node* b = f.createPlaceholder("b", Type(ElemKind::Int8Q, p.rhs, 0.03f, p.rhsZero));
    Tensor bias(Type(ElemKind::Int32Q, {n}, 0.02f * 0.03f, 0));
    for (int64_t j = 0; j < n; ++j) bias.as<int32_t>()[j] = int32_t(j * 37 % 200) - 100;
    Tensor scales(Type(ElemKind::F32, {n}));
    for (int64_t j = 0; j < n; ++j) scales.as<float>()[j] = 0.03f;
    // Products of two centred int8 codes over K terms: spread the output over its codes.
    const double outScale = 0.02 * 0.03 * 75.0 * 75.0 * std::sqrt(double(k)) * 3 / 128;
    Attributes attrs{{"kind", std::string("i8q")}, {"scale", outScale}, {"offset", int64_t(3)}};
    if (p.relu) attrs.set("clip_min", 0.0);
    EMBER_ASSIGN_OR_RETURN(Node * mm, f.create(OpKind::QuantizedMatMul, "scores",
                                               {a, b, f.createConstant("bias", std::move(bias)),
                                                f.createConstant("scales", std::move(scales))},
                                               attrs));
    f.addOutput("y", mm);
    return Error::success();
  };
}

TEST(NpuTransformer, ActivationMatMulBitExact) {
  const std::vector<AttentionMatMul> cases = {
      {{4, 16, 16}, {4, 16, 16}, 8, 5},          // Q.K^T of the CI encoder
      {{4, 16, 16}, {4, 16, 16}, -128, 5},       // scores.V: softmax codes at -128
      {{4, 17, 16}, {4, 16, 17}, 3, 3},          // ViT's 17 tokens
      {{2, 33, 40}, {2, 40, 70}, -7, -128},      // rhs zero point -128 (127 + 1)
      {{1, 4, 20, 24}, {1, 4, 24, 9}, 0, 0},     // rank 4, zero points 0
      {{3, 5, 100}, {100, 18}, 11, -2},          // one right operand broadcast over the batch
      {{1, 130, 72}, {1, 72, 66}, -1, 1, true},  // several k-chunks and n-tiles, clipped
      {{2, 1, 16}, {2, 16, 1}, 4, -4},           // a single row and column
  };
  for (const AttentionMatMul& c : cases)
    for (const std::string& config : kConfigs) {
      SCOPED_TRACE(Type(ElemKind::Int8Q, c.lhs).str() + " x " + Type(ElemKind::Int8Q, c.rhs).str());
      expectBitExactOnNpu(activationMatMul(c), config);
    }
}

TEST(NpuTransformer, ActivationMatMulTooLargeNamesTheSizes) {
  npu::NpuConfig config;  // npu-16x16: 256 KiB scratchpad
  auto plan = npu_backend::planActivationMatMul(512, 60000, 512, config);
  ASSERT_FALSE(plan);
  const std::string message = plan.error().message();
  EXPECT_NE(message.find("[512x60000] x [60000x512]"), std::string::npos) << message;
  EXPECT_NE(message.find("scratchpad"), std::string::npos) << message;
  // The backend does not claim it: the layer falls back instead of failing the compile.
  auto run = compileAndRun(activationMatMul({{1, 4, 60000}, {1, 60000, 4}, 1, 1}), "npu", "");
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->fallbackNodes.size(), 1u);
  EXPECT_EQ(run->fallbackNodes[0].name, "scores");
}

// ---- i8 -> i8 elementwise ops as a lut --------------------------------------------------

GraphBuilder unary(OpKind kind, Dims dims, Attributes attrs) {
  return [=](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, dims, 0.05f, -4));
    EMBER_ASSIGN_OR_RETURN(Node * y, f.create(kind, "op", {x}, attrs));
    f.addOutput("y", y);
    return Error::success();
  };
}

TEST(NpuTransformer, GeluAsLookupBitExact) {
  const Attributes gelu{{"kind", std::string("i8q")}, {"scale", 0.04}, {"offset", int64_t(-20)}};
  for (const Dims& dims : std::vector<Dims>{{1, 16, 128}, {1, 17, 256}, {3, 5, 7}, {1, 2000}})
    for (const std::string& config : kConfigs)
      expectBitExactOnNpu(unary(OpKind::QuantizedGelu, dims, gelu), config);
}

TEST(NpuTransformer, TheLookupClaimIsForTheClass) {
  // Claimed by traits and types, not by name: any DataParallel op of one i8q
  // input to an i8q result of the same shape that the reference kernels run.
  const Type in(ElemKind::Int8Q, {2, 8}, 0.05f, -4), out(ElemKind::Int8Q, {2, 8}, 0.04f, 3);
  auto info = [](OpKind kind, std::vector<Type> inputs, std::vector<Type> results) {
    NodeInfo i;
    i.kind = kind;
    i.inputTypes = std::move(inputs);
    i.resultTypes = std::move(results);
    return i;
  };
  EXPECT_TRUE(npu_backend::unaryTableSupported(info(OpKind::QuantizedGelu, {in}, {out})));
  EXPECT_TRUE(npu_backend::unaryTableSupported(info(OpKind::Requantize, {in}, {out})));
  // Not elementwise, not 8-bit, or not one operand: no table.
  EXPECT_FALSE(npu_backend::unaryTableSupported(info(OpKind::QuantizedSoftmax, {in}, {out})));
  EXPECT_FALSE(
      npu_backend::unaryTableSupported(info(OpKind::Dequantize, {in}, {Type(ElemKind::F32, {2, 8})})));
  EXPECT_FALSE(npu_backend::unaryTableSupported(info(OpKind::QuantizedAdd, {in, in}, {out})));
  EXPECT_FALSE(npu_backend::unaryTableSupported(
      info(OpKind::Relu, {Type(ElemKind::F32, {2, 8})}, {Type(ElemKind::F32, {2, 8})})));
}

// ---- Softmax and LayerNorm on the vector unit (ISA v4) ------------------------------------

enum class MaskKind { None, Causal, Random, KeyPadding, EmptyRow };

/// QuantizedSoftmax over the last axis of `dims` with a constant mask of the kind asked.
GraphBuilder softmax(Dims dims, MaskKind maskKind, float inScale = 0.08f) {
  return [=](Function& f) -> Error {
    const int64_t s = dims[dims.size() - 2 < dims.size() ? dims.size() - 2 : 0], n = dims.back();
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, dims, inScale, 5));
    Dims maskDims = {1};
    if (maskKind == MaskKind::Causal || maskKind == MaskKind::EmptyRow) maskDims = {s, n};
    if (maskKind == MaskKind::Random) maskDims = dims;
    if (maskKind == MaskKind::KeyPadding) maskDims = {1, 1, n};
    Tensor mask(Type(ElemKind::Bool, maskDims));
    std::mt19937 rng(7);
    for (int64_t i = 0; i < mask.type().numElements(); ++i) {
      const int64_t row = i / n, col = i % n;
      bool keep = true;
      if (maskKind == MaskKind::Causal) keep = col <= row % s;
      if (maskKind == MaskKind::Random) keep = rng() % 3 != 0;
      if (maskKind == MaskKind::KeyPadding) keep = col < (n + 1) / 2;
      if (maskKind == MaskKind::EmptyRow) keep = row % s != 1 && col <= row % s;  // row 1 keeps nothing
      mask.as<bool>()[i] = keep;
    }
    EMBER_ASSIGN_OR_RETURN(Node * y, f.create(OpKind::QuantizedSoftmax, "softmax",
                                              {x, f.createConstant("mask", std::move(mask))},
                                              {{"axis", int64_t(-1)},
                                               {"kind", std::string("i8q")},
                                               {"scale", 1.0 / 255},
                                               {"offset", int64_t(-128)}}));
    f.addOutput("y", y);
    return Error::success();
  };
}

/// QuantizedLayerNorm over dims [axis, rank) with gamma and beta of `affineDims`.
GraphBuilder layerNorm(Dims dims, int64_t axis, Dims affineDims) {
  return [=](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, dims, 0.05f, -4));
    Tensor gamma(Type(ElemKind::F32, affineDims)), beta(Type(ElemKind::F32, affineDims));
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> g(-1.5f, 1.5f), b(-0.5f, 0.5f);
    for (int64_t i = 0; i < gamma.type().numElements(); ++i) {
      gamma.as<float>()[i] = i % 7 == 3 ? 0.0f : g(rng);  // zero and negative gammas too
      beta.as<float>()[i] = b(rng);
    }
    EMBER_ASSIGN_OR_RETURN(Node * y, f.create(OpKind::QuantizedLayerNorm, "layernorm",
                                              {x, f.createConstant("gamma", std::move(gamma)),
                                               f.createConstant("beta", std::move(beta))},
                                              {{"epsilon", 1e-5},
                                               {"axis", axis},
                                               {"kind", std::string("i8q")},
                                               {"scale", 0.03},
                                               {"offset", int64_t(2)}}));
    f.addOutput("y", y);
    return Error::success();
  };
}

TEST(NpuTransformer, SoftmaxOnTheVectorUnitBitExact) {
  const std::vector<std::pair<Dims, MaskKind>> cases = {
      {{4, 16, 16}, MaskKind::None},
      {{1, 4, 16, 16}, MaskKind::Causal},
      {{1, 4, 17, 17}, MaskKind::None},
      {{2, 3, 13, 29}, MaskKind::Random},
      {{1, 2, 5, 33}, MaskKind::KeyPadding},
      {{1, 2, 6, 6}, MaskKind::EmptyRow},
      {{1, 1}, MaskKind::None},
      {{3, 512}, MaskKind::None},
      {{1, 1, 40, 512}, MaskKind::Causal},
      {{7}, MaskKind::None},
  };
  for (const auto& [dims, mask] : cases)
    for (const std::string& config : kConfigs) {
      SCOPED_TRACE(Type(ElemKind::Int8Q, dims).str() + " mask " + std::to_string(int(mask)));
      expectBitExactOnNpu(softmax(dims, mask), config);
    }
}

TEST(NpuTransformer, LayerNormOnTheVectorUnitBitExact) {
  const std::vector<std::tuple<Dims, int64_t, Dims>> cases = {
      {{1, 16, 64}, -1, {64}},    {{1, 17, 64}, 2, {64}},   {{2, 5, 16}, -1, {16}},
      {{1, 3, 1024}, -1, {1024}}, {{1, 7, 768}, -1, {768}}, {{2, 4, 8}, 1, {8}},
      {{3, 4, 5}, 1, {4, 5}},     {{1, 200, 48}, -1, {48}}, {{1, 1, 1}, -1, {1}},
  };
  for (const auto& [dims, axis, affine] : cases)
    for (const std::string& config : kConfigs) {
      SCOPED_TRACE(Type(ElemKind::Int8Q, dims).str() + " axis " + std::to_string(axis));
      expectBitExactOnNpu(layerNorm(dims, axis, affine), config);
    }
}

TEST(NpuTransformer, RowNormalisationTooLargeNamesTheSizes) {
  npu::NpuConfig config;  // npu-16x16: 256 KiB scratchpad
  config.scratchpadBytes = 4096;
  auto plan = npu_backend::planRowNormBand(8, 1000, true, npu::isa::kSoftmaxParamBytes, config);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message().find("a row of 1000 elements does not fit even alone"), std::string::npos)
      << plan.error().message();
  EXPECT_NE(plan.error().message().find("4096 available"), std::string::npos) << plan.error().message();
  auto wide = npu_backend::planRowNormBand(2, 70000, false, 32, npu::NpuConfig{});
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message().find("a row of 70000 elements exceeds"), std::string::npos)
      << wide.error().message();
  // Not claimed: a layernorm wider than the parameter buffer, a softmax row wider
  // than a vector row; both fall back to the reference backend instead of failing.
  for (const GraphBuilder& build :
       {layerNorm({1, 2, 1025}, -1, {1025}), softmax({2, 70000}, MaskKind::None)}) {
    auto run = compileAndRun(build, "npu", "");
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_EQ(run->fallbackNodes.size(), 1u);
  }
}

// Issue 18, bad input: a row too long for npu-16x16's scratchpad and a
// LayerNorm wider than the vector unit's parameter buffer fall back to the
// reference backend (same bytes), and the report's entry says why with the
// sizes. The expected sizes come from the shape and the config file: a masked
// softmax row takes six 64-byte-aligned slots (input, mask and output, each
// double-buffered) plus its 32-byte parameter record, aligned to 64
// (docs/npu/compiler.md, "Transformers").
TEST(NpuTransformer, TooLongRowFallsBackAndTheReportNamesTheSizes) {
  auto config = npu::loadConfig(configPath("npu-16x16.yaml"));
  ASSERT_TRUE(config) << config.error().message();
  const int64_t n = 50000;
  auto alignUp64 = [](uint64_t bytes) { return (bytes + 63) / 64 * 64; };
  const uint64_t needed = 6 * alignUp64(n) + alignUp64(32);
  ASSERT_GT(needed, uint64_t(config->scratchpadBytes));
  ASSERT_LE(n, 65535);  // the vector row's width: the scratchpad is what refuses it
  const std::string softmaxWhy =
      "a row of " + std::to_string(n) + " elements does not fit even alone: " + std::to_string(needed) +
      " scratchpad bytes (" + std::to_string(config->scratchpadBytes) + " available)";
  const int64_t channels = npu::isa::kLayerNormMaxChannels + 76;
  const std::string layerNormWhy = std::to_string(channels) + " channels exceed the " +
                                   std::to_string(npu::isa::kLayerNormMaxChannels) +
                                   " the vector unit's parameter buffer holds";
  const std::vector<std::tuple<GraphBuilder, std::string, std::string>> cases = {
      {softmax({1, 2, n}, MaskKind::KeyPadding), "softmax", softmaxWhy},
      {layerNorm({1, 3, channels}, -1, {channels}), "layernorm", layerNormWhy},
  };
  for (const auto& [build, node, why] : cases) {
    SCOPED_TRACE(node);
    auto npu = compileAndRun(build, "npu", "npu-16x16.yaml");
    ASSERT_TRUE(npu) << npu.error().message();
    auto reference = compileAndRun(build, "reference", "");
    ASSERT_TRUE(reference) << reference.error().message();
    expectSameBytes(*npu, *reference);
    ASSERT_EQ(npu->fallbackNodes.size(), 1u);
    EXPECT_EQ(npu->fallbackNodes[0].name, node);
    EXPECT_EQ(npu->fallbackNodes[0].backend, "reference");
    const std::string& reason = npu->fallbackNodes[0].reason;
    EXPECT_EQ(reason.rfind("'npu' does not support ", 0), 0u) << reason;
    EXPECT_NE(reason.find(": " + why), std::string::npos) << reason;
  }
}

// ---- Head split and merge ----------------------------------------------------------------

/// [1, S, D] -> [1, S, H, D/H] -> [1, H, S, D/H] (split), an activation
/// matmul per head against K^T [1, H, D/H, S], then the merge back to [1, S, D].
GraphBuilder headSplitMerge(int64_t s, int64_t d, int64_t heads) {
  return [=](Function& f) -> Error {
    const int64_t dh = d / heads;
    const Type t(ElemKind::Int8Q, {1, s, d}, 0.05f, 2);
    Node* q = f.createPlaceholder("q", t);
    Node* k = f.createPlaceholder("k", t.withDims({1, s, d}));
    auto split = [&](Node* x, const std::string& name, std::vector<int64_t> perm) -> Expected<Node*> {
      EMBER_ASSIGN_OR_RETURN(Node * r, f.create(OpKind::Reshape, name + ".split", {x},
                                                {{"shape", std::vector<int64_t>{1, s, heads, dh}}}));
      return f.create(OpKind::Transpose, name + ".heads", {r}, {{"perm", perm}});
    };
    EMBER_ASSIGN_OR_RETURN(Node * qh, split(q, "q", {0, 2, 1, 3}));  // [1, H, S, dh]
    EMBER_ASSIGN_OR_RETURN(Node * kt, split(k, "k", {0, 2, 3, 1}));  // [1, H, dh, S]
    Tensor bias(Type(ElemKind::Int32Q, {s}, 0.05f * 0.05f, 0));
    Tensor scales(Type(ElemKind::F32, {s}));
    for (int64_t j = 0; j < s; ++j) scales.as<float>()[j] = 0.05f;
    EMBER_ASSIGN_OR_RETURN(Node * scores,
                           f.create(OpKind::QuantizedMatMul, "scores",
                                    {qh, kt, f.createConstant("bias", std::move(bias)),
                                     f.createConstant("scales", std::move(scales))},
                                    {{"kind", std::string("i8q")},
                                     {"scale", 0.05 * 0.05 * 75 * 75 * std::sqrt(double(dh)) * 3 / 128},
                                     {"offset", int64_t(-1)}}));
    // Merge: [1, H, S, S] -> [1, S, H, S] -> [1, S, H * S].
    EMBER_ASSIGN_OR_RETURN(Node * merged, f.create(OpKind::Transpose, "merge", {scores},
                                                   {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
    EMBER_ASSIGN_OR_RETURN(Node * flat, f.create(OpKind::Reshape, "merge.flat", {merged},
                                                 {{"shape", std::vector<int64_t>{1, s, heads * s}}}));
    f.addOutput("y", flat);
    return Error::success();
  };
}

TEST(NpuTransformer, HeadSplitAndMergeOnTheNpu) {
  for (const std::string& config : kConfigs) {
    expectBitExactOnNpu(headSplitMerge(16, 64, 4), config);
    expectBitExactOnNpu(headSplitMerge(17, 48, 3), config);
  }
}

}  // namespace
}  // namespace ember
