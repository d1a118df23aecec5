#include "ember/Graph.h"
#include "ember/VendorOp.h"

namespace ember {

namespace {
bool attrHasKind(const AttrValue& v, AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return std::holds_alternative<int64_t>(v);
    case AttrKind::Float: return std::holds_alternative<double>(v);
    case AttrKind::String: return std::holds_alternative<std::string>(v);
    case AttrKind::Ints: return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::Floats: return std::holds_alternative<std::vector<double>>(v);
  }
  return false;
}
const char* attrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
  }
  return "?";
}
}  // namespace

Error checkOperandsAndAttributes(const OpInfo& info, size_t numOperands, const Attributes& attrs) {
  // The generic VendorOp record defers to the registered op's declaration.
  if (info.kind == OpKind::VendorOp && info.name == opName(OpKind::VendorOp))
    return checkVendorOpOperandsAndAttributes(numOperands, attrs);
  size_t declared = info.operandNames.size();
  if (info.variadic ? numOperands < declared : numOperands != declared)
    return makeError("expects ", info.variadic ? "at least " : "", declared, " operand(s), got ", numOperands);
  for (const AttrSpec& spec : info.attributes) {
    const AttrValue* v = attrs.find(spec.name);
    if (!v) {
      if (spec.optional) continue;
      return makeError("missing attribute '", spec.name, "'");
    }
    if (!attrHasKind(*v, spec.kind))
      return makeError("attribute '", spec.name, "' must be of kind ", attrKindName(spec.kind));
  }
  for (const auto& [name, value] : attrs.entries()) {
    bool known = false;
    for (const AttrSpec& spec : info.attributes) known |= spec.name == name;
    if (!known) return makeError("unknown attribute '", name, "'");
  }
  return Error::success();
}

}  // namespace ember
