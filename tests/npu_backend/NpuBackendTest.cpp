// The npu backend against the reference backend, bit for bit: small int8
// graphs built here (every node supported by the npu, so the whole function
// is compiled for it), each compiled twice from the same graph, once per
// backend, and run on the same random inputs. Compiling also runs the static
// program checks (tokens, SRAM races, allocation), so every case checks them.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

Tensor randomTensor(const Type& type, uint32_t seed, int lo = -128, int hi = 127) {
  Tensor t(type);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  if (type.kind == ElemKind::Int8Q)
    for (int64_t i = 0; i < type.numElements(); ++i) t.as<int8_t>()[i] = int8_t(dist(rng));
  return t;
}

Node* constantI8(Function& f, const std::string& name, Dims dims, uint32_t seed) {
  return f.createConstant(name, randomTensor(Type(ElemKind::Int8Q, std::move(dims), 0.02f, 0), seed));
}

Node* constantBias(Function& f, const std::string& name, int64_t n, uint32_t seed) {
  Tensor t(Type(ElemKind::Int32Q, {n}, 1e-4f, 0));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(-20000, 20000);
  for (int64_t i = 0; i < n; ++i) t.as<int32_t>()[i] = dist(rng);
  return f.createConstant(name, std::move(t));
}

Node* constantScales(Function& f, const std::string& name, int64_t n, bool perChannel) {
  Tensor t(Type(ElemKind::F32, {n}));
  for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = perChannel ? 0.01f + 0.0007f * float(i % 7) : 0.013f;
  return f.createConstant(name, std::move(t));
}

using Builder = std::function<Error(Function&)>;

struct RunResult {
  std::map<std::string, Tensor> outputs;
  DeviceReport report;
  std::vector<FallbackNode> fallbackNodes;
};

RunResult compileAndRun(const Builder& build, const std::string& backendName, const std::string& config = "",
                        const CompileOptions& options = {}) {
  registerBuiltinBackends();
  Module module;
  Function& f = module.createFunction("main");
  Error built = build(f);
  EXPECT_FALSE(built) << built.message();
  auto backend = BackendRegistry::global().create(backendName);
  EXPECT_TRUE(bool(backend));
  if (!config.empty()) {
    Error e = (*backend)->setOption("config", config);
    EXPECT_FALSE(e) << e.message();
  }
  auto model = compileFunction(f, backend.take(), options);
  if (!model) {
    ADD_FAILURE() << backendName << ": " << model.error().message();
    return {};
  }
  ExecutionContext ctx;
  uint32_t seed = 7;
  for (const auto& [name, type] : model->inputs) ctx.setInput(name, randomTensor(type, seed++));
  Error e = model->function->execute(ctx);
  EXPECT_FALSE(e) << backendName << ": " << e.message();
  RunResult r;
  r.outputs = ctx.outputs();
  r.fallbackNodes = model->report.fallbackNodes;
  if (const DeviceReport* d = model->function->deviceReport()) r.report = *d;
  return r;
}

/// Compiles for the npu (optionally with fallbacks) and for the reference
/// backend and compares every output bit for bit; `npuRun` receives the npu run.
void expectBitExact(const Builder& build, const std::string& config = "",
                    const CompileOptions& npuOptions = {}, RunResult* npuRun = nullptr) {
  RunResult npu = compileAndRun(build, "npu", config, npuOptions);
  if (npuRun) *npuRun = npu;
  RunResult ref = compileAndRun(build, "reference");
  ASSERT_EQ(npu.outputs.size(), ref.outputs.size());
  ASSERT_FALSE(ref.outputs.empty());
  for (const auto& [name, expected] : ref.outputs) {
    auto it = npu.outputs.find(name);
    ASSERT_NE(it, npu.outputs.end()) << name;
    const Tensor& got = it->second;
    ASSERT_EQ(got.sizeInBytes(), expected.sizeInBytes()) << name;
    int64_t mismatches = 0, first = -1;
    for (size_t i = 0; i < got.sizeInBytes(); ++i)
      if (static_cast<const int8_t*>(got.data())[i] != static_cast<const int8_t*>(expected.data())[i]) {
        if (first < 0) first = int64_t(i);
        ++mismatches;
      }
    EXPECT_EQ(mismatches, 0) << name << ": first mismatch at byte " << first << ": npu "
                             << int(static_cast<const int8_t*>(got.data())[first < 0 ? 0 : first])
                             << " reference "
                             << int(static_cast<const int8_t*>(expected.data())[first < 0 ? 0 : first]);
  }
  EXPECT_GT(npu.report.cycles, 0u);
}

// ---- Convolution --------------------------------------------------------------------

struct ConvCase {
  const char* name;
  int64_t n, h, w, c, o, k, stride, pad, group, dilation;
  bool perChannel, relu;
};

Builder convBuilder(const ConvCase& p) {
  return [p](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {p.n, p.h, p.w, p.c}, 0.05f, -3));
    Node* w = constantI8(f, "w", {p.o, p.k, p.k, p.c / p.group}, 11);
    Node* b = constantBias(f, "b", p.o, 12);
    Node* s = constantScales(f, "s", p.o, p.perChannel);
    Attributes attrs{{"strides", std::vector<int64_t>{p.stride, p.stride}},
                     {"pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad}},
                     {"dilations", std::vector<int64_t>{p.dilation, p.dilation}},
                     {"group", p.group},
                     {"kind", std::string("i8q")},
                     {"scale", 0.09},
                     {"offset", int64_t(5)}};
    if (p.relu) attrs.set("clip_min", 0.0);
    EMBER_ASSIGN_OR_RETURN(Node * conv, f.create(OpKind::QuantizedConv, "conv", {x, w, b, s}, attrs));
    f.addOutput("y", conv);
    return Error::success();
  };
}

class NpuConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(NpuConvTest, BitExactWithReference) { expectBitExact(convBuilder(GetParam())); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, NpuConvTest,
    ::testing::Values(ConvCase{"pointwise", 1, 8, 8, 16, 16, 1, 1, 0, 1, 1, false, false},
                      ConvCase{"k3_pad1_relu", 1, 8, 8, 8, 16, 3, 1, 1, 1, 1, false, true},
                      ConvCase{"k3_stride2", 1, 9, 9, 8, 8, 3, 2, 1, 1, 1, false, false},
                      ConvCase{"odd_channels", 1, 7, 5, 3, 13, 3, 1, 1, 1, 1, false, true},
                      ConvCase{"channels_33_to_40", 1, 6, 6, 33, 40, 3, 1, 1, 1, 1, true, false},
                      ConvCase{"first_layer_7x7_s2", 1, 32, 32, 3, 16, 7, 2, 3, 1, 1, false, true},
                      ConvCase{"per_channel", 1, 5, 5, 16, 24, 3, 1, 1, 1, 1, true, true},
                      ConvCase{"depthwise", 1, 10, 10, 24, 24, 3, 1, 1, 24, 1, false, false},
                      ConvCase{"depthwise_stride2", 1, 10, 10, 32, 32, 3, 2, 1, 32, 1, true, true},
                      ConvCase{"grouped", 1, 6, 6, 16, 32, 3, 1, 1, 4, 1, false, false},
                      ConvCase{"dilated", 1, 9, 9, 8, 8, 3, 1, 2, 1, 2, false, false},
                      ConvCase{"batch2", 2, 6, 6, 8, 8, 3, 1, 1, 1, 1, false, false},
                      ConvCase{"tiled_56x56x64", 1, 56, 56, 64, 64, 3, 1, 1, 1, 1, false, true},
                      ConvCase{"wide_channels_1x1", 1, 7, 7, 512, 200, 1, 1, 0, 1, 1, false, false},
                      ConvCase{"deep_3x3", 1, 7, 7, 256, 96, 3, 1, 1, 1, 1, false, true},
                      ConvCase{"pointwise_stride2", 1, 9, 9, 24, 40, 1, 2, 0, 1, 1, true, false},
                      ConvCase{"pointwise_stride2_batch2", 2, 8, 8, 16, 16, 1, 2, 0, 1, 1, false, true}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

// Shapes for which the tiling search picks each technique (the test checks
// that it did, so each one is covered bit-exactly): the bias initialising the
// accumulator by DMA (short reductions), k-parts (a whole image plus
// double-buffered weights exceed the scratchpad), strided 1x1 gathered by DMA.
TEST(NpuConv, TilingTechniques) {
  struct Expect {
    ConvCase shape;
    const char* tiles;
  };
  for (const Expect& e :
       {Expect{{"bias_dma", 1, 28, 28, 64, 256, 1, 1, 0, 1, 1, false, true}, "bias by DMA"},
        Expect{{"k_parts", 1, 14, 14, 512, 32, 3, 2, 1, 1, 1, true, true}, "k-parts"},
        Expect{{"strided_1x1", 1, 14, 14, 64, 128, 1, 2, 0, 1, 1, false, false}, "band="}}) {
    SCOPED_TRACE(e.shape.name);
    RunResult npu;
    expectBitExact(convBuilder(e.shape), "", {}, &npu);
    ASSERT_EQ(npu.report.layers.size(), 1u);
    EXPECT_NE(npu.report.layers[0].text("tiles").find(e.tiles), std::string::npos)
        << npu.report.layers[0].text("tiles");
    if (std::string(e.shape.name) == "strided_1x1") {  // gathered: a dense 7x7 conv, every MAC useful
      EXPECT_EQ(npu.report.layers[0].macs, uint64_t(7 * 7 * 128 * 64));
    }
  }
}

TEST(NpuConv, OtherConfigsAndDataflow) {
  const std::string dir = EMBER_NPU_CONFIG_DIR;
  for (const char* cfg : {"npu-32x32.yaml", "npu-64x64.yaml"})
    expectBitExact(convBuilder({"k3", 1, 12, 12, 40, 72, 3, 1, 1, 1, 1, true, true}), dir + "/" + cfg);
}

// ---- MatMul ---------------------------------------------------------------------------

Builder matmulBuilder(const Dims& lhs, int64_t n, bool perChannel) {
  return [=](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, lhs, 0.04f, 7));
    Node* w = constantI8(f, "w", {lhs.back(), n}, 21);
    Node* b = constantBias(f, "b", n, 22);
    Node* s = constantScales(f, "s", n, perChannel);
    Attributes attrs{{"kind", std::string("i8q")}, {"scale", 0.2}, {"offset", int64_t(-10)}};
    EMBER_ASSIGN_OR_RETURN(Node * mm, f.create(OpKind::QuantizedMatMul, "mm", {x, w, b, s}, attrs));
    f.addOutput("y", mm);
    return Error::success();
  };
}

TEST(NpuMatMul, Vector) { expectBitExact(matmulBuilder({1, 256}, 32, false)); }
TEST(NpuMatMul, Matrix) { expectBitExact(matmulBuilder({37, 70}, 45, true)); }
TEST(NpuMatMul, Batched) { expectBitExact(matmulBuilder({2, 5, 64}, 20, false)); }

// ---- Pooling --------------------------------------------------------------------------

Builder poolBuilder(OpKind kind, const Dims& in, int64_t k, int64_t s, std::vector<int64_t> pads, bool ceil,
                    bool includePad) {
  return [=](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, in, 0.05f, -20));
    Attributes attrs{{"kernel", std::vector<int64_t>{k, k}},
                     {"strides", std::vector<int64_t>{s, s}},
                     {"pads", pads},
                     {"ceil_mode", int64_t(ceil)}};
    if (kind == OpKind::MaxPool) {
      attrs.set("dilations", std::vector<int64_t>{1, 1});
    } else {
      attrs.set("count_include_pad", int64_t(includePad));
      attrs.set("kind", std::string("i8q"));
      attrs.set("scale", 0.03);
      attrs.set("offset", int64_t(4));
    }
    EMBER_ASSIGN_OR_RETURN(Node * pool, f.create(kind, "pool", {x}, attrs));
    f.addOutput("y", pool);
    return Error::success();
  };
}

TEST(NpuPool, Max2x2) {
  expectBitExact(poolBuilder(OpKind::MaxPool, {1, 8, 8, 16}, 2, 2, {0, 0, 0, 0}, false, false));
}
TEST(NpuPool, Max3x3Stride2Pad1) {
  expectBitExact(poolBuilder(OpKind::MaxPool, {1, 15, 15, 24}, 3, 2, {1, 1, 1, 1}, false, false));
}
TEST(NpuPool, MaxCeilMode) {
  expectBitExact(poolBuilder(OpKind::MaxPool, {2, 7, 7, 5}, 2, 2, {0, 0, 0, 0}, true, false));
}
TEST(NpuPool, AvgGlobal) {
  expectBitExact(poolBuilder(OpKind::QuantizedAvgPool, {1, 7, 7, 40}, 7, 1, {0, 0, 0, 0}, false, false));
}
// Global pooling holds the pixels stationary in the array; 40x40 pixels leave
// room for 32 of 48 channels per scratchpad slot: two channel blocks, two images.
TEST(NpuPool, AvgGlobalChannelBlocks) {
  RunResult npu;
  expectBitExact(poolBuilder(OpKind::QuantizedAvgPool, {2, 40, 40, 48}, 40, 1, {0, 0, 0, 0}, false, false),
                 "", {}, &npu);
  ASSERT_EQ(npu.report.layers.size(), 1u);
  EXPECT_NE(npu.report.layers[0].text("tiles").find("pixels stationary"), std::string::npos);
  EXPECT_NE(npu.report.layers[0].text("tiles").find("32-channel blocks"), std::string::npos);
}

TEST(NpuPool, AvgPaddedExcludePad) {
  expectBitExact(poolBuilder(OpKind::QuantizedAvgPool, {1, 9, 9, 16}, 3, 2, {1, 1, 1, 1}, false, false));
}
TEST(NpuPool, AvgPaddedIncludePadCeil) {
  expectBitExact(poolBuilder(OpKind::QuantizedAvgPool, {1, 8, 8, 8}, 3, 2, {1, 1, 1, 1}, true, true));
}

// ---- Elementwise --------------------------------------------------------------------

Builder addBuilder(const Dims& a, const Dims& b, bool relu) {
  return [=](Function& f) -> Error {
    Node* x = f.createPlaceholder("a", Type(ElemKind::Int8Q, a, 0.05f, -3));
    Node* y = f.createPlaceholder("b", Type(ElemKind::Int8Q, b, 0.08f, 9));
    Attributes attrs{{"kind", std::string("i8q")}, {"scale", 0.1}, {"offset", int64_t(-2)}};
    if (relu) attrs.set("clip_min", 0.0);
    EMBER_ASSIGN_OR_RETURN(Node * add, f.create(OpKind::QuantizedAdd, "add", {x, y}, attrs));
    f.addOutput("y", add);
    return Error::success();
  };
}

TEST(NpuAdd, SameShape) { expectBitExact(addBuilder({1, 14, 14, 64}, {1, 14, 14, 64}, true)); }
TEST(NpuAdd, Large) { expectBitExact(addBuilder({1, 56, 56, 64}, {1, 56, 56, 64}, false)); }
TEST(NpuAdd, BroadcastRow) { expectBitExact(addBuilder({1, 5, 5, 24}, {24}, false)); }
TEST(NpuAdd, BroadcastLhsRow) { expectBitExact(addBuilder({1, 1, 3, 16}, {2, 4, 3, 16}, true)); }

TEST(NpuLookup, Table) {
  expectBitExact([](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {3, 100, 7}, 0.05f, 0));
    Node* table = f.createConstant("table", randomTensor(Type(ElemKind::Int8Q, {256}, 0.01f, -5), 99));
    EMBER_ASSIGN_OR_RETURN(Node * lut, f.create(OpKind::Lookup, "lut", {x, table}));
    f.addOutput("y", lut);
    return Error::success();
  });
}

TEST(NpuRequantize, Rescale) {
  for (double scale : {0.02, 0.11, 1.7}) {
    expectBitExact([scale](Function& f) -> Error {
      Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {2, 333}, 0.05f, 6));
      Attributes attrs{{"kind", std::string("i8q")}, {"scale", scale}, {"offset", int64_t(-7)}};
      EMBER_ASSIGN_OR_RETURN(Node * rq, f.create(OpKind::Requantize, "rq", {x}, attrs));
      f.addOutput("y", rq);
      return Error::success();
    });
  }
}

// ---- Data movement ---------------------------------------------------------------------

TEST(NpuDataMovement, TransposeNhwcToNchw) {
  expectBitExact([](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {1, 4, 5, 16}, 0.05f, 0));
    EMBER_ASSIGN_OR_RETURN(
        Node * t, f.create(OpKind::Transpose, "t", {x}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}));
    f.addOutput("y", t);
    return Error::success();
  });
}

TEST(NpuDataMovement, SliceAndConcat) {
  expectBitExact([](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {1, 6, 6, 8}, 0.05f, 0));
    Node* y = f.createPlaceholder("y", Type(ElemKind::Int8Q, {1, 6, 6, 4}, 0.05f, 0));
    EMBER_ASSIGN_OR_RETURN(Node * s, f.create(OpKind::Slice, "s", {x},
                                              {{"starts", std::vector<int64_t>{0, 1, 0, 2}},
                                               {"ends", std::vector<int64_t>{1, 6, 6, 8}},
                                               {"steps", std::vector<int64_t>{1, 2, 3, 1}}}));
    f.addOutput("sliced", s);
    EMBER_ASSIGN_OR_RETURN(Node * c, f.create(OpKind::Concat, "c", {x, y}, {{"axis", int64_t(3)}}));
    f.addOutput("concat", c);
    return Error::success();
  });
}

// ---- A small network, determinism and reports --------------------------------------------

Builder smallNetwork() {
  return [](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {1, 16, 16, 3}, 0.02f, -128));
    Attributes conv{{"strides", std::vector<int64_t>{1, 1}},
                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"dilations", std::vector<int64_t>{1, 1}},
                    {"group", int64_t(1)},
                    {"kind", std::string("i8q")},
                    {"scale", 0.05},
                    {"offset", int64_t(-128)},
                    {"clip_min", 0.0}};
    EMBER_ASSIGN_OR_RETURN(Node * c1,
                           f.create(OpKind::QuantizedConv, "conv1",
                                    {x, constantI8(f, "w1", {16, 3, 3, 3}, 1), constantBias(f, "b1", 16, 2),
                                     constantScales(f, "s1", 16, true)},
                                    conv));
    EMBER_ASSIGN_OR_RETURN(Node * c2,
                           f.create(OpKind::QuantizedConv, "conv2",
                                    {c1, constantI8(f, "w2", {16, 3, 3, 16}, 3), constantBias(f, "b2", 16, 4),
                                     constantScales(f, "s2", 16, false)},
                                    conv));
    Attributes add{
        {"kind", std::string("i8q")}, {"scale", 0.06}, {"offset", int64_t(-128)}, {"clip_min", 0.0}};
    EMBER_ASSIGN_OR_RETURN(Node * sum, f.create(OpKind::QuantizedAdd, "residual", {c1, c2}, add));
    EMBER_ASSIGN_OR_RETURN(Node * pool, f.create(OpKind::MaxPool, "pool", {sum},
                                                 {{"kernel", std::vector<int64_t>{2, 2}},
                                                  {"strides", std::vector<int64_t>{2, 2}},
                                                  {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                                                  {"dilations", std::vector<int64_t>{1, 1}},
                                                  {"ceil_mode", int64_t(0)}}));
    EMBER_ASSIGN_OR_RETURN(Node * flat, f.create(OpKind::Reshape, "flatten", {pool},
                                                 {{"shape", std::vector<int64_t>{1, 8 * 8 * 16}}}));
    Attributes mm{{"kind", std::string("i8q")}, {"scale", 0.3}, {"offset", int64_t(0)}};
    EMBER_ASSIGN_OR_RETURN(Node * fc,
                           f.create(OpKind::QuantizedMatMul, "fc",
                                    {flat, constantI8(f, "w3", {1024, 10}, 5), constantBias(f, "b3", 10, 6),
                                     constantScales(f, "s3", 10, true)},
                                    mm));
    f.addOutput("logits", fc);
    return Error::success();
  };
}

TEST(NpuNetwork, SmallResidualCnn) { expectBitExact(smallNetwork()); }

// ---- A residual add fused into the conv epilogue (compiler.fuse_residual_add) ------------

struct ResidualCase {
  const char* name;
  int64_t h, w, c, o, k, stride;
  bool convIsLhs, perChannel, convAlsoOutput;
  int64_t batch = 1;
};

/// conv(x) + shortcut (or shortcut + conv(x)), ReLU after the add like ResNet.
Builder residualBuilder(const ResidualCase& p) {
  return [p](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {p.batch, p.h, p.w, p.c}, 0.05f, -3));
    const int64_t pad = p.k / 2, oh = (p.h + 2 * pad - p.k) / p.stride + 1,
                  ow = (p.w + 2 * pad - p.k) / p.stride + 1;
    Node* shortcut =
        f.createPlaceholder("shortcut", Type(ElemKind::Int8Q, {p.batch, oh, ow, p.o}, 0.07f, 11));
    Attributes attrs{{"strides", std::vector<int64_t>{p.stride, p.stride}},
                     {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"group", int64_t(1)},
                     {"kind", std::string("i8q")},
                     {"scale", 0.09},
                     {"offset", int64_t(5)}};
    EMBER_ASSIGN_OR_RETURN(
        Node * conv, f.create(OpKind::QuantizedConv, "conv",
                              {x, constantI8(f, "w", {p.o, p.k, p.k, p.c}, 31), constantBias(f, "b", p.o, 32),
                               constantScales(f, "s", p.o, p.perChannel)},
                              attrs));
    Attributes add{
        {"kind", std::string("i8q")}, {"scale", 0.11}, {"offset", int64_t(-128)}, {"clip_min", 0.0}};
    std::vector<NodeValue> operands{conv, shortcut};
    if (!p.convIsLhs) std::swap(operands[0], operands[1]);
    EMBER_ASSIGN_OR_RETURN(Node * sum, f.create(OpKind::QuantizedAdd, "add", operands, add));
    f.addOutput("y", sum);
    if (p.convAlsoOutput) f.addOutput("t", conv);
    return Error::success();
  };
}

// The fused layer (one layer: the conv with "+ residual add") against the
// reference's separate QuantizedAdd, bit for bit, on both v3 configs; a conv
// whose result is also a model output keeps the separate add.
TEST(NpuResidualFusion, ConvPlusAddBitExact) {
  const std::string dir = EMBER_NPU_CONFIG_DIR;
  for (const ResidualCase& p :
       {ResidualCase{"pointwise_lhs", 14, 14, 64, 256, 1, 1, true, false, false},
        ResidualCase{"pointwise_rhs_per_channel", 14, 14, 64, 96, 1, 1, false, true, false},
        ResidualCase{"k3_lhs", 12, 12, 32, 48, 3, 1, true, false, false},
        ResidualCase{"k3_stride2_rhs", 15, 15, 24, 40, 3, 2, false, false, false},
        ResidualCase{"pointwise_stride2_gathered", 16, 16, 32, 64, 1, 2, true, true, false},
        ResidualCase{"deep_wide", 7, 7, 512, 2048, 1, 1, true, false, false},
        ResidualCase{"conv_also_an_output", 10, 10, 16, 32, 3, 1, true, false, true},
        ResidualCase{"batch2", 9, 9, 32, 64, 3, 1, false, false, false, 2},
        ResidualCase{"batch4_pointwise", 7, 7, 128, 256, 1, 1, true, true, false, 4}}) {
    for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(std::string(p.name) + " on " + cfg);
      RunResult npu;
      expectBitExact(residualBuilder(p), dir + "/" + cfg, {}, &npu);
      if (p.convAlsoOutput) {
        ASSERT_EQ(npu.report.layers.size(), 2u);
        EXPECT_EQ(npu.report.layers[1].op, "QuantizedAdd");
      } else {
        ASSERT_EQ(npu.report.layers.size(), 1u);
        EXPECT_NE(npu.report.layers[0].text("shape").find("+ residual add"), std::string::npos)
            << npu.report.layers[0].text("shape");
      }
    }
  }
}

// The small network's add reads conv2's input (conv1's result) as its other
// operand, and may be planned in place on it: still bit-exact. The default
// config keeps the add as its own layer.
TEST(NpuResidualFusion, SmallNetworkAndDefaultConfig) {
  const std::string dir = EMBER_NPU_CONFIG_DIR;
  RunResult fused, plain;
  expectBitExact(smallNetwork(), dir + "/npu-16x16-v3.yaml", {}, &fused);
  expectBitExact(smallNetwork(), "", {}, &plain);
  EXPECT_EQ(plain.report.layers.size(), 5u);
}

TEST(NpuNetwork, DeterministicCyclesAndReport) {
  RunResult a = compileAndRun(smallNetwork(), "npu");
  RunResult b = compileAndRun(smallNetwork(), "npu");
  EXPECT_EQ(a.report.cycles, b.report.cycles);
  ASSERT_TRUE(a.outputs.count("logits"));
  EXPECT_TRUE(a.outputs.at("logits").bitwiseEqual(b.outputs.at("logits")));
  EXPECT_EQ(a.report.peakMacsPerCycle, 256u);
  EXPECT_GT(a.report.macs, 0u);
  ASSERT_EQ(a.report.layers.size(), 5u);  // conv1, conv2, residual, pool, fc (flatten is a view)
  EXPECT_EQ(a.report.layers[0].name, "conv1");
  EXPECT_GT(a.report.layers[0].cycles, 0u);
  EXPECT_GT(a.report.layers[0].estimatedCycles, 0u);
  EXPECT_FALSE(a.report.layers[0].text("tiles").empty());
  // conv1 MACs: 16x16 outputs x 16 channels x 27 taps (the npu also counts the junk columns it computes).
  EXPECT_GE(a.report.layers[0].macs, uint64_t(16 * 16 * 16 * 27));
}

TEST(NpuBackendOptions, BadConfigAndUnknownKey) {
  registerBuiltinBackends();
  auto backend = BackendRegistry::global().create("npu");
  ASSERT_TRUE(bool(backend));
  Error e = (*backend)->setOption("config", "/nonexistent/npu.yaml");
  EXPECT_TRUE(bool(e));
  e = (*backend)->setOption("frequency", "2");
  ASSERT_TRUE(bool(e));
  EXPECT_NE(e.message().find("frequency"), std::string::npos);
}

TEST(NpuBackendSupports, RejectsFloatAndZeroPointRhs) {
  registerBuiltinBackends();
  auto backend = BackendRegistry::global().create("npu");
  ASSERT_TRUE(bool(backend));
  Type f32(ElemKind::F32, {1, 4});
  EXPECT_FALSE((*backend)->supports(NodeInfo{OpKind::Add, {f32, f32}, {f32}, {false, false}, {}}));
  Type lhs(ElemKind::Int8Q, {4, 8}, 0.1f, 3), rhs(ElemKind::Int8Q, {8, 4}, 0.1f, 5),
      out(ElemKind::Int8Q, {4, 4}, 0.1f, 0);
  Type bias(ElemKind::Int32Q, {4}, 0.01f, 0), scales(ElemKind::F32, {4});
  const std::vector<bool> constantWeights{false, true, true, true};
  EXPECT_FALSE((*backend)->supports(
      NodeInfo{OpKind::QuantizedMatMul, {lhs, rhs, bias, scales}, {out}, constantWeights, {}}));
  rhs.offset = 0;
  EXPECT_TRUE((*backend)->supports(
      NodeInfo{OpKind::QuantizedMatMul, {lhs, rhs, bias, scales}, {out}, constantWeights, {}}));
}

// compile() folds weights, bias and scales into the weight image, so a claimed
// conv or matmul must have them as compile-time constants.
TEST(NpuBackendSupports, RejectsNonConstantWeights) {
  registerBuiltinBackends();
  auto backend = BackendRegistry::global().create("npu");
  ASSERT_TRUE(bool(backend));
  Type lhs(ElemKind::Int8Q, {4, 8}, 0.1f, 3), rhs(ElemKind::Int8Q, {8, 4}, 0.1f, 0),
      out(ElemKind::Int8Q, {4, 4}, 0.1f, 0);
  Type bias(ElemKind::Int32Q, {4}, 0.01f, 0), scales(ElemKind::F32, {4});
  const auto matmul = [&](std::vector<bool> constants) {
    return (*backend)->supports(
        NodeInfo{OpKind::QuantizedMatMul, {lhs, rhs, bias, scales}, {out}, std::move(constants), {}});
  };
  EXPECT_TRUE(matmul({false, true, true, true}));
  EXPECT_TRUE(matmul({false, false, true, true}));  // activation rhs (attention's Q.K^T), NpuTransformerTest
  EXPECT_FALSE(matmul({false, false, false, true}));  // ... but its bias must be a constant
  EXPECT_FALSE(matmul({false, true, false, true}));
  EXPECT_FALSE(matmul({}));  // constness unknown: not claimed
  Type x(ElemKind::Int8Q, {1, 4, 4, 8}, 0.1f, 3), filter(ElemKind::Int8Q, {4, 1, 1, 8}, 0.1f, 0),
      y(ElemKind::Int8Q, {1, 4, 4, 4}, 0.1f, 0);
  // A verified node: every attribute Ops.def declares (supports() reads them typed).
  const Attributes convAttrs{{"strides", std::vector<int64_t>{1, 1}},
                             {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                             {"dilations", std::vector<int64_t>{1, 1}},
                             {"group", int64_t(1)},
                             {"kind", std::string("i8q")},
                             {"scale", 0.1},
                             {"offset", int64_t(0)}};
  EXPECT_TRUE((*backend)->supports(
      NodeInfo{OpKind::QuantizedConv, {x, filter, bias, scales}, {y}, {false, true, true, true}, convAttrs}));
  EXPECT_FALSE((*backend)->supports(NodeInfo{
      OpKind::QuantizedConv, {x, filter, bias, scales}, {y}, {false, false, true, true}, convAttrs}));
}

// supports() sees the attributes and declines what the compiler cannot lower,
// so the partitioner places it on the fallback instead of compile() failing.
TEST(NpuBackendSupports, DeclinesAttributeVariantsTheCompilerRefuses) {
  registerBuiltinBackends();
  auto backend = BackendRegistry::global().create("npu");
  ASSERT_TRUE(bool(backend));
  Type x(ElemKind::Int8Q, {1, 8, 8, 4}, 0.1f, 0), pooled(ElemKind::Int8Q, {1, 4, 4, 4}, 0.1f, 0);
  // Whether the npu takes the pooling, and unsupportedReason's answer.
  const auto maxPool = [&](std::vector<int64_t> dilations, int64_t kernel) {
    Attributes attrs{{"kernel", std::vector<int64_t>{kernel, kernel}},
                     {"strides", std::vector<int64_t>{2, 2}},
                     {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                     {"dilations", std::move(dilations)},
                     {"ceil_mode", int64_t(0)}};
    const NodeInfo info{OpKind::MaxPool, {x}, {pooled}, {false}, attrs};
    return std::make_pair((*backend)->supports(info), (*backend)->unsupportedReason(info));
  };
  EXPECT_EQ(maxPool({1, 1}, 2), std::make_pair(true, std::string()));
  EXPECT_EQ(maxPool({2, 2}, 2), std::make_pair(false, std::string("the pooling unit has no dilation (2x2)")));
  const auto [wideTaken, wideWhy] = maxPool({1, 1}, 1000);  // beyond the pooling window field
  EXPECT_FALSE(wideTaken);
  EXPECT_EQ(wideWhy.rfind("a 1000x1000 window exceeds the pooling unit's ", 0), 0u) << wideWhy;
  const auto slice = [&](int64_t step) {
    Attributes attrs{{"starts", std::vector<int64_t>{0, 7, 0, 0}},
                     {"ends", std::vector<int64_t>{1, 8, 8, 4}},
                     {"steps", std::vector<int64_t>{1, step, 1, 1}}};
    return (*backend)->supports(NodeInfo{OpKind::Slice, {x}, {x}, {false}, attrs});
  };
  EXPECT_TRUE(slice(1));
  EXPECT_FALSE(slice(-1));
}

// A matmul whose right operand is an activation runs on the npu with the rest of
// the graph (NpuTransformerTest.cpp covers it further), bit-exact.
TEST(NpuMatMul, ActivationRhsRunsOnTheNpu) {
  const Builder build = [](Function& f) -> Error {
    Node* a = f.createPlaceholder("a", Type(ElemKind::Int8Q, {6, 32}, 0.04f, 7));
    Node* b = f.createPlaceholder("b", Type(ElemKind::Int8Q, {32, 16}, 0.03f, 0));
    Attributes mmAttrs{{"kind", std::string("i8q")}, {"scale", 0.2}, {"offset", int64_t(-10)}};
    EMBER_ASSIGN_OR_RETURN(
        Node * mm,
        f.create(OpKind::QuantizedMatMul, "qk",
                 {a, b, constantBias(f, "bias", 16, 3), constantScales(f, "scales", 16, false)}, mmAttrs));
    Node* c = f.createPlaceholder("c", Type(ElemKind::Int8Q, {6, 16}, 0.1f, 2));
    Attributes addAttrs{{"kind", std::string("i8q")}, {"scale", 0.25}, {"offset", int64_t(1)}};
    EMBER_ASSIGN_OR_RETURN(Node * add, f.create(OpKind::QuantizedAdd, "add", {mm, c}, addAttrs));
    f.addOutput("y", add);
    return Error::success();
  };
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  RunResult npu;
  expectBitExact(build, "", options, &npu);
  EXPECT_TRUE(npu.fallbackNodes.empty());
  EXPECT_GT(npu.report.cycles, 0u);
}

// A layer the engine cannot hold on this config (DeepLabV3's ASPP branch: a
// dilation-12 3x3 conv over 4x4x960, whose padded rows need more scratchpad
// than npu-16x16 has) is declined by supports(), so it falls back instead of
// failing the compile; the 1x1 conv after it still runs on the npu.
TEST(NpuConv, LayerNoTilingFitsFallsBack) {
  const Builder build = [](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {1, 4, 4, 960}, 0.05f, -3));
    auto conv = [&](const std::string& name, Node* in, int64_t c, int64_t o, int64_t k,
                    int64_t dilation) -> Expected<Node*> {
      Attributes attrs{{"strides", std::vector<int64_t>{1, 1}},
                       {"pads", std::vector<int64_t>(4, dilation * (k / 2))},
                       {"dilations", std::vector<int64_t>{dilation, dilation}},
                       {"group", int64_t(1)},
                       {"kind", std::string("i8q")},
                       {"scale", 0.09},
                       {"offset", int64_t(5)}};
      return f.create(OpKind::QuantizedConv, name,
                      {in, constantI8(f, name + ".w", {o, k, k, c}, 11), constantBias(f, name + ".b", o, 12),
                       constantScales(f, name + ".s", o, false)},
                      attrs);
    };
    EMBER_ASSIGN_OR_RETURN(Node * aspp, conv("aspp", x, 960, 256, 3, 12));
    EMBER_ASSIGN_OR_RETURN(Node * head, conv("head", aspp, 256, 16, 1, 1));
    f.addOutput("y", head);
    return Error::success();
  };
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  RunResult npu;
  expectBitExact(build, "", options, &npu);
  ASSERT_EQ(npu.fallbackNodes.size(), 1u);
  EXPECT_EQ(npu.fallbackNodes[0].name, "aspp");
  EXPECT_GT(npu.report.cycles, 0u);  // the head ran on the npu
}

// ---- Layers that overlap at the barrier, the batch as gemm rows (issue 17, item 3) ------

/// The shipped config `name` with `key: value` replaced (or appended under
/// `compiler:`), written to the test's temporary directory.
std::string configWith(const std::string& name, const std::string& key, bool value) {
  std::ifstream in(std::string(EMBER_NPU_CONFIG_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string setting = "  " + key + ": " + (value ? "true" : "false");
  const size_t at = yaml.find("  " + key + ":");
  if (at != std::string::npos)
    yaml.replace(at, yaml.find('\n', at) - at, setting);
  else
    yaml.replace(yaml.find("compiler:\n"), 10, "compiler:\n" + setting + "\n");
  std::string path = ::testing::TempDir() + "/" + key + (value ? "_on_" : "_off_") + name;
  std::ofstream(path) << yaml;
  return path;
}

/// Three convs in a row (3x3, 1x1, 3x3 stride 2): each layer's first weights
/// are loaded while the previous layer still computes.
Builder convChain(int64_t batch) {
  return [batch](Function& f) -> Error {
    Node* x = f.createPlaceholder("x", Type(ElemKind::Int8Q, {batch, 14, 14, 64}, 0.05f, -3));
    auto conv = [&](const std::string& name, Node* in, int64_t c, int64_t o, int64_t k,
                    int64_t stride) -> Expected<Node*> {
      Attributes attrs{{"strides", std::vector<int64_t>{stride, stride}},
                       {"pads", std::vector<int64_t>(4, k / 2)},
                       {"dilations", std::vector<int64_t>{1, 1}},
                       {"group", int64_t(1)},
                       {"kind", std::string("i8q")},
                       {"scale", 0.09},
                       {"offset", int64_t(5)},
                       {"clip_min", 0.0}};
      return f.create(OpKind::QuantizedConv, name,
                      {in, constantI8(f, name + ".w", {o, k, k, c}, uint32_t(c + o)),
                       constantBias(f, name + ".b", o, uint32_t(o)), constantScales(f, name + ".s", o, true)},
                      attrs);
    };
    EMBER_ASSIGN_OR_RETURN(Node * a, conv("a", x, 64, 128, 3, 1));
    EMBER_ASSIGN_OR_RETURN(Node * b, conv("b", a, 128, 256, 1, 1));
    EMBER_ASSIGN_OR_RETURN(Node * c, conv("c", b, 256, 64, 3, 2));
    f.addOutput("y", c);
    return Error::success();
  };
}

// compiler.prefetch_weights: bit-exact on both v3 configs, and the layers
// overlap (fewer cycles than the same program with the full barrier).
TEST(NpuLayerOverlap, WeightsPrefetchedAcrossTheBarrier) {
  for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
    SCOPED_TRACE(cfg);
    RunResult on, off;
    expectBitExact(convChain(1), configWith(cfg, "prefetch_weights", true), {}, &on);
    expectBitExact(convChain(1), configWith(cfg, "prefetch_weights", false), {}, &off);
    ASSERT_EQ(on.report.layers.size(), 3u);
    EXPECT_LT(on.report.cycles, off.report.cycles);
  }
}

// compiler.batch_rows: a batch's 1x1 convs run as one image of batch x height
// rows (the report's shape says so), bit-exact; 3x3 convs still run image by
// image. (Whether it is faster depends on the tiling: on ResNet-50 at batch 4
// it is, docs/npu/compiler.md.)
TEST(NpuBatchRows, PointwiseConvsStreamEveryImage) {
  for (int64_t batch : {2, 4})
    for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(std::string(cfg) + " batch " + std::to_string(batch));
      RunResult on;
      expectBitExact(convChain(batch), configWith(cfg, "batch_rows", true), {}, &on);
      ASSERT_EQ(on.report.layers.size(), 3u);
      EXPECT_EQ(on.report.layers[1].text("shape").rfind("1x" + std::to_string(14 * batch) + "x14x128", 0), 0u)
          << on.report.layers[1].text("shape");
      EXPECT_EQ(on.report.layers[0].text("shape").rfind(std::to_string(batch) + "x14x14x64", 0), 0u)
          << on.report.layers[0].text("shape");
    }
  // A strided 1x1 (gathered by DMA) over a batch, fused with its residual add.
  expectBitExact(residualBuilder({"batch4_strided", 16, 16, 32, 64, 1, 2, true, true, false, 4}),
                 configWith("npu-64x64-v3.yaml", "batch_rows", true));
}

// compiler.dense_stem: a stride-2 conv over few channels as a stride-1 conv
// over 2x2 pixel blocks, bit-exact; the report's shape says when it applied
// (an odd-sized input keeps the plain lowering).
TEST(NpuDenseStem, StrideTwoConvOnPixelBlocks) {
  struct StemCase {
    ConvCase conv;
    bool blocksOn16, blocksOn64;
  };
  for (const StemCase& p :
       {StemCase{{"stem_7x7", 1, 32, 32, 3, 64, 7, 2, 3, 1, 1, true, true}, true, true},
        StemCase{{"stem_7x7_batch2", 2, 20, 24, 3, 16, 7, 2, 3, 1, 1, false, true}, true, true},
        StemCase{{"k3_c4", 1, 16, 16, 4, 32, 3, 2, 1, 1, 1, false, false}, false, true},
        StemCase{{"k5_pad2", 1, 18, 18, 3, 24, 5, 2, 2, 1, 1, true, false}, false, true},
        StemCase{{"odd_input", 1, 31, 31, 3, 16, 7, 2, 3, 1, 1, false, true}, false, false}})
    for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(std::string(p.conv.name) + " on " + cfg);
      RunResult npu;
      expectBitExact(convBuilder(p.conv), configWith(cfg, "dense_stem", true), {}, &npu);
      ASSERT_EQ(npu.report.layers.size(), 1u);
      const bool blocks = std::string(cfg).find("16x16") != std::string::npos ? p.blocksOn16 : p.blocksOn64;
      EXPECT_EQ(npu.report.layers[0].text("shape").find("2x2 blocks") != std::string::npos, blocks)
          << npu.report.layers[0].text("shape");
    }
}

/// A conv (with ReLU) and a MaxPool of its result, like ResNet's stem.
struct ConvPoolCase {
  ConvCase conv;
  int64_t poolK, poolStride, poolPad;
  bool ceil;
  bool fusedOn16, fusedOn64;
};

Builder convPoolBuilder(const ConvPoolCase& p) {
  return [p](Function& f) -> Error {
    EMBER_RETURN_IF_ERROR(convBuilder(p.conv)(f));
    const NodeValue conv = f.outputs().back().second;
    f.outputs().pop_back();
    Attributes attrs{{"kernel", std::vector<int64_t>{p.poolK, p.poolK}},
                     {"strides", std::vector<int64_t>{p.poolStride, p.poolStride}},
                     {"pads", std::vector<int64_t>(4, p.poolPad)},
                     {"ceil_mode", int64_t(p.ceil)},
                     {"dilations", std::vector<int64_t>{1, 1}}};
    EMBER_ASSIGN_OR_RETURN(Node * pool, f.create(OpKind::MaxPool, "pool", {conv}, attrs));
    f.addOutput("y", pool);
    return Error::success();
  };
}

// compiler.fuse_max_pool: the pooling runs in the conv's epilogue (one layer,
// "+ max pool") where the bands are whole pooling rows and the estimate says
// it pays, bit-exact either way on both v3 configs; the plain configs keep
// two layers.
TEST(NpuMaxPoolFusion, ConvThenMaxPool) {
  for (const ConvPoolCase& p :
       {ConvPoolCase{{"stem_7x7", 1, 32, 32, 3, 64, 7, 2, 3, 1, 1, false, true}, 3, 2, 1, false, true, true},
        // Per-channel multipliers: one requant per channel and row in the
        // fused epilogue, which the estimate finds too slow.
        ConvPoolCase{
            {"k3_per_channel", 1, 16, 16, 24, 40, 3, 1, 1, 1, 1, true, true}, 3, 2, 1, false, false, false},
        ConvPoolCase{
            {"k3_batch2", 2, 12, 14, 16, 32, 3, 1, 1, 1, 1, false, false}, 3, 2, 1, false, true, true},
        ConvPoolCase{
            {"pool2_no_halo", 1, 12, 12, 8, 16, 3, 1, 1, 1, 1, false, true}, 2, 2, 0, false, true, true},
        ConvPoolCase{
            {"ceil_mode", 1, 12, 12, 8, 16, 3, 1, 1, 1, 1, false, true}, 3, 2, 1, true, false, false},
        ConvPoolCase{
            {"odd_rows", 1, 13, 13, 8, 16, 3, 1, 1, 1, 1, false, true}, 3, 2, 1, false, false, false},
        ConvPoolCase{
            {"pool_stride1", 1, 10, 10, 8, 16, 3, 1, 1, 1, 1, false, true}, 3, 1, 1, false, false, false}})
    for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(std::string(p.conv.name) + " on " + cfg);
      RunResult on, off;
      expectBitExact(convPoolBuilder(p), configWith(cfg, "fuse_max_pool", true), {}, &on);
      expectBitExact(convPoolBuilder(p), configWith(cfg, "fuse_max_pool", false), {}, &off);
      const bool fused = std::string(cfg).find("16x16") != std::string::npos ? p.fusedOn16 : p.fusedOn64;
      ASSERT_EQ(on.report.layers.size(), fused ? 1u : 2u);
      EXPECT_EQ(on.report.layers[0].text("shape").find("+ max pool") != std::string::npos, fused)
          << on.report.layers[0].text("shape");
      EXPECT_EQ(off.report.layers.size(), 2u);
    }
}

// compiler.residual_out_of_place: the fused add reads the requantized tile
// from its own buffer; bit-exact with and without on both v3 configs.
TEST(NpuResidualFusion, OutOfPlaceBitExact) {
  for (const ResidualCase& p :
       {ResidualCase{"pointwise_lhs", 14, 14, 64, 256, 1, 1, true, false, false},
        ResidualCase{"k3_stride2_rhs_per_channel", 15, 15, 24, 40, 3, 2, false, true, false},
        ResidualCase{"batch4_pointwise", 7, 7, 128, 256, 1, 1, true, true, false, 4}})
    for (const char* cfg : {"npu-16x16-v3.yaml", "npu-64x64-v3.yaml"})
      for (bool outOfPlace : {false, true}) {
        SCOPED_TRACE(std::string(p.name) + " on " + cfg + (outOfPlace ? ", out of place" : ", in place"));
        RunResult npu;
        expectBitExact(residualBuilder(p), configWith(cfg, "residual_out_of_place", outOfPlace), {}, &npu);
        ASSERT_EQ(npu.report.layers.size(), 1u);
      }
}

}  // namespace
}  // namespace ember
