// IR pass: a Concat whose inputs occupy contiguous byte ranges of its result
// (every axis before the concat axis has extent 1) becomes one Copy per input
// into a view of the result. Copy propagation then lets each producer write
// its part in place, so the concatenation costs nothing.
#include <vector>

#include "IRPasses.h"
#include "ember/OpAttrs.h"

namespace ember {

namespace {

/// Index of the last instruction touching each value's root, and how many
/// instructions write it.
struct Uses {
  std::vector<int64_t> last;
  std::vector<int> writers;
};

Uses computeUses(const IRFunction& ir) {
  Uses u{std::vector<int64_t>(ir.numValues(), -1), std::vector<int>(ir.numValues(), 0)};
  const auto& instrs = ir.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (isLifetimeMarker(instrs[i])) continue;
    for (const Operand& op : instrs[i].operands) {
      ValueId root = ir.resolve(op.value).first;
      u.last[root] = int64_t(i);
      if (op.access != Access::In) ++u.writers[root];
    }
  }
  return u;
}

}  // namespace

bool concatToCopies(IRFunction& ir) {
  auto& instrs = ir.instructions();
  bool changed = false;
  const Uses uses = computeUses(ir);
  std::vector<Instruction> out;
  out.reserve(instrs.size());
  for (Instruction& inst : instrs) {
    if (inst.kind != OpKind::Concat) {
      out.push_back(std::move(inst));
      continue;
    }
    ValueId result = inst.operands[0].value;
    const Type resultType = ir.value(result).type;
    int64_t axis = ConcatAttrs::from(inst.attrs).axis;
    if (axis < 0) axis += int64_t(resultType.rank());
    int64_t outer = 1;
    for (int64_t a = 0; a < axis; ++a) outer *= resultType.dims[size_t(a)];
    // Only when every part can then be written in place: each input is an
    // activation of its own with one producer that dies here. Otherwise the
    // copies would cost what the Concat costs and keep buffers alive longer.
    bool profitable = outer == 1;
    const int64_t index = &inst - instrs.data();
    for (size_t k = 1; profitable && k < inst.operands.size(); ++k) {
      ValueId in = inst.operands[k].value;
      profitable =
          ir.value(in).kind == ValueKind::Activation && uses.writers[in] == 1 && uses.last[in] == index;
    }
    if (!profitable) {
      out.push_back(std::move(inst));
      continue;
    }
    uint64_t offset = 0;
    for (size_t k = 1; k < inst.operands.size(); ++k) {
      ValueId in = inst.operands[k].value;
      const Type inType = ir.value(in).type;
      ValueId slot =
          ir.addView(ir.value(result).name + ".part" + std::to_string(k - 1), result, inType, offset);
      out.push_back(Instruction{OpKind::Copy, inst.name, {{slot, Access::Out}, {in, Access::In}}, {}});
      offset += inType.sizeInBytes();
    }
    changed = true;
  }
  instrs = std::move(out);
  return changed;
}

}  // namespace ember
