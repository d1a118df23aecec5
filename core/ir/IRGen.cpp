// IRGen: a lowered graph becomes address-only instructions. Each primitive
// node gets its own activation buffers; a View op (Reshape) becomes a view;
// every model output gets an I/O buffer filled by a Copy (the IR optimizer
// removes it).
// A high-level node still in the graph is one the backend kept
// (shouldLower() == false): it becomes one instruction, attributes and all,
// for the backend's own kernel.
#include <unordered_map>

#include "ember/IR.h"

namespace ember {

namespace {

struct ValueKey {
  const Node* node;
  unsigned resNo;
  bool operator==(const ValueKey& o) const { return node == o.node && resNo == o.resNo; }
};
struct ValueKeyHash {
  size_t operator()(const ValueKey& k) const { return std::hash<const Node*>()(k.node) * 31 + k.resNo; }
};

}  // namespace

Expected<std::unique_ptr<IRFunction>> generateIR(const Function& function) {
  auto ir = std::make_unique<IRFunction>(function.name());
  std::unordered_map<ValueKey, ValueId, ValueKeyHash> valueOf;
  auto& instrs = ir->instructions();

  // Inputs first, in model order, so I/O offsets follow the signature.
  for (const Node* in : function.inputs()) {
    IRValue v;
    v.name = in->name();
    v.type = in->resultType();
    v.kind = ValueKind::Input;
    valueOf[{in, 0}] = ir->addValue(std::move(v));
  }

  for (const Node* node : memoryAwareOrder(function)) {
    switch (node->info().category) {
      case OpCategory::Storage:
        if (node->isConstant()) {
          IRValue v;
          v.name = node->name();
          v.type = node->resultType();
          v.kind = ValueKind::Constant;
          v.payload = node->sharedPayload();
          valueOf[{node, 0}] = ir->addValue(std::move(v));
        }
        continue;
      case OpCategory::Primitive:
      case OpCategory::HighLevel:
        break;
      case OpCategory::IROnly:
        return makeError(function.name(), ": node '", node->name(), "' (", node->info().name,
                         ") is an IR-only op and cannot appear in a graph");
    }
    if (node->info().has(View)) {
      ValueId base = valueOf.at({node->input(0).node, node->input(0).resNo});
      valueOf[{node, 0}] = ir->addView(node->name(), base, node->resultType(), 0);
      continue;
    }
    Instruction inst;
    inst.kind = node->kind();
    inst.name = node->name();
    inst.attrs = node->attrs();
    for (unsigned r = 0; r < node->numResults(); ++r) {
      IRValue v;
      v.name = node->numResults() == 1 ? node->name() : node->name() + "#" + std::to_string(r);
      v.type = node->resultType(r);
      v.kind = ValueKind::Activation;
      ValueId id = ir->addValue(std::move(v));
      valueOf[{node, r}] = id;
      instrs.push_back(Instruction{OpKind::AllocActivation, node->name(), {{id, Access::Out}}, {}});
      inst.operands.push_back({id, Access::Out});
    }
    for (const NodeValue& in : node->inputs())
      inst.operands.push_back({valueOf.at({in.node, in.resNo}), Access::In});
    instrs.push_back(std::move(inst));
  }

  for (const auto& [name, nv] : function.outputs()) {
    IRValue v;
    v.name = name;
    v.type = nv.type();
    v.kind = ValueKind::Output;
    ValueId out = ir->addValue(std::move(v));
    instrs.push_back(Instruction{
        OpKind::Copy, name, {{out, Access::Out}, {valueOf.at({nv.node, nv.resNo}), Access::In}}, {}});
  }

  insertDeallocs(*ir);
  return ir;
}

void insertDeallocs(IRFunction& ir) {
  auto& instrs = ir.instructions();
  // Drop existing deallocs, then free each activation right after its last use.
  std::erase_if(instrs, [](const Instruction& i) { return i.kind == OpKind::DeallocActivation; });
  std::vector<int64_t> lastUse(ir.numValues(), -1);
  for (size_t i = 0; i < instrs.size(); ++i)
    for (const Operand& op : instrs[i].operands) {
      ValueId root = ir.resolve(op.value).first;
      if (ir.value(root).kind == ValueKind::Activation) lastUse[root] = int64_t(i);
    }
  std::vector<std::vector<ValueId>> freeAfter(instrs.size());
  for (ValueId v = 0; v < ir.numValues(); ++v)
    if (lastUse[v] >= 0) freeAfter[size_t(lastUse[v])].push_back(v);
  std::vector<Instruction> out;
  out.reserve(instrs.size() * 2);
  for (size_t i = 0; i < instrs.size(); ++i) {
    out.push_back(std::move(instrs[i]));
    for (ValueId v : freeAfter[i])
      out.push_back(Instruction{OpKind::DeallocActivation, "", {{v, Access::In}}, {}});
  }
  instrs = std::move(out);
}

}  // namespace ember
