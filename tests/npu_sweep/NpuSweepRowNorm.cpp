// The NPU operator sweep's row normalisations (ISA v4 softmax and layernorm):
// QuantizedSoftmax over attention scores [heads, S, S] (no mask, the causal
// mask, a random mask) and QuantizedLayerNorm over [S, d], 30+ shapes each,
// sequence lengths 1 to 512 and head dims / channels 16 to 1024 (most not
// multiples of the array), bit-exact against the reference backend on
// npu-16x16, npu-16x16-v3 and npu-64x64-v3, with nothing on the fallback.
#include <gtest/gtest.h>

#include <random>

#include "SweepRun.h"

namespace ember {
namespace {

enum class Mask { None, Causal, Random };

struct RowNormShape {
  bool softmax;
  int64_t heads, rows, cols;  ///< input [heads, rows, cols]
  Mask mask = Mask::None;
};

std::string nameOf(const RowNormShape& s) {
  return std::string(s.softmax ? "softmax" : "layernorm") + "/" + std::to_string(s.heads) + "x" +
         std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/mask" + std::to_string(int(s.mask));
}

Expected<Node*> buildOp(Function& f, const RowNormShape& s, Node* x) {
  if (s.softmax) {
    Tensor keep(Type(ElemKind::Bool, s.mask == Mask::None ? Dims{1} : Dims{s.rows, s.cols}));
    std::mt19937 rng(uint32_t(s.rows * 31 + s.cols));
    for (int64_t i = 0; i < keep.type().numElements(); ++i)
      keep.as<bool>()[i] = s.mask == Mask::None     ? true
                           : s.mask == Mask::Causal ? i % s.cols <= i / s.cols
                                                    : rng() % 4 != 0;
    return f.create(OpKind::QuantizedSoftmax, "op", {x, f.createConstant("mask", std::move(keep))},
                    {{"axis", int64_t(-1)},
                     {"kind", std::string("i8q")},
                     {"scale", 1.0 / 255},
                     {"offset", int64_t(-128)}});
  }
  Tensor gamma(Type(ElemKind::F32, {s.cols})), beta(Type(ElemKind::F32, {s.cols}));
  std::mt19937 rng(uint32_t(s.cols * 17 + s.rows));
  std::uniform_real_distribution<float> g(-2.0f, 2.0f), b(-1.0f, 1.0f);
  for (int64_t j = 0; j < s.cols; ++j) gamma.as<float>()[j] = g(rng), beta.as<float>()[j] = b(rng);
  return f.create(OpKind::QuantizedLayerNorm, "op",
                  {x, f.createConstant("gamma", std::move(gamma)), f.createConstant("beta", std::move(beta))},
                  {{"epsilon", 1e-5},
                   {"axis", int64_t(-1)},
                   {"kind", std::string("i8q")},
                   {"scale", 0.035},
                   {"offset", int64_t(-3)}});
}

Expected<Tensor> runShape(const RowNormShape& s, const std::string& backendName, const std::string& config) {
  Function f("sweep");
  const Type inType(ElemKind::Int8Q, {s.heads, s.rows, s.cols}, s.softmax ? 0.1f : 0.04f, 7);
  EMBER_ASSIGN_OR_RETURN(Node * op, buildOp(f, s, f.createPlaceholder("x", inType)));
  f.addOutput("out", op);
  std::mt19937 rng(uint32_t(s.heads * 7 + s.rows * 131 + s.cols));
  std::uniform_int_distribution<int> dist(-128, 127);
  Tensor x(inType);
  for (int64_t i = 0; i < inType.numElements(); ++i) x.as<int8_t>()[i] = int8_t(dist(rng));
  return sweep::runOnBackend(f, backendName, config, {{"x", x}});
}

void sweepRowNorm(const std::vector<RowNormShape>& shapes) {
  ASSERT_GE(shapes.size(), 30u);
  for (const RowNormShape& s : shapes) {
    auto expected = runShape(s, "reference", "");
    ASSERT_TRUE(expected) << nameOf(s) << ": " << expected.error().message();
    for (const char* config : {"npu-16x16.yaml", "npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(nameOf(s) + " on " + config);
      auto got = runShape(s, "npu", config);
      ASSERT_TRUE(got) << got.error().message();
      ASSERT_EQ(got->sizeInBytes(), expected->sizeInBytes());
      EXPECT_EQ(sweep::differingElements(*got, *expected), 0) << nameOf(s) << " on " << config;
    }
  }
}

TEST(NpuSweep, Softmax) {
  // Attention scores [heads, S, S]; and rows of a head dim's length [heads, S, dh].
  const std::vector<int64_t> seqs = {1,  2,  5,   7,   16,  17,  31,  33,  50,  64,
                                     77, 97, 128, 129, 197, 200, 256, 300, 400, 512};
  std::vector<RowNormShape> shapes;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int64_t s = seqs[i], heads = s <= 64 ? 4 : s <= 256 ? 2 : 1;
    shapes.push_back({true, heads, s, s, Mask(i % 3)});
  }
  for (int64_t dh : {16, 24, 40, 64, 80, 96, 100, 128, 129, 1000})
    shapes.push_back({true, 2, 1 + dh % 37, dh, dh % 2 ? Mask::Random : Mask::None});
  sweepRowNorm(shapes);
}

TEST(NpuSweep, LayerNorm) {
  // [1, S, d] over the last axis: sequence lengths 1..512, channels 16..1024.
  const std::vector<std::pair<int64_t, int64_t>> seqAndChannels = {
      {1, 16},    {2, 16},    {3, 17},   {7, 24},   {16, 32},   {17, 48},   {31, 64},   {33, 64},
      {50, 72},   {64, 96},   {77, 100}, {97, 128}, {128, 160}, {129, 192}, {197, 256}, {200, 300},
      {256, 320}, {300, 384}, {512, 64}, {512, 16}, {1, 1024},  {5, 1000},  {16, 768},  {17, 513},
      {40, 640},  {3, 1023},  {9, 900},  {64, 512}, {100, 200}, {11, 33},   {13, 129}};
  std::vector<RowNormShape> shapes;
  shapes.reserve(seqAndChannels.size());
  for (const auto& [seq, channels] : seqAndChannels) shapes.push_back({false, 1, seq, channels});
  sweepRowNorm(shapes);
}

}  // namespace
}  // namespace ember
