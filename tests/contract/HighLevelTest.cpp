// A backend that keeps high-level nodes (shouldLower() == false) gets them as
// IR instructions of their own, with their attributes, and its kernels match
// the reference backend, which lowers the same model to primitives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "FusedBackend.h"
#include "backends/BuiltinBackends.h"
#include "ember/IR.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;

/// Deterministic values in [-2, 2).
Tensor filled(Type type, uint32_t seed) {
  Tensor t(std::move(type));
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.type().numElements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = float(seed >> 8) / float(1u << 24) * 4.0f - 2.0f;
  }
  return t;
}

/// x[3,5] -> Gemm(B[4,5] transposed, C[4], alpha 0.5, beta 2) -> Softmax(axis 1) -> Relu.
std::unique_ptr<Function> gemmSoftmaxModel() {
  auto f = std::make_unique<Function>("gemm_softmax");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {3, 5}));
  Node* b = f->createConstant("b", filled(Type(ElemKind::F32, {4, 5}), 7));
  Node* c = f->createConstant("c", filled(Type(ElemKind::F32, {4}), 11));
  Node* gemm = f->create(OpKind::Gemm, "fc", {x, b, c},
                         {{"alpha", 0.5}, {"beta", 2.0}, {"trans_a", int64_t(0)}, {"trans_b", int64_t(1)}})
                   .take();
  Node* softmax = f->create(OpKind::Softmax, "softmax", {gemm->result()}, {{"axis", int64_t(1)}}).take();
  Node* relu = f->create(OpKind::Relu, "relu", {softmax->result()}).take();
  f->addOutput("y", relu->result());
  return f;
}

IRValue irValue(std::string name, Type type, ValueKind kind) {
  IRValue v;
  v.name = std::move(name);
  v.type = std::move(type);
  v.kind = kind;
  return v;
}

size_t countInstructions(const IRFunction& ir, OpKind kind) {
  size_t n = 0;
  for (const Instruction& inst : ir.instructions()) n += inst.kind == kind;
  return n;
}

Tensor run(CompiledModel& model, const Tensor& x) {
  ExecutionContext context;
  context.setInput("x", x);
  Error e = model.function->execute(context);
  EXPECT_FALSE(e) << e.message();
  const Tensor* y = context.output("y");
  return y ? *y : Tensor(Type(ElemKind::F32, {0}));
}

TEST(HighLevelInstructions, KeptGemmAndSoftmaxReachTheBackendAndMatchTheReference) {
  registerBuiltinBackends();
  Tensor x = filled(Type(ElemKind::F32, {3, 5}), 3);
  auto fusedModelFn = gemmSoftmaxModel();
  CompileOptions options;
  options.verifyEachPass = true;
  auto fused = compileFunction(*fusedModelFn, fused::createFusedBackend(), options);
  ASSERT_TRUE(fused) << fused.error().message();
  ASSERT_TRUE(fused->ir);
  EXPECT_EQ(countInstructions(*fused->ir, OpKind::Gemm), 1u);
  EXPECT_EQ(countInstructions(*fused->ir, OpKind::Softmax), 1u);
  EXPECT_EQ(countInstructions(*fused->ir, OpKind::MatMul), 0u);  // not lowered
  for (const Instruction& inst : fused->ir->instructions())
    if (inst.kind == OpKind::Gemm) {
      EXPECT_EQ(inst.attrs.getInt("trans_b"), 1);
      EXPECT_DOUBLE_EQ(inst.attrs.getFloat("alpha"), 0.5);
      EXPECT_DOUBLE_EQ(inst.attrs.getFloat("beta"), 2.0);
    }

  auto referenceFn = gemmSoftmaxModel();
  auto reference =
      compileFunction(*referenceFn, BackendRegistry::global().create("reference").take(), options);
  ASSERT_TRUE(reference) << reference.error().message();
  // The reference backend did not keep them: it never sees a high-level instruction.
  for (const Instruction& inst : reference->ir->instructions())
    EXPECT_NE(opInfo(inst.kind).category, OpCategory::HighLevel) << inst.name;

  const uint64_t gemmsBefore = fused::kernelCounts().gemm, softmaxesBefore = fused::kernelCounts().softmax;
  Tensor got = run(*fused, x), want = run(*reference, x);
  EXPECT_EQ(fused::kernelCounts().gemm, gemmsBefore + 1);
  EXPECT_EQ(fused::kernelCounts().softmax, softmaxesBefore + 1);
  ASSERT_EQ(got.type(), want.type());
  const float *g = static_cast<const float*>(got.data()), *w = static_cast<const float*>(want.data());
  for (int64_t i = 0; i < want.type().numElements(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6) << "element " << i;
}

/// The verifier holds a high-level instruction to its op's type rule.
TEST(HighLevelInstructions, VerifierChecksTheTypeRule) {
  IRFunction ir("f");
  ValueId in = ir.addValue(irValue("x", Type(ElemKind::F32, {2, 3}), ValueKind::Input));
  ValueId good = ir.addValue(irValue("y", Type(ElemKind::F32, {2, 3}), ValueKind::Output));
  ValueId bad = ir.addValue(irValue("z", Type(ElemKind::F32, {3, 2}), ValueKind::Output));
  ir.instructions().push_back(
      {OpKind::Softmax, "s", {{good, Access::Out}, {in, Access::In}}, {{"axis", int64_t(1)}}});
  EXPECT_FALSE(ir.verify());
  ir.instructions().push_back(
      {OpKind::Softmax, "t", {{bad, Access::Out}, {in, Access::In}}, {{"axis", int64_t(1)}}});
  Error e = ir.verify();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("type rule"), std::string::npos) << e.message();
}

/// In-place sharing leaves an opaque high-level kernel's buffers apart (a
/// Softmax reads its whole row after writing part of it), but a DataParallel
/// high-level op may write over its dying input.
TEST(HighLevelInstructions, InPlaceSharingOnlyForDataParallel) {
  for (OpKind kind : {OpKind::Softmax, OpKind::LeakyRelu}) {
    IRFunction ir("f");
    Type t(ElemKind::F32, {2, 3});
    ValueId x = ir.addValue(irValue("x", t, ValueKind::Input));
    ValueId a = ir.addValue(irValue("a", t, ValueKind::Activation));
    ValueId b = ir.addValue(irValue("b", t, ValueKind::Activation));
    ValueId y = ir.addValue(irValue("y", t, ValueKind::Output));
    Attributes attrs =
        kind == OpKind::Softmax ? Attributes{{"axis", int64_t(1)}} : Attributes{{"alpha", 0.1}};
    auto& is = ir.instructions();
    is.push_back({OpKind::AllocActivation, "", {{a, Access::Out}}, {}});
    is.push_back({OpKind::Relu, "r", {{a, Access::Out}, {x, Access::In}}, {}});
    is.push_back({OpKind::AllocActivation, "", {{b, Access::Out}}, {}});
    is.push_back({kind, "k", {{b, Access::Out}, {a, Access::In}}, attrs});
    is.push_back({OpKind::Relu, "out", {{y, Access::Out}, {b, Access::In}}, {}});
    insertDeallocs(ir);
    ASSERT_FALSE(ir.verify()) << ir.str();
    ASSERT_FALSE(optimizeIR(ir, true));
    const Instruction* k = nullptr;
    for (const Instruction& inst : ir.instructions())
      if (inst.kind == kind) k = &inst;
    ASSERT_NE(k, nullptr);
    bool shared = ir.resolve(k->operands[0].value).first == ir.resolve(k->operands[1].value).first;
    EXPECT_EQ(shared, kind == OpKind::LeakyRelu) << opName(kind) << "\n" << ir.str();
  }
}

}  // namespace
