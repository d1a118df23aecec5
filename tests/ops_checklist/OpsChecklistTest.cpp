// The checklist of docs/adding-an-operator.md, checked for every op of
// Ops.def: a test fails when an op lacks one of the pieces the doc lists
// (or a waiver here with its reason). The type rule needs no test: a missing
// infer<Name> is a compile error of TypeRules.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "Cases.h"
#include "ember/Graph.h"
#include "ember/Kernels.h"
#include "ember/OpTable.h"

namespace ember {
namespace {

std::string readSourceFile(const std::string& relative) {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<OpKind> opsOf(std::initializer_list<OpCategory> categories) {
  std::vector<OpKind> ops;
  for (size_t k = 0; k < kNumOpKinds; ++k)
    for (OpCategory category : categories)
      if (opInfo(OpKind(k)).category == category) ops.push_back(OpKind(k));
  return ops;
}

/// The lowest element kind of `set` (a kind the kernel must accept).
ElemKind someKindOf(ElemKindSet set) {
  for (unsigned k = 0; k <= unsigned(ElemKind::F64); ++k)
    if (contains(set, ElemKind(k))) return ElemKind(k);
  return ElemKind::F32;
}

TEST(OpsChecklist, FamilyMatchesCategory) {
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpKind kind = OpKind(k);
    const OpInfo& info = opInfo(kind);
    const OpFamily family = opFamily(kind);
    SCOPED_TRACE(info.name + " (" + std::string(opFamilyName(family)) + ")");
    EXPECT_EQ(info.category == OpCategory::Storage, family == OpFamily::Storage);
    if (info.category == OpCategory::Primitive) {
      EXPECT_NE(family, OpFamily::Normalization) << "a primitive's family must have a kernel file";
      EXPECT_NE(family, OpFamily::IRBookkeeping);
    }
    if (info.category == OpCategory::HighLevel) {
      EXPECT_NE(family, OpFamily::Vendor);
    }
  }
}

// Step 1 of the doc: every primitive operand names the element kinds its kernel implements.
TEST(OpsChecklist, PrimitiveOperandsDeclareElementKinds) {
  for (OpKind kind : opsOf({OpCategory::Primitive})) {
    const OpInfo& info = opInfo(kind);
    for (size_t i = 0; i < info.operandNames.size(); ++i)
      EXPECT_TRUE(declaresOperandKinds(kind, i)) << info.name << ": operand '" << info.operandNames[i]
                                                 << "' declares no (or an unknown) element-kind set";
  }
}

// Step 3: a primitive's family dispatches to a reference kernel for its declared kinds.
TEST(OpsChecklist, PrimitivesHaveAReferenceKernel) {
  for (OpKind kind : opsOf({OpCategory::Primitive})) {
    if (kind == OpKind::VendorOp) continue;  // the registered op's own kernel (ember/VendorOp.h)
    const OpInfo& info = opInfo(kind);
    std::vector<Type> inputs;
    for (size_t i = 0; i < info.operandNames.size(); ++i)
      inputs.emplace_back(someKindOf(operandElemKinds(kind, i)), Dims{1});
    std::vector<Type> results(info.numResults, Type(ElemKind::F32, Dims{1}));
    if (kind == OpKind::Cast) results[0].kind = inputs[0].kind;
    EXPECT_TRUE(kernelSupports(kind, inputs, results)) << info.name << ": no reference kernel is dispatched";
  }
}

TEST(OpsChecklist, NonPrimitivesHaveNoReferenceKernel) {
  for (OpKind kind : opsOf({OpCategory::HighLevel, OpCategory::Storage})) {
    std::vector<Type> inputs(opInfo(kind).operandNames.size(), Type(ElemKind::F32, Dims{1}));
    std::vector<Type> results(opInfo(kind).numResults, Type(ElemKind::F32, Dims{1}));
    EXPECT_FALSE(kernelSupports(kind, inputs, results)) << opInfo(kind).name;
  }
}

// Step 5: a conformance case for every primitive and high-level op.
TEST(OpsChecklist, ConformanceCases) {
  // The conformance kit's cases of VendorOp are the registered ops' examples.
  const std::map<OpKind, std::string> waivers = {
      {OpKind::VendorOp, "cases come from each vendor op's registration"}};
  std::set<OpKind> covered;
  for (const conformance::CaseSpec& spec : conformance::allCases()) covered.insert(spec.op);
  for (OpKind kind : opsOf({OpCategory::Primitive, OpCategory::HighLevel})) {
    if (waivers.count(kind)) continue;
    EXPECT_TRUE(covered.count(kind)) << opInfo(kind).name << ": no case in sdk/conformance/Cases.cpp";
  }
}

// The differential tester (tests/difftest/ops_*.py) builds ONNX models, so an
// op is covered when its ONNX name appears in a generator.
TEST(OpsChecklist, DifftestGeneratorOrWaiver) {
  const std::map<OpKind, std::string> onnxNames = {
      {OpKind::LessEqual, "LessOrEqual"},
      {OpKind::GreaterEqual, "GreaterOrEqual"},
      {OpKind::Select, "Where"},
      {OpKind::AvgPool, "AveragePool"},
      {OpKind::Broadcast, "Expand"},
      {OpKind::BatchNorm, "BatchNormalization"},
      {OpKind::LayerNorm, "LayerNormalization"},
      {OpKind::InstanceNorm, "InstanceNormalization"},
  };
  const std::string ember8 =
      "Ember's int8 quantizer emits it (no ONNX op); tests/unit/QuantKernelsTest.cpp and tests/quant";
  const std::map<OpKind, std::string> waivers = {
      {OpKind::Random, "seeded values are Ember's own and match no oracle (tests/difftest/README.md)"},
      {OpKind::Quantize, ember8},
      {OpKind::Dequantize, ember8},
      {OpKind::Requantize, ember8},
      {OpKind::QuantizedConv, ember8},
      {OpKind::QuantizedMatMul, ember8},
      {OpKind::QuantizedAdd, ember8},
      {OpKind::QuantizedAvgPool, ember8},
      {OpKind::Lookup, ember8},
      {OpKind::QuantizedSoftmax, ember8},
      {OpKind::QuantizedLayerNorm, ember8},
      {OpKind::QuantizedGelu, ember8},
      {OpKind::VendorOp, "tests/vendor_op's vendor_op_difftest_toy draws conv_bn_relu for the toy plugin"},
      {OpKind::Gelu, "onnx 1.12 and the difftest's ONNX Runtime models predate ONNX's Gelu (opset 20)"},
  };
  std::string generators;
  for (const char* file :
       {"ops.py", "ops_bounded.py", "ops_elementwise.py", "ops_nn.py", "ops_reduce.py", "ops_tensor.py"})
    generators += readSourceFile(std::string("tests/difftest/") + file);
  ASSERT_FALSE(generators.empty());
  for (OpKind kind : opsOf({OpCategory::Primitive, OpCategory::HighLevel})) {
    if (waivers.count(kind)) continue;
    const std::string onnx = onnxNames.count(kind) ? onnxNames.at(kind) : opInfo(kind).name;
    EXPECT_NE(generators.find("\"" + onnx + "\""), std::string::npos)
        << opInfo(kind).name << ": no difftest generator names \"" << onnx << "\" and no waiver";
  }
}

}  // namespace
}  // namespace ember
