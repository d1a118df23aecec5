// The NPU operator sweep's attention matmuls: QuantizedMatMul with an
// activation right operand (Q.K^T and scores.V per head) over 30+ shapes,
// sequence lengths 1 to 512 and head dims 16 to 128 (most not multiples of the
// array), bit-exact against the reference backend on npu-16x16, npu-16x16-v3
// and npu-64x64-v3, with nothing on the fallback.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "SweepRun.h"

namespace ember {
namespace {

struct AttentionShape {
  int64_t heads, m, k, n;  ///< [heads, m, k] x [heads, k, n]
  int32_t lhsZero, rhsZero;
};

std::string nameOf(const AttentionShape& s) {
  return "attention_matmul/h" + std::to_string(s.heads) + "/" + std::to_string(s.m) + "x" +
         std::to_string(s.k) + "x" + std::to_string(s.n) + "/z" + std::to_string(s.lhsZero) + "," +
         std::to_string(s.rhsZero);
}

Expected<Tensor> runShape(const AttentionShape& s, const std::string& backendName,
                          const std::string& config) {
  Function f("sweep");
  const Type lhsType(ElemKind::Int8Q, {s.heads, s.m, s.k}, 0.02f, s.lhsZero);
  const Type rhsType(ElemKind::Int8Q, {s.heads, s.k, s.n}, 0.03f, s.rhsZero);
  Node* a = f.createPlaceholder("a", lhsType);
  Node* b = f.createPlaceholder("b", rhsType);
  Tensor bias(Type(ElemKind::Int32Q, {s.n}, 0.02f * 0.03f, 0));
  Tensor scales(Type(ElemKind::F32, {s.n}));
  for (int64_t j = 0; j < s.n; ++j) {
    bias.as<int32_t>()[j] = int32_t(j * 53 % 400) - 200;
    scales.as<float>()[j] = 0.03f;
  }
  const double outScale = 0.02 * 0.03 * 74.0 * 74.0 * std::sqrt(double(s.k)) * 3 / 128;
  auto mm = f.create(
      OpKind::QuantizedMatMul, "op",
      {a, b, f.createConstant("bias", std::move(bias)), f.createConstant("scales", std::move(scales))},
      {{"kind", std::string("i8q")}, {"scale", outScale}, {"offset", int64_t(-2)}});
  if (!mm) return mm.error();
  f.addOutput("out", *mm);
  std::mt19937 rng(uint32_t(s.m * 131 + s.k * 7 + s.n));
  std::uniform_int_distribution<int> dist(-128, 127);
  std::map<std::string, Tensor> inputs;
  for (const Type* type : {&lhsType, &rhsType}) {
    Tensor t(*type);
    for (int64_t i = 0; i < type->numElements(); ++i) t.as<int8_t>()[i] = int8_t(dist(rng));
    inputs.emplace(type == &lhsType ? "a" : "b", std::move(t));
  }
  return sweep::runOnBackend(f, backendName, config, inputs);
}

TEST(NpuSweep, ActivationMatMul) {
  std::vector<AttentionShape> shapes;
  // Q.K^T [S, dh] x [dh, S] and scores.V [S, S] x [S, dh] (the softmax's codes start at -128).
  const std::vector<std::pair<int64_t, int64_t>> seqAndHead = {
      {1, 16},    {2, 16},   {7, 24},   {16, 16},  {17, 32},  {31, 16},  {33, 48},
      {50, 64},   {64, 64},  {77, 40},  {97, 80},  {128, 64}, {129, 96}, {197, 64},
      {200, 128}, {256, 32}, {300, 16}, {512, 16}, {512, 64}};
  for (size_t i = 0; i < seqAndHead.size(); ++i) {
    const auto [seq, head] = seqAndHead[i];
    const int64_t heads = seq * seq * head > 4'000'000 ? 1 : seq <= 64 ? 4 : 2;
    shapes.push_back({heads, seq, head, seq, int32_t(i % 9) - 4, int32_t(i % 7) - 3});
    if (i % 2 == 0 || seq >= 256) shapes.push_back({heads, seq, seq, head, -128, int32_t(i % 5) - 2});
  }
  ASSERT_GE(shapes.size(), 30u);
  for (const AttentionShape& s : shapes)
    for (const char* config : {"npu-16x16.yaml", "npu-16x16-v3.yaml", "npu-64x64-v3.yaml"}) {
      SCOPED_TRACE(nameOf(s) + " on " + config);
      auto expected = runShape(s, "reference", "");
      ASSERT_TRUE(expected) << expected.error().message();
      auto got = runShape(s, "npu", config);
      ASSERT_TRUE(got) << got.error().message();
      ASSERT_EQ(got->sizeInBytes(), expected->sizeInBytes());
      EXPECT_EQ(sweep::differingElements(*got, *expected), 0) << nameOf(s) << " on " << config;
    }
}

}  // namespace
}  // namespace ember
