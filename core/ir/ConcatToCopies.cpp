// IR pass: a Concat whose inputs occupy contiguous byte ranges of its result
// (every axis before the concat axis has extent 1) becomes one Copy per input
// into a view of the result. Copy propagation then lets each producer write
// its part in place, so the concatenation costs nothing.
#include "IRPasses.h"

namespace ember {

bool concatToCopies(IRFunction& ir) {
  auto& instrs = ir.instructions();
  bool changed = false;
  std::vector<Instruction> out;
  out.reserve(instrs.size());
  for (Instruction& inst : instrs) {
    if (inst.kind != OpKind::Concat) {
      out.push_back(std::move(inst));
      continue;
    }
    ValueId result = inst.operands[0].value;
    const Type resultType = ir.value(result).type;
    int64_t axis = inst.attrs.getInt("axis");
    if (axis < 0) axis += int64_t(resultType.rank());
    int64_t outer = 1;
    for (int64_t a = 0; a < axis; ++a) outer *= resultType.dims[size_t(a)];
    if (outer != 1) {
      out.push_back(std::move(inst));
      continue;
    }
    uint64_t offset = 0;
    for (size_t k = 1; k < inst.operands.size(); ++k) {
      ValueId in = inst.operands[k].value;
      const Type inType = ir.value(in).type;
      ValueId slot = ir.addView(ir.value(result).name + ".part" + std::to_string(k - 1), result, inType, offset);
      out.push_back(Instruction{OpKind::Copy, inst.name, {{slot, Access::Out}, {in, Access::In}}, {}});
      offset += inType.sizeInBytes();
    }
    changed = true;
  }
  instrs = std::move(out);
  return changed;
}

}  // namespace ember
