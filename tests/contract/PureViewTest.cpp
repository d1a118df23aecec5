// Pure views (ops with the View trait, e.g. Reshape) never cost a partition:
// a backend whose supports() refuses Reshape keeps one partition across it,
// and the results match the reference backend.
#include <gtest/gtest.h>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;

/// The reference backend, refusing Reshape (and any instruction of that kind).
class NoReshapeBackend final : public Backend {
 public:
  std::string name() const override { return "no-reshape"; }
  bool supports(const NodeInfo& info) const override {
    return info.kind != OpKind::Reshape && inner_->supports(info);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    for (const Instruction& inst : ir.instructions())
      if (inst.kind == OpKind::Reshape) return makeError("no-reshape was given '", inst.name, "'");
    return inner_->compile(ir);
  }

 private:
  std::unique_ptr<Backend> inner_ = BackendRegistry::global().create("reference").take();
};

Tensor ramp(Type type) {
  Tensor t(std::move(type));
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.type().numElements(); ++i) p[i] = float(i) * 0.25f - 1.0f;
  return t;
}

/// x[2,6] -> (Relu) -> Reshape [3,4] -> Sigmoid -> y; `leadingRelu` false puts
/// the Reshape right after the model input.
std::unique_ptr<Function> model(bool leadingRelu) {
  auto f = std::make_unique<Function>("views");
  NodeValue x = f->createPlaceholder("x", Type(ElemKind::F32, {2, 6}));
  if (leadingRelu) x = f->create(OpKind::Relu, "relu", {x}).take()->result();
  Node* reshape = f->create(OpKind::Reshape, "reshape", {x}, {{"shape", std::vector<int64_t>{3, 4}}}).take();
  Node* sigmoid = f->create(OpKind::Sigmoid, "sigmoid", {reshape->result()}).take();
  f->addOutput("y", sigmoid->result());
  return f;
}

TEST(PureViews, ReshapeRefusedByTheTargetSplitsNoPartition) {
  registerBuiltinBackends();
  EXPECT_TRUE(opInfo(OpKind::Reshape).has(View));
  for (bool leadingRelu : {true, false}) {
    SCOPED_TRACE(leadingRelu ? "relu -> reshape -> sigmoid" : "input -> reshape -> sigmoid");
    CompileOptions options;
    options.optimizeGraph = false;  // keep the Reshape
    options.verifyEachPass = true;
    options.fallbackBackends = {"reference"};
    auto f = model(leadingRelu);
    auto compiled = compileFunction(*f, std::make_unique<NoReshapeBackend>(), options);
    ASSERT_TRUE(compiled) << compiled.error().message();
    ASSERT_EQ(compiled->report.partitions.size(), 1u);
    EXPECT_EQ(compiled->report.partitions[0].rfind("no-reshape:", 0), 0u) << compiled->report.partitions[0];
    EXPECT_TRUE(compiled->report.fallbackNodes.empty());

    Tensor x = ramp(Type(ElemKind::F32, {2, 6}));
    ExecutionContext context;
    context.setInput("x", x);
    ASSERT_FALSE(compiled->function->execute(context));
    auto reference = model(leadingRelu);
    auto want = compileAndRun(*reference, "reference", {{"x", x}});
    ASSERT_TRUE(want) << want.error().message();
    ASSERT_TRUE(context.output("y"));
    EXPECT_TRUE(context.output("y")->bitwiseEqual(want->at("y")));
  }
}

/// Without fallback backends, a target that refuses Reshape still compiles a
/// model with one: the Reshape is a view, not a node it must run.
TEST(PureViews, ReshapeRefusedWithoutFallbackStillCompiles) {
  registerBuiltinBackends();
  CompileOptions options;
  options.optimizeGraph = false;
  auto f = model(true);
  auto compiled = compileFunction(*f, std::make_unique<NoReshapeBackend>(), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->report.partitions.size(), 1u);
}

/// A view with no compute around it (input -> Reshape -> output) is placed
/// by supports() like any node: the refusing target hands it to the fallback,
/// and without a fallback it is an error naming it.
TEST(PureViews, ViewOnlyModelIsPlacedBySupports) {
  registerBuiltinBackends();
  auto viewOnly = [] {
    auto f = std::make_unique<Function>("view_only");
    Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {2, 6}));
    Node* reshape =
        f->create(OpKind::Reshape, "reshape", {x}, {{"shape", std::vector<int64_t>{3, 4}}}).take();
    f->addOutput("y", reshape->result());
    return f;
  };
  CompileOptions options;
  options.optimizeGraph = false;
  options.fallbackBackends = {"reference"};
  auto f = viewOnly();
  auto compiled = compileFunction(*f, std::make_unique<NoReshapeBackend>(), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  ASSERT_EQ(compiled->report.partitions.size(), 1u);
  EXPECT_EQ(compiled->report.partitions[0].rfind("reference:", 0), 0u) << compiled->report.partitions[0];
  ASSERT_EQ(compiled->report.fallbackNodes.size(), 1u);
  EXPECT_EQ(compiled->report.fallbackNodes[0].name, "reshape");

  options.fallbackBackends.clear();
  auto g = viewOnly();
  auto refused = compileFunction(*g, std::make_unique<NoReshapeBackend>(), options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("node 'reshape' (Reshape): unsupported by backend 'no-reshape'"),
            std::string::npos)
      << refused.error().message();
}

}  // namespace
