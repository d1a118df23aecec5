// Deliberately wrong graph rewrites (FaultInjection.h).
#include "FaultInjection.h"

namespace difftest {
namespace {

/// The bug class of issue 15: a Transpose taken for a no-op because its input
/// and output shapes are equal (1x8x8x8 with perm [0,2,3,1]), decided from the
/// shapes instead of the permutation.
class EqualShapeTransposeRemoval : public ember::FunctionPass {
 public:
  std::string name() const override { return "fault-equal-shape-transpose"; }
  ember::Expected<bool> run(ember::Function& function) override {
    bool changed = false;
    for (ember::Node* node : function.nodes()) {
      if (node->kind() != ember::OpKind::Transpose) continue;
      if (node->input(0).type().dims != node->resultType().dims) continue;
      function.replaceAllUsesWith(node->result(), node->input(0));
      changed = true;
    }
    return changed;
  }
};

/// Swaps the operands of every Sub: a wrong algebraic rewrite.
class SubOperandSwap : public ember::FunctionPass {
 public:
  std::string name() const override { return "fault-sub-swap"; }
  ember::Expected<bool> run(ember::Function& function) override {
    bool changed = false;
    for (ember::Node* node : function.nodes()) {
      if (node->kind() != ember::OpKind::Sub || node->input(0).type() != node->input(1).type()) continue;
      ember::NodeValue lhs = node->input(0);
      node->setInput(0, node->input(1));
      node->setInput(1, lhs);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::vector<std::string> faultNames() { return {"equal-shape-transpose", "sub-swap"}; }

std::unique_ptr<ember::FunctionPass> createFaultPass(const std::string& name) {
  if (name == "equal-shape-transpose") return std::make_unique<EqualShapeTransposeRemoval>();
  if (name == "sub-swap") return std::make_unique<SubOperandSwap>();
  return nullptr;
}

}  // namespace difftest
