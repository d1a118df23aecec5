// IR pass: dead-store and dead-alloc elimination. An instruction whose every
// result is an activation that nothing reads afterwards is removed, and so is
// an activation that no instruction touches between its alloc and dealloc.
#include <vector>

#include "IRPasses.h"

namespace ember {

bool eliminateDeadStores(IRFunction& ir) {
  auto& instrs = ir.instructions();
  bool changed = false;
  // Walk backwards: removing a store can make the stores feeding it dead.
  std::vector<bool> readLater(ir.numValues(), false);
  std::vector<bool> remove(instrs.size(), false);
  for (size_t i = instrs.size(); i-- > 0;) {
    const Instruction& inst = instrs[i];
    if (isLifetimeMarker(inst)) continue;
    size_t numOut = inst.kind == OpKind::Copy ? 1 : opInfo(inst.kind).numResults;
    bool dead = true;
    for (size_t k = 0; k < numOut; ++k) {
      ValueId root = ir.resolve(inst.operands[k].value).first;
      dead &= ir.value(root).kind == ValueKind::Activation && !readLater[root];
    }
    if (dead) {
      remove[i] = changed = true;
      continue;
    }
    for (size_t k = 0; k < inst.operands.size(); ++k)
      if (inst.operands[k].access != Access::Out) readLater[ir.resolve(inst.operands[k].value).first] = true;
  }
  if (!changed) return false;
  std::vector<Instruction> kept;
  for (size_t i = 0; i < instrs.size(); ++i)
    if (!remove[i]) kept.push_back(std::move(instrs[i]));
  instrs = std::move(kept);

  // Activations now touched only by their markers lose the markers too.
  std::vector<int> touches(ir.numValues(), 0);
  for (const Instruction& inst : instrs)
    if (inst.kind != OpKind::AllocActivation && inst.kind != OpKind::DeallocActivation)
      for (const Operand& op : inst.operands) ++touches[ir.resolve(op.value).first];
  std::erase_if(instrs, [&](const Instruction& x) {
    return isLifetimeMarker(x) &&
           touches[x.operands[0].value] == 0;
  });
  return true;
}

}  // namespace ember
