#include <sstream>

#include "ember/IR.h"

namespace ember {

ValueId IRFunction::addValue(IRValue value) {
  values_.push_back(std::move(value));
  return ValueId(values_.size() - 1);
}

ValueId IRFunction::addView(std::string name, ValueId base, Type type, uint64_t byteOffset) {
  IRValue v;
  v.name = std::move(name);
  v.type = std::move(type);
  v.kind = ValueKind::View;
  v.base = base;
  v.viewOffset = byteOffset;
  return addValue(std::move(v));
}

std::pair<ValueId, uint64_t> IRFunction::resolve(ValueId id) const {
  uint64_t offset = 0;
  while (values_[id].kind == ValueKind::View) {
    offset += values_[id].viewOffset;
    id = values_[id].base;
  }
  return {id, offset};
}

Region IRFunction::regionOf(ValueId id) const {
  switch (values_[resolve(id).first].kind) {
    case ValueKind::Constant: return Region::Constants;
    case ValueKind::Input:
    case ValueKind::Output: return Region::IO;
    default: return Region::Activations;
  }
}

std::vector<ValueId> IRFunction::inputs() const {
  std::vector<ValueId> ids;
  for (ValueId i = 0; i < values_.size(); ++i)
    if (values_[i].kind == ValueKind::Input) ids.push_back(i);
  return ids;
}

std::vector<ValueId> IRFunction::outputs() const {
  std::vector<ValueId> ids;
  for (ValueId i = 0; i < values_.size(); ++i)
    if (values_[i].kind == ValueKind::Output) ids.push_back(i);
  return ids;
}

namespace {
const char* kindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::Constant: return "constant";
    case ValueKind::Input: return "input";
    case ValueKind::Output: return "output";
    case ValueKind::Activation: return "activation";
    case ValueKind::View: return "view";
  }
  return "?";
}
const char* regionName(Region r) {
  switch (r) {
    case Region::Constants: return "const";
    case Region::IO: return "io";
    case Region::Activations: return "act";
  }
  return "?";
}
const char* accessName(Access a) {
  switch (a) {
    case Access::In: return "in";
    case Access::Out: return "out";
    case Access::InOut: return "inout";
  }
  return "?";
}
}  // namespace

std::string IRFunction::str() const {
  std::ostringstream os;
  os << "ir " << name_ << " {\n";
  os << "  // memory: constants " << plan_.constantBytes << " B, io " << plan_.ioBytes << " B, activations "
     << plan_.activationBytes << " B (lower bound " << plan_.activationLowerBoundBytes << " B), alignment "
     << plan_.alignment << '\n';
  for (ValueId i = 0; i < values_.size(); ++i) {
    const IRValue& v = values_[i];
    os << "  %" << v.name << " = " << kindName(v.kind);
    if (v.kind == ValueKind::View) {
      os << " %" << values_[v.base].name << " +" << v.viewOffset;
    } else {
      os << " @" << regionName(regionOf(i)) << '+' << v.offset;
    }
    os << " : " << v.type.str() << '\n';
  }
  for (const Instruction& inst : instrs_) {
    os << "  " << opName(inst.kind) << ' ';
    for (size_t i = 0; i < inst.operands.size(); ++i)
      os << (i ? ", " : "") << accessName(inst.operands[i].access) << " %" << values_[inst.operands[i].value].name;
    if (!inst.attrs.entries().empty()) os << ' ' << inst.attrs.str();
    if (!inst.name.empty()) os << "  // " << inst.name;
    os << '\n';
  }
  os << "}\n";
  return os.str();
}

}  // namespace ember
