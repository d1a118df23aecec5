// Kinds and ranks some backends decline: the reference backend runs f64, the
// cpu backend declines it so its f64 nodes fall back to the reference (without
// a fallback the compile error names the node, the op and the backend), and
// the npu declines ranks above its bundle's symbol rank.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

/// y = Cast<f32>(Tanh(Cast<f64>(x) * c)) with c = 1 + 2^-40 (exact only in
/// double): an f32 model with an f64 island.
void buildIsland(Function& f) {
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4}));
  Node* wide = *f.create(OpKind::Cast, "to_f64", {x->result()}, Attributes{{"to", std::string("f64")}});
  Tensor c(Type(ElemKind::F64, {}));
  c.as<double>()[0] = 1.0 + 0x1p-40;
  Node* constant = f.createConstant("c", std::move(c));
  Node* scaled = *f.create(OpKind::Mul, "scaled", {wide->result(), constant->result()});
  Node* tanh = *f.create(OpKind::Tanh, "tanh", {scaled->result()});
  Node* narrow = *f.create(OpKind::Cast, "to_f32", {tanh->result()}, Attributes{{"to", std::string("f32")}});
  f.addOutput("y", narrow->result());
}

Tensor input() {
  Tensor t(Type(ElemKind::F32, {4}));
  const float v[] = {-1.5f, -0.25f, 0.5f, 2.0f};
  for (int i = 0; i < 4; ++i) t.as<float>()[i] = v[i];
  return t;
}

TEST(F64Fallback, CpuAndNpuDeclineF64AndTheReferenceRunsIt) {
  registerBuiltinBackends();
  auto cpu = BackendRegistry::global().create("cpu");
  ASSERT_TRUE(cpu) << cpu.error().message();
  NodeInfo info;
  info.kind = OpKind::Tanh;
  info.inputTypes = {Type(ElemKind::F64, {4})};
  info.resultTypes = {Type(ElemKind::F64, {4})};
  EXPECT_FALSE((*cpu)->supports(info));
  auto reference = BackendRegistry::global().create("reference");
  EXPECT_TRUE((*reference)->supports(info));
  auto npu = BackendRegistry::global().create("npu");
  ASSERT_TRUE(npu) << npu.error().message();
  EXPECT_FALSE((*npu)->supports(info));

  Function f("island");
  buildIsland(f);
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  auto model = compileFunction(f, cpu.take(), options);
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_FALSE(model->report.fallbackNodes.empty());
  for (const FallbackNode& node : model->report.fallbackNodes) EXPECT_EQ(node.backend, "reference");

  ExecutionContext context;
  context.setInput("x", input());
  ASSERT_FALSE(model->function->execute(context));
  const Tensor* y = context.output("y");
  ASSERT_NE(y, nullptr);
  // float(tanh(double(x) * (1 + 2^-40))), with std::tanh in double as the oracle.
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y->as<float>()[i], float(std::tanh(double(input().as<float>()[i]) * (1.0 + 0x1p-40)))) << i;
}

TEST(F64Fallback, WithoutAFallbackTheErrorNamesTheNode) {
  registerBuiltinBackends();
  Function f("island");
  buildIsland(f);
  auto model = compileFunction(f, BackendRegistry::global().create("cpu").take());
  ASSERT_FALSE(model);
  const std::string& message = model.error().message();
  EXPECT_NE(message.find("cpu"), std::string::npos) << message;
  EXPECT_NE(message.find("node 'to_f64' (Cast)"), std::string::npos) << message;
  EXPECT_NE(message.find("results (f64<4>)"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(RankFallback, NpuDeclinesRanksItsBundleCannotHold) {
  registerBuiltinBackends();
  auto npu = BackendRegistry::global().create("npu");
  ASSERT_TRUE(npu) << npu.error().message();
  auto transposeOf = [](Dims dims) {
    NodeInfo info;
    info.kind = OpKind::Transpose;
    std::vector<int64_t> perm(dims.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(perm.size() - 1 - i);
    info.attributes = Attributes{{"perm", perm}};
    info.inputTypes = {Type(ElemKind::Int8Q, dims, 0.5f, 0)};
    info.resultTypes = {Type(ElemKind::Int8Q, Dims(dims.rbegin(), dims.rend()), 0.5f, 0)};
    return info;
  };
  EXPECT_TRUE((*npu)->supports(transposeOf({2, 1, 2, 1, 2, 3})));
  EXPECT_FALSE((*npu)->supports(transposeOf({2, 1, 2, 1, 2, 1, 3})));
  EXPECT_FALSE((*npu)->supports(transposeOf({2, 1, 2, 1, 2, 1, 1, 3})));
}

}  // namespace
}  // namespace ember
