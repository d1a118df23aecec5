// IRGen, the IR verifier, the memory planner and its independent checker, and
// the reference backend running planned IR.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/BuiltinBackends.h"
#include "ember/IR.h"
#include "ember/Runtime.h"

using namespace ember;

namespace {

/// x -> relu -> neg -> exp -> abs -> y: a chain of same-sized activations.
void buildChain(Function& f, Dims dims) {
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, dims));
  NodeValue v = x;
  for (OpKind k : {OpKind::Relu, OpKind::Neg, OpKind::Exp, OpKind::Abs})
    v = *f.create(k, std::string(opName(k)), {v});
  f.addOutput("y", v);
}

TEST(IRGen, ChainPlansToTwoBuffers) {
  Function f("main");
  buildChain(f, {1000});  // 4000 bytes, 4032 aligned
  auto ir = generateIR(f);
  ASSERT_TRUE(ir) << ir.error().message();
  ASSERT_FALSE((*ir)->verify()) << (*ir)->verify().message();
  ASSERT_FALSE(planMemory(**ir));
  ASSERT_FALSE((*ir)->verifyPlan()) << (*ir)->verifyPlan().message();
  const MemoryPlan& plan = (*ir)->plan();
  // Each op reads one buffer and writes the next: two live at a time.
  EXPECT_EQ(plan.activationLowerBoundBytes, 2u * 4032);
  EXPECT_EQ(plan.activationBytes, plan.activationLowerBoundBytes);
  EXPECT_EQ(plan.ioBytes, 2u * 4032);
  std::string text = (*ir)->str();
  EXPECT_NE(text.find("Relu out %Relu, in %x"), std::string::npos) << text;
}

TEST(IRGen, OutputCopyElimination) {
  Function f("main");
  buildChain(f, {16});
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  size_t before = (*ir)->instructions().size();
  ASSERT_FALSE(optimizeIR(**ir, /*verifyEachPass=*/true));
  EXPECT_LT((*ir)->instructions().size(), before);
  for (const Instruction& inst : (*ir)->instructions()) EXPECT_NE(inst.kind, OpKind::Copy);
  ASSERT_FALSE(planMemory(**ir));
  EXPECT_FALSE((*ir)->verifyPlan());
}

TEST(IROptimizer, InPlaceSharingLeavesOneBuffer) {
  Function f("main");
  buildChain(f, {1000});
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  ASSERT_FALSE(optimizeIR(**ir, /*verifyEachPass=*/true));
  ASSERT_FALSE(planMemory(**ir));
  ASSERT_FALSE((*ir)->verifyPlan());
  // Relu writes a fresh buffer (its input is a model input); Neg and Exp run
  // in place on it; Abs writes the output directly.
  EXPECT_EQ((*ir)->plan().activationBytes, 4032u);
}

TEST(IROptimizer, SingleOpWritesOutputDirectly) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4}));
  f.addOutput("y", *f.create(OpKind::Relu, "relu", {x}));
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  ASSERT_FALSE(optimizeIR(**ir, true));
  ASSERT_FALSE(planMemory(**ir));
  EXPECT_FALSE((*ir)->verifyPlan()) << (*ir)->verifyPlan().message();
  EXPECT_EQ((*ir)->plan().activationBytes, 0u);
  EXPECT_EQ((*ir)->instructions().size(), 1u);
}

/// relu(x) ++ neg(x) along axis 1, then a contiguous slice, then exp.
void buildConcatSlice(Function& f) {
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 2, 8}));
  Node* a = *f.create(OpKind::Relu, "a", {x});
  Node* b = *f.create(OpKind::Neg, "b", {x});
  Node* cat = *f.create(OpKind::Concat, "cat", {a, b}, {{"axis", int64_t(1)}});
  Node* slice = *f.create(OpKind::Slice, "slice", {cat},
                          {{"starts", std::vector<int64_t>{0, 1, 0}},
                           {"ends", std::vector<int64_t>{1, 3, 8}},
                           {"steps", std::vector<int64_t>{1, 1, 1}}});
  f.addOutput("y", *f.create(OpKind::Exp, "exp", {slice}));
  f.addOutput("cat", cat);
}

TEST(IROptimizer, ConcatAndSliceBecomeViews) {
  Function f("main");
  buildConcatSlice(f);
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  ASSERT_FALSE(optimizeIR(**ir, true));
  for (const Instruction& inst : (*ir)->instructions()) {
    EXPECT_NE(inst.kind, OpKind::Concat) << (*ir)->str();
    EXPECT_NE(inst.kind, OpKind::Slice) << (*ir)->str();
  }
  // Only the copy into the output "cat" remains: the concat result has two
  // producers (one per part), so it is not propagated.
  EXPECT_EQ(std::count_if((*ir)->instructions().begin(), (*ir)->instructions().end(),
                          [](const Instruction& i) { return i.kind == OpKind::Copy; }),
            1)
      << (*ir)->str();
  ASSERT_FALSE(planMemory(**ir));
  EXPECT_FALSE((*ir)->verifyPlan());
}

TEST(IROptimizer, OutputsBitIdenticalWithAndWithout) {
  registerBuiltinBackends();
  std::vector<Tensor> results[2];
  for (int optimize = 0; optimize < 2; ++optimize) {
    Function f("main");
    buildConcatSlice(f);
    CompileOptions options;
    options.optimizeIR = optimize;
    options.verifyEachPass = true;
    auto model = compileFunction(f, BackendRegistry::global().create("reference").take(), options);
    ASSERT_TRUE(model) << model.error().message();
    ExecutionContext ctx;
    Tensor x(Type(ElemKind::F32, {1, 2, 8}));
    for (int i = 0; i < 16; ++i) x.as<float>()[i] = float(i) * 0.37f - 3.0f;
    ctx.setInput("x", x);
    ASSERT_FALSE(model->function->execute(ctx));
    results[optimize] = {*ctx.output("y"), *ctx.output("cat")};
  }
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(results[0][k].bitwiseEqual(results[1][k])) << k;
  // Independent check of the values: y[i] = exp(cat[1 + i / 8][i % 8]) where cat row 1 is neg(x row 0)...
  const Tensor& cat = results[1][1];
  for (int i = 0; i < 8; ++i) {
    float xi = float(i) * 0.37f - 3.0f;
    EXPECT_FLOAT_EQ(cat.as<float>()[i], std::max(xi, 0.0f));
  }
}

TEST(IROptimizer, DeadStoreElimination) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4}));
  Node* used = *f.create(OpKind::Relu, "used", {x});
  Node* unusedA = *f.create(OpKind::Neg, "unused_a", {x});
  (void)*f.create(OpKind::Exp, "unused_b", {unusedA});  // feeds nothing
  f.addOutput("y", used);
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  ASSERT_FALSE(optimizeIR(**ir, true));
  for (const Instruction& inst : (*ir)->instructions()) {
    EXPECT_NE(inst.kind, OpKind::Neg);
    EXPECT_NE(inst.kind, OpKind::Exp);
  }
}

TEST(IRGen, ReshapeBecomesView) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  Node* r = *f.create(OpKind::Relu, "r", {x});
  Node* s = *f.create(OpKind::Reshape, "s", {r}, {{"shape", std::vector<int64_t>{6}}});
  Node* n = *f.create(OpKind::Neg, "n", {s});
  f.addOutput("y", n);
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  for (const Instruction& inst : (*ir)->instructions()) EXPECT_NE(inst.kind, OpKind::Reshape);
  EXPECT_FALSE((*ir)->verify());
}

TEST(IRVerifier, RejectsUseOutsideLifetime) {
  Function f("main");
  buildChain(f, {8});
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  auto& instrs = (*ir)->instructions();
  // Move the first dealloc to the very front: its activation is then used after being freed.
  auto it = std::find_if(instrs.begin(), instrs.end(),
                         [](const Instruction& i) { return i.kind == OpKind::DeallocActivation; });
  ASSERT_NE(it, instrs.end());
  Instruction dealloc = *it;
  instrs.erase(it);
  instrs.insert(instrs.begin() + 1, dealloc);
  Error e = (*ir)->verify();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("instruction"), std::string::npos) << e.message();
}

TEST(PlanChecker, DetectsOverlap) {
  Function f("main");
  buildChain(f, {64});
  auto ir = generateIR(f);
  ASSERT_TRUE(ir);
  ASSERT_FALSE(planMemory(**ir));
  // Put every activation at offset 0: neighbours in the chain now overlap.
  for (ValueId v = 0; v < (*ir)->numValues(); ++v)
    if ((*ir)->value(v).kind == ValueKind::Activation) (*ir)->value(v).offset = 0;
  Error e = (*ir)->verifyPlan();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("overlap"), std::string::npos) << e.message();
}

TEST(ReferenceBackend, RunsPlannedIR) {
  registerBuiltinBackends();
  Function f("main");
  buildChain(f, {5});
  auto backend = BackendRegistry::global().create("reference");
  ASSERT_TRUE(backend) << backend.error().message();
  for (bool optimizeIR : {true, false}) {
    Function g("main");
    buildChain(g, {5});
    CompileOptions options;
    options.optimizeIR = optimizeIR;
    options.verifyEachPass = true;
    auto model = compileFunction(g, BackendRegistry::global().create("reference").take(), options);
    ASSERT_TRUE(model) << model.error().message();
    ExecutionContext ctx;
    Tensor x(Type(ElemKind::F32, {5}));
    float in[5] = {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f};
    std::copy(in, in + 5, x.as<float>());
    ctx.setInput("x", x);
    ASSERT_FALSE(checkInputs(*model, ctx));
    ASSERT_FALSE(model->function->execute(ctx));
    const Tensor* y = ctx.output("y");
    ASSERT_NE(y, nullptr);
    for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y->as<float>()[i], std::exp(-std::max(in[i], 0.0f))) << i;
  }
}

TEST(Runtime, CompileAndRunInOneCall) {
  registerBuiltinBackends();
  Function f("main");
  buildChain(f, {2});
  Tensor x(Type(ElemKind::F32, {2}));
  x.as<float>()[0] = 1.0f;
  x.as<float>()[1] = -1.0f;
  auto outputs = compileAndRun(f, "reference", {{"x", x}});
  ASSERT_TRUE(outputs) << outputs.error().message();
  EXPECT_FLOAT_EQ(outputs->at("y").as<float>()[0], std::exp(-1.0f));
  EXPECT_FLOAT_EQ(outputs->at("y").as<float>()[1], 1.0f);
  Function g("main");
  buildChain(g, {2});
  EXPECT_FALSE(compileAndRun(g, "reference", {}));  // missing input
}

TEST(Runtime, CheckInputsNamesProblems) {
  registerBuiltinBackends();
  Function f("main");
  buildChain(f, {3});
  auto model = compileFunction(f, BackendRegistry::global().create("reference").take());
  ASSERT_TRUE(model) << model.error().message();
  ExecutionContext missing;
  Error e = checkInputs(*model, missing);
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("missing model input(s) 'x'"), std::string::npos) << e.message();
  ExecutionContext wrong;
  wrong.setInput("x", Tensor(Type(ElemKind::I64, {3})));
  e = checkInputs(*model, wrong);
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("expected f32<3>, got i64<3>"), std::string::npos) << e.message();
  EXPECT_TRUE(BackendRegistry::global().create("nope").error().message().find("unknown backend 'nope'") !=
              std::string::npos);
}

}  // namespace

namespace {

/// Compiles the concat/slice graph for the reference backend with `options`.
Expected<CompiledModel> compileConcatSlice(const CompileOptions& options) {
  registerBuiltinBackends();
  Function f("main");
  buildConcatSlice(f);
  return compileFunction(f, BackendRegistry::global().create("reference").take(), options);
}

}  // namespace

TEST(PassControl, RecordsEveryOptionalPassInPipelineOrder) {
  auto model = compileConcatSlice({});
  ASSERT_TRUE(model) << model.error().message();
  const std::vector<std::string>& ran = model->report.passesRun;
  const std::vector<std::string> names = optionalPassNames();
  // Every IR pass runs once, after the graph passes.
  const std::vector<std::string> ir = irPassNames();
  ASSERT_GE(ran.size(), ir.size());
  EXPECT_TRUE(std::equal(ir.begin(), ir.end(), ran.end() - std::ptrdiff_t(ir.size())));
  for (const std::string& name : ran)
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(std::find(ran.begin(), ran.end(), "lowering"), ran.end());
}

TEST(PassControl, LimitRunsExactlyThatManyPasses) {
  for (int64_t limit : {0, 1, 3, 7}) {
    CompileOptions options;
    options.passLimit = limit;
    auto model = compileConcatSlice(options);
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ(int64_t(model->report.passesRun.size()), limit);
  }
}

TEST(PassControl, DisabledPassesDoNotRun) {
  CompileOptions options;
  options.disabledPasses = {"cse", "copy-propagation"};
  auto model = compileConcatSlice(options);
  ASSERT_TRUE(model) << model.error().message();
  for (const std::string& name : model->report.passesRun) {
    EXPECT_NE(name, "cse");
    EXPECT_NE(name, "copy-propagation");
  }
}

TEST(PassControl, RejectsUnknownAndRequiredPasses) {
  CompileOptions unknown;
  unknown.disabledPasses = {"no-such-pass"};
  auto a = compileConcatSlice(unknown);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("unknown pass 'no-such-pass'"), std::string::npos)
      << a.error().message();
  EXPECT_NE(a.error().message().find("transpose-sinking"), std::string::npos) << a.error().message();
  CompileOptions required;
  required.disabledPasses = {"lowering"};
  auto b = compileConcatSlice(required);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message().find("'lowering' is required"), std::string::npos) << b.error().message();
}

// An unused result whose store the IR optimizer removed (a Split half nobody
// reads, kept when dce is off) takes no memory, and the plan checker accepts it.
TEST(PlanChecker, DeadActivationWithoutAllocTakesNoMemory) {
  registerBuiltinBackends();
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 2}));
  auto half = [&](int64_t start, const std::string& name) {
    Attributes attrs{{"starts", std::vector<int64_t>{0, start}},
                     {"ends", std::vector<int64_t>{1, start + 1}},
                     {"steps", std::vector<int64_t>{1, 1}}};
    return (*f.create(OpKind::Slice, name, {x->result()}, attrs))->result();
  };
  f.addOutput("y", half(0, "first"));
  half(1, "unused");
  CompileOptions options;
  options.disabledPasses = {"dce"};
  auto model = compileFunction(f, BackendRegistry::global().create("reference").take(), options);
  ASSERT_TRUE(model) << model.error().message();
  ExecutionContext ctx;
  Tensor input(Type(ElemKind::F32, {1, 2}));
  input.as<float>()[0] = 1.5f;
  input.as<float>()[1] = -2.0f;
  ctx.setInput("x", input);
  ASSERT_FALSE(model->function->execute(ctx));
  EXPECT_EQ(ctx.output("y")->as<float>()[0], 1.5f);
}
