// The instruction-IR verifier: structure, access modes, types and activation
// lifetimes. Runs after IRGen and after every IR pass.
#include <vector>

#include "ember/IR.h"

namespace ember {

namespace {
Error instrError(const IRFunction& ir, size_t index, const Instruction& inst, const Error& e) {
  return e.withContext(ir.name() + ": instruction " + std::to_string(index) + " (" +
                       std::string(opName(inst.kind)) + (inst.name.empty() ? "" : " '" + inst.name + "'") +
                       ")");
}
}  // namespace

Error IRFunction::verify() const {
  for (ValueId i = 0; i < values_.size(); ++i) {
    const IRValue& v = values_[i];
    if (v.kind == ValueKind::View) {
      if (v.base >= values_.size()) return makeError(name_, ": view '%", v.name, "' refers to no value");
      // Views may refer to later values (passes retarget them), but never in a cycle.
      ValueId cursor = i;
      for (size_t steps = 0; values_[cursor].kind == ValueKind::View; ++steps) {
        if (steps > values_.size() || values_[cursor].base >= values_.size())
          return makeError(name_, ": view '%", v.name, "' is part of a cycle of views or dangles");
        cursor = values_[cursor].base;
      }
      const IRValue& base = values_[v.base];
      if (v.viewOffset + v.type.sizeInBytes() > base.type.sizeInBytes())
        return makeError(name_, ": view '%", v.name, "' exceeds its base '%", base.name, "'");
    }
    if (v.kind == ValueKind::Constant && (!v.payload || v.payload->type() != v.type))
      return makeError(name_, ": constant '%", v.name, "' has no payload of its type");
  }

  enum class State : uint8_t { Unallocated, Live, Dead };
  std::vector<State> state(values_.size(), State::Unallocated);
  for (size_t index = 0; index < instrs_.size(); ++index) {
    const Instruction& inst = instrs_[index];
    const OpInfo& info = opInfo(inst.kind);
    auto fail = [&](const Error& e) { return instrError(*this, index, inst, e); };
    for (const Operand& op : inst.operands)
      if (op.value >= values_.size()) return fail(makeError("operand refers to no value"));

    if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) {
      if (inst.operands.size() != 1) return fail(makeError("expects one operand"));
      ValueId id = inst.operands[0].value;
      if (values_[id].kind != ValueKind::Activation) return fail(makeError("operand is not an activation"));
      State want = inst.kind == OpKind::AllocActivation ? State::Unallocated : State::Live;
      if (state[id] != want) return fail(makeError("'%", values_[id].name, "' allocated or freed twice"));
      state[id] = inst.kind == OpKind::AllocActivation ? State::Live : State::Dead;
      continue;
    }
    // High-level instructions are nodes a backend kept (shouldLower() ==
    // false); they obey the same operand and type rules as primitives.
    if (info.category != OpCategory::Primitive && info.category != OpCategory::HighLevel &&
        inst.kind != OpKind::Copy)
      return fail(makeError("not an instruction kind"));

    size_t numOut = info.numResults;
    if (inst.operands.size() < numOut) return fail(makeError("too few operands"));
    if (Error e = checkOperandsAndAttributes(info, inst.operands.size() - numOut, inst.attrs)) return fail(e);
    std::vector<Type> inTypes, outTypes;
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      const Operand& op = inst.operands[i];
      bool isOut = i < numOut;
      if (isOut == (op.access == Access::In))
        return fail(makeError("operand ", i, " has the wrong access mode"));
      const IRValue& root = values_[resolve(op.value).first];
      if (isOut && (root.kind == ValueKind::Constant || root.kind == ValueKind::Input))
        return fail(makeError("writes read-only value '%", values_[op.value].name, "'"));
      if (root.kind == ValueKind::Activation && state[resolve(op.value).first] != State::Live)
        return fail(makeError("uses '%", values_[op.value].name, "' outside its lifetime"));
      (isOut ? outTypes : inTypes).push_back(values_[op.value].type);
    }
    if (inst.kind == OpKind::Copy) {
      if (inTypes.size() != 1 || inTypes[0].sizeInBytes() != outTypes[0].sizeInBytes())
        return fail(makeError("copy between values of different sizes"));
      continue;
    }
    auto expected = inferResultTypes(inst.kind, inTypes, inst.attrs);
    if (!expected) return fail(expected.error());
    if (*expected != outTypes) return fail(makeError("output types differ from the op's type rule"));
  }
  for (ValueId i = 0; i < values_.size(); ++i)
    if (values_[i].kind == ValueKind::Activation && state[i] == State::Live)
      return makeError(name_, ": activation '%", values_[i].name, "' is never freed");
  return Error::success();
}

}  // namespace ember
