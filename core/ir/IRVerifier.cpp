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

/// Views point at a value without a cycle and fit in their base; constants
/// carry a payload of their type.
Error verifyValues(const IRFunction& ir) {
  const size_t numValues = ir.numValues();
  for (ValueId i = 0; i < numValues; ++i) {
    const IRValue& v = ir.value(i);
    if (v.kind == ValueKind::View) {
      if (v.base >= numValues) return makeError(ir.name(), ": view '%", v.name, "' refers to no value");
      // Views may refer to later values (passes retarget them), but never in a cycle.
      ValueId cursor = i;
      for (size_t steps = 0; ir.value(cursor).kind == ValueKind::View; ++steps) {
        if (steps > numValues || ir.value(cursor).base >= numValues)
          return makeError(ir.name(), ": view '%", v.name, "' is part of a cycle of views or dangles");
        cursor = ir.value(cursor).base;
      }
      const IRValue& base = ir.value(v.base);
      if (v.viewOffset + v.type.sizeInBytes() > base.type.sizeInBytes())
        return makeError(ir.name(), ": view '%", v.name, "' exceeds its base '%", base.name, "'");
    }
    if (v.kind == ValueKind::Constant && (!v.payload || v.payload->type() != v.type))
      return makeError(ir.name(), ": constant '%", v.name, "' has no payload of its type");
  }
  return Error::success();
}

/// Where each activation is in its life while the instructions are walked.
enum class LifeState : uint8_t { Unallocated, Live, Dead };

/// AllocActivation or DeallocActivation: one activation, allocated once, then freed once.
Error verifyLifetimeMarker(const IRFunction& ir, const Instruction& inst, std::vector<LifeState>& state) {
  if (inst.operands.size() != 1) return makeError("expects one operand");
  ValueId id = inst.operands[0].value;
  if (ir.value(id).kind != ValueKind::Activation) return makeError("operand is not an activation");
  LifeState want = inst.kind == OpKind::AllocActivation ? LifeState::Unallocated : LifeState::Live;
  if (state[id] != want) return makeError("'%", ir.value(id).name, "' allocated or freed twice");
  state[id] = inst.kind == OpKind::AllocActivation ? LifeState::Live : LifeState::Dead;
  return Error::success();
}

/// A computing instruction: outputs first and writable, activations live,
/// attributes declared and result types as the op's type rule says.
Error verifyComputation(const IRFunction& ir, const Instruction& inst, const std::vector<LifeState>& state) {
  const OpInfo& info = opInfo(inst.kind);
  // High-level instructions are nodes a backend kept (shouldLower() ==
  // false); they obey the same operand and type rules as primitives.
  if (info.category != OpCategory::Primitive && info.category != OpCategory::HighLevel &&
      inst.kind != OpKind::Copy)
    return makeError("not an instruction kind");

  size_t numOut = info.numResults;
  if (inst.operands.size() < numOut) return makeError("too few operands");
  if (Error e = checkOperandsAndAttributes(info, inst.operands.size() - numOut, inst.attrs)) return e;
  std::vector<Type> inTypes, outTypes;
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    const Operand& op = inst.operands[i];
    bool isOut = i < numOut;
    if (isOut == (op.access == Access::In)) return makeError("operand ", i, " has the wrong access mode");
    const ValueId rootId = ir.resolve(op.value).first;
    const IRValue& root = ir.value(rootId);
    if (isOut && (root.kind == ValueKind::Constant || root.kind == ValueKind::Input))
      return makeError("writes read-only value '%", ir.value(op.value).name, "'");
    if (root.kind == ValueKind::Activation && state[rootId] != LifeState::Live)
      return makeError("uses '%", ir.value(op.value).name, "' outside its lifetime");
    (isOut ? outTypes : inTypes).push_back(ir.value(op.value).type);
  }
  if (inst.kind == OpKind::Copy) {
    if (inTypes.size() != 1 || inTypes[0].sizeInBytes() != outTypes[0].sizeInBytes())
      return makeError("copy between values of different sizes");
    return Error::success();
  }
  auto expected = inferResultTypes(inst.kind, inTypes, inst.attrs);
  if (!expected) return expected.error();
  if (*expected != outTypes) return makeError("output types differ from the op's type rule");
  return Error::success();
}

}  // namespace

Error IRFunction::verify() const {
  EMBER_RETURN_IF_ERROR(verifyValues(*this));
  std::vector<LifeState> state(values_.size(), LifeState::Unallocated);
  for (size_t index = 0; index < instrs_.size(); ++index) {
    const Instruction& inst = instrs_[index];
    for (const Operand& op : inst.operands)
      if (op.value >= values_.size())
        return instrError(*this, index, inst, makeError("operand refers to no value"));
    const bool marker = inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation;
    if (Error e = marker ? verifyLifetimeMarker(*this, inst, state) : verifyComputation(*this, inst, state))
      return instrError(*this, index, inst, e);
  }
  for (ValueId i = 0; i < values_.size(); ++i)
    if (values_[i].kind == ValueKind::Activation && state[i] == LifeState::Live)
      return makeError(name_, ": activation '%", values_[i].name, "' is never freed");
  return Error::success();
}

}  // namespace ember
