// IR pass: a model output that is copied from an activation is instead
// written in place by the activation's producer; the copy, the allocation and
// the deallocation disappear.
#include <vector>

#include "IRPasses.h"

namespace ember {

bool eliminateOutputCopies(IRFunction& ir) {
  auto& instrs = ir.instructions();
  std::vector<bool> retargeted(ir.numValues(), false);
  std::vector<int> removeMarkersOf(ir.numValues(), 0);
  bool changed = false;
  for (Instruction& inst : instrs) {
    if (inst.kind != OpKind::Copy) continue;
    ValueId out = inst.operands[0].value, src = inst.operands[1].value;
    if (ir.value(out).kind != ValueKind::Output || ir.value(src).kind != ValueKind::Activation) continue;
    if (retargeted[src] || ir.value(src).type != ir.value(out).type) continue;
    retargeted[src] = true;
    ir.value(src).base = out;
    ir.value(src).viewOffset = 0;
    // Every operand and view that referred to the activation now refers to the output.
    for (Instruction& other : instrs) {
      if (&other == &inst || other.kind == OpKind::AllocActivation || other.kind == OpKind::DeallocActivation)
        continue;
      for (Operand& op : other.operands)
        if (op.value == src) op.value = out;
    }
    for (ValueId v = 0; v < ir.numValues(); ++v)
      if (ir.value(v).kind == ValueKind::View && ir.value(v).base == src) ir.value(v).base = out;
    inst.kind = OpKind::DeallocActivation;  // marker: erased below
    inst.operands = {{src, Access::In}};
    changed = true;
  }
  if (!changed) return false;
  std::erase_if(instrs, [&](const Instruction& i) {
    bool marker = i.kind == OpKind::AllocActivation || i.kind == OpKind::DeallocActivation;
    return marker && retargeted[i.operands[0].value];
  });
  // A retargeted activation no longer owns memory; it stays as an unused view
  // so that value ids remain stable.
  for (ValueId v = 0; v < ir.numValues(); ++v)
    if (retargeted[v]) ir.value(v).kind = ValueKind::View;
  return true;
}

}  // namespace ember
