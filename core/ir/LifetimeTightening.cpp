// IR pass: alloc sinking and dealloc hoisting. Every activation is allocated
// right before its first use and freed right after its last, so the planner
// sees the tightest live ranges the instruction order allows.
#include <vector>

#include "IRPasses.h"

namespace ember {

bool tightenLifetimes(IRFunction& ir) {
  auto& instrs = ir.instructions();
  std::vector<Instruction> body;
  body.reserve(instrs.size());
  for (Instruction& i : instrs)
    if (i.kind != OpKind::AllocActivation && i.kind != OpKind::DeallocActivation) body.push_back(std::move(i));

  constexpr int64_t kUnused = -1;
  std::vector<int64_t> first(ir.numValues(), kUnused), last(ir.numValues(), kUnused);
  for (size_t i = 0; i < body.size(); ++i)
    for (const Operand& op : body[i].operands) {
      ValueId root = ir.resolve(op.value).first;
      if (ir.value(root).kind != ValueKind::Activation) continue;
      if (first[root] == kUnused) first[root] = int64_t(i);
      last[root] = int64_t(i);
    }
  std::vector<std::vector<ValueId>> allocBefore(body.size()), freeAfter(body.size());
  for (ValueId v = 0; v < ir.numValues(); ++v) {
    if (first[v] == kUnused) continue;
    allocBefore[size_t(first[v])].push_back(v);
    freeAfter[size_t(last[v])].push_back(v);
  }
  std::vector<Instruction> out;
  out.reserve(body.size() * 3);
  for (size_t i = 0; i < body.size(); ++i) {
    for (ValueId v : allocBefore[i]) out.push_back(Instruction{OpKind::AllocActivation, "", {{v, Access::Out}}, {}});
    out.push_back(std::move(body[i]));
    for (ValueId v : freeAfter[i]) out.push_back(Instruction{OpKind::DeallocActivation, "", {{v, Access::In}}, {}});
  }
  bool changed = out.size() != instrs.size();
  instrs = std::move(out);
  return changed;
}

}  // namespace ember
