// Rewrites shared by the IR passes.
#include "IRPasses.h"

namespace ember {

bool isLifetimeMarker(const Instruction& inst) {
  return inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation;
}

void mergeValueInto(IRFunction& ir, ValueId from, ValueId to) {
  auto& instrs = ir.instructions();
  for (Instruction& inst : instrs) {
    if (isLifetimeMarker(inst)) continue;
    for (Operand& op : inst.operands)
      if (op.value == from) op.value = to;
  }
  for (ValueId v = 0; v < ir.numValues(); ++v)
    if (ir.value(v).kind == ValueKind::View && ir.value(v).base == from) ir.value(v).base = to;
  std::erase_if(instrs, [&](const Instruction& i) { return isLifetimeMarker(i) && i.operands[0].value == from; });
  // `from` keeps its id (ids stay stable) as an unused view of `to`.
  IRValue& old = ir.value(from);
  old.kind = ValueKind::View;
  old.base = to;
  old.viewOffset = 0;
}

}  // namespace ember
