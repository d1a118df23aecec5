// The runtime's partitioner: nodes the target lacks run on a fallback backend,
// in as few partitions as the graph allows, with the same results.
#include <gtest/gtest.h>

#include "backends/BuiltinBackends.h"
#include "ember/Plugin.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

/// The reference backend restricted to Add: everything else must fall back.
class AddOnlyBackend : public Backend {
 public:
  AddOnlyBackend() : inner_(BackendRegistry::global().create("reference").take()) {}
  std::string name() const override { return "add-only"; }
  bool supports(const NodeInfo& info) const override { return info.kind == OpKind::Add; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    for (const Instruction& instr : ir.instructions())
      if (instr.kind != OpKind::Add && opInfo(instr.kind).category != OpCategory::IROnly)
        return makeError("add-only was given '", instr.name, "' (", opInfo(instr.kind).name, ")");
    return inner_->compile(ir);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

Tensor filled(Type type, float start) {
  Tensor t(type);
  for (int64_t i = 0; i < type.numElements(); ++i) t.as<float>()[i] = start + 0.25f * float(i);
  return t;
}

/// out = ((x + y) * y + x) with a second output tapping x + y.
void buildGraph(Function& f) {
  Type type = Type(ElemKind::F32, {2, 3});
  Node* x = f.createPlaceholder("x", type);
  Node* y = f.createPlaceholder("y", type);
  Node* sum = *f.create(OpKind::Add, "sum", {x->result(), y->result()});
  Node* product = *f.create(OpKind::Mul, "product", {sum->result(), y->result()});
  Node* result = *f.create(OpKind::Add, "result", {product->result(), x->result()});
  f.addOutput("out", result->result());
  f.addOutput("tap", sum->result());
}

TEST(PartitionerTest, FallsBackAndMatchesReference) {
  registerBuiltinBackends();
  Type type = Type(ElemKind::F32, {2, 3});
  std::map<std::string, Tensor> inputs{{"x", filled(type, -1)}, {"y", filled(type, 0.5f)}};

  Function expectedFn("expected");
  buildGraph(expectedFn);
  auto expected = compileAndRun(expectedFn, "reference", inputs);
  ASSERT_TRUE(expected) << expected.error().message();

  Function f("partitioned");
  buildGraph(f);
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  auto model = compileFunction(f, std::make_unique<AddOnlyBackend>(), options);
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(model->report.fallbackNodes.size(), 1u);
  EXPECT_EQ(model->report.fallbackNodes[0].name, "product");
  EXPECT_EQ(model->report.fallbackNodes[0].backend, "reference");
  EXPECT_NE(model->report.fallbackNodes[0].reason.find("Mul"), std::string::npos);
  // No unsupportedReason: nothing follows the types.
  EXPECT_EQ(model->report.fallbackNodes[0].reason.back(), ')') << model->report.fallbackNodes[0].reason;
  ASSERT_EQ(model->report.partitions.size(), 3u);
  EXPECT_EQ(model->report.partitions[0].rfind("add-only:", 0), 0u);
  EXPECT_EQ(model->report.partitions[1].rfind("reference:", 0), 0u);

  ExecutionContext context;
  for (auto& [name, tensor] : inputs) context.setInput(name, tensor);
  ASSERT_FALSE(model->function->execute(context));
  for (const char* name : {"out", "tap"}) {
    ASSERT_NE(context.output(name), nullptr) << name;
    EXPECT_TRUE(context.output(name)->bitwiseEqual(expected->at(name))) << name;
  }
}

TEST(PartitionerTest, WithoutFallbackAnUnsupportedNodeIsAnError) {
  registerBuiltinBackends();
  Function f("strict");
  buildGraph(f);
  auto model = compileFunction(f, std::make_unique<AddOnlyBackend>(), CompileOptions{});
  ASSERT_FALSE(model);
  EXPECT_NE(model.error().message().find("node 'product' (Mul)"), std::string::npos)
      << model.error().message();
}

/// AddOnlyBackend that says why it refuses a node, with the node's size.
class ExplainingAddOnlyBackend : public AddOnlyBackend {
 public:
  std::string unsupportedReason(const NodeInfo& info) const override {
    if (supports(info)) return "";
    return "only Add; this node has " + std::to_string(info.inputTypes[0].numElements()) + " elements";
  }
};

TEST(PartitionerTest, FallbackReasonAndErrorCarryTheBackendsReason) {
  registerBuiltinBackends();
  Function f("explained");
  buildGraph(f);
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  auto model = compileFunction(f, std::make_unique<ExplainingAddOnlyBackend>(), options);
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(model->report.fallbackNodes.size(), 1u);
  EXPECT_EQ(model->report.fallbackNodes[0].name, "product");
  const std::string& reason = model->report.fallbackNodes[0].reason;
  EXPECT_NE(reason.find("does not support Mul"), std::string::npos) << reason;
  EXPECT_NE(reason.find(": only Add; this node has 6 elements"), std::string::npos) << reason;

  // Without a fallback, the error names the node and each backend's reason.
  Function strict("explained-strict");
  buildGraph(strict);
  auto refused = compileFunction(strict, std::make_unique<ExplainingAddOnlyBackend>(), CompileOptions{});
  ASSERT_FALSE(refused);
  const std::string& message = refused.error().message();
  EXPECT_NE(message.find("node 'product' (Mul)"), std::string::npos) << message;
  EXPECT_NE(message.find("('add-only': only Add; this node has 6 elements)"), std::string::npos) << message;
}

TEST(PartitionerTest, MemoryLimitIsEnforced) {
  registerBuiltinBackends();
  Function f("limited");
  buildGraph(f);
  CompileOptions options;
  options.memoryLimitBytes = 16;
  auto model = compileFunction(f, BackendRegistry::global().create("reference").take(), options);
  ASSERT_FALSE(model);
  EXPECT_NE(model.error().message().find("above the memory limit of 16 bytes"), std::string::npos)
      << model.error().message();
}

/// A backend that supports nothing and refuses to compile: a model must never
/// reach it when no node runs on it.
class NothingBackend : public Backend {
 public:
  std::string name() const override { return "nothing"; }
  bool supports(const NodeInfo&) const override { return false; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    return makeError("nothing was asked to compile");
  }
};

/// A fallback that runs nothing and says so.
class RefusingBackend : public NothingBackend {
 public:
  std::string name() const override { return "refusing"; }
  std::string unsupportedReason(const NodeInfo&) const override { return "refuses everything"; }
};

// No backend of the chain takes the node: the partitioner's error gives each one's reason.
TEST(PartitionerTest, NoBackendTakesTheNodeAndEachSaysWhy) {
  registerBuiltinBackends();
  static const EmberBackendPlugin refusing{EMBER_PLUGIN_ABI_VERSION, "refusing", "refuses everything",
                                           []() -> Backend* { return new RefusingBackend(); }};
  if (!BackendRegistry::global().create("refusing")) {
    ASSERT_FALSE(BackendRegistry::global().add(&refusing));
  }
  Function f("nobody");
  buildGraph(f);
  CompileOptions options;
  options.fallbackBackends = {"refusing"};
  auto model = compileFunction(f, std::make_unique<ExplainingAddOnlyBackend>(), options);
  ASSERT_FALSE(model);
  const std::string& message = model.error().message();
  EXPECT_NE(message.find("node 'product' (Mul): unsupported by backends 'add-only', 'refusing'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("('add-only': only Add; this node has 6 elements; 'refusing': refuses everything)"),
            std::string::npos)
      << message;
}

// Outputs that no partition computes: an input passed through (as when the
// optimizer removes an identity Transpose) and a constant, beside a computed one.
TEST(PartitionerTest, OutputsThatAreInputsOrConstantsPassThrough) {
  registerBuiltinBackends();
  Type type = Type(ElemKind::F32, {2, 3});
  Function f("storage-outputs");
  Node* x = f.createPlaceholder("x", type);
  Node* c = f.createConstant("c", filled(type, 7));
  f.addOutput("same", x->result());
  f.addOutput("constant", c->result());
  f.addOutput("negated", (*f.create(OpKind::Neg, "negated", {x->result()}))->result());
  CompileOptions options;
  options.fallbackBackends = {"reference"};
  auto model = compileFunction(f, std::make_unique<AddOnlyBackend>(), options);
  ASSERT_TRUE(model) << model.error().message();
  ExecutionContext context;
  const Tensor input = filled(type, -1);
  context.setInput("x", input);
  ASSERT_FALSE(model->function->execute(context));
  EXPECT_TRUE(context.output("same")->bitwiseEqual(input));
  EXPECT_TRUE(context.output("constant")->bitwiseEqual(filled(type, 7)));
  for (int64_t i = 0; i < type.numElements(); ++i)
    EXPECT_EQ(context.output("negated")->as<float>()[i], -input.as<float>()[i]);
}

TEST(PartitionerTest, ModelWithoutComputeNodesNeedsNoBackend) {
  Type type = Type(ElemKind::F32, {4});
  Function f("identity");
  Node* x = f.createPlaceholder("x", type);
  f.addOutput("y", x->result());
  auto model = compileFunction(f, std::make_unique<NothingBackend>());
  ASSERT_TRUE(model) << model.error().message();
  ExecutionContext context;
  context.setInput("x", filled(type, 3));
  ASSERT_FALSE(model->function->execute(context));
  EXPECT_TRUE(context.output("y")->bitwiseEqual(filled(type, 3)));
}

}  // namespace
}  // namespace ember
