// IR pass: buffer sharing. A data-parallel instruction writes its result into
// an input's buffer when that input is an activation of the same shape and
// element size that dies at this instruction. Only DataParallel ops qualify,
// primitive or high-level (a backend's kept LeakyRelu kernel must tolerate
// its output aliasing its input, as Ops.def's trait promises); any other
// high-level instruction is a backend kernel the IR knows nothing of, so its
// buffers stay apart.
#include <vector>

#include "IRPasses.h"

namespace ember {

namespace {

/// Index of the last instruction that reads or writes each activation
/// (through any view).
std::vector<int64_t> lastUses(const IRFunction& ir) {
  std::vector<int64_t> last(ir.numValues(), -1);
  const auto& instrs = ir.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (isLifetimeMarker(instrs[i])) continue;
    for (const Operand& op : instrs[i].operands) last[ir.resolve(op.value).first] = int64_t(i);
  }
  return last;
}

}  // namespace

bool shareBuffersInPlace(IRFunction& ir) {
  auto& instrs = ir.instructions();
  bool changed = false;
  for (size_t i = 0; i < instrs.size(); ++i) {
    Instruction& inst = instrs[i];
    const OpInfo& info = opInfo(inst.kind);
    bool computes = info.category == OpCategory::Primitive || info.category == OpCategory::HighLevel;
    if (!computes || !info.has(DataParallel)) continue;
    ValueId out = inst.operands[0].value;
    const IRValue& outValue = ir.value(out);
    if (outValue.kind != ValueKind::Activation) continue;
    // Recomputed per candidate: merges change liveness.
    std::vector<int64_t> last = lastUses(ir);
    for (size_t k = 1; k < inst.operands.size(); ++k) {
      ValueId in = inst.operands[k].value;
      const IRValue& inValue = ir.value(in);
      if (inValue.kind != ValueKind::Activation || in == out) continue;
      if (last[in] != int64_t(i) || inValue.type.dims != outValue.type.dims ||
          elemSize(inValue.type.kind) != elemSize(outValue.type.kind))
        continue;
      // The input must be read only once here, so no other operand aliases it.
      bool readTwice = false;
      for (size_t j = 1; j < inst.operands.size(); ++j)
        readTwice |= j != k && ir.resolve(inst.operands[j].value).first == in;
      if (readTwice) continue;

      // Rename `out` to a view of `in` typed as `out`; drop out's alloc.
      ValueId replacement =
          inValue.type == outValue.type ? in : ir.addView(outValue.name + ".inplace", in, outValue.type, 0);
      mergeValueInto(ir, out, replacement);
      insertDeallocs(ir);
      changed = true;
      --i;  // instructions shifted by the erased alloc
      break;
    }
  }
  return changed;
}

}  // namespace ember
