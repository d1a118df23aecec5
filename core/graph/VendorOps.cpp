// The vendor-op registry and the verifier hooks of OpKind::VendorOp: a
// VendorOp is checked, typed and run through the def its `vendor_op`
// attribute names.
#include <algorithm>
#include <set>

#include "ember/VendorOp.h"

namespace ember {

namespace {

/// "ns.Name": a namespace and a name, each [A-Za-z0-9_]+ (the namespace is
/// usually the backend's name).
bool isNamespaced(std::string_view name) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) {
                       return c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                              (c >= 'A' && c <= 'Z');
                     }) &&
         std::count(name.begin(), name.end(), '.') == 1;
}

Error checkDef(const std::string& backend, const VendorOpDef& def) {
  if (!isNamespaced(def.name))
    return makeError("backend '", backend, "': vendor op name '", def.name,
                     "' must be namespaced as 'ns.Name' (letters, digits, '_')");
  if (def.operandNames.empty()) return makeError("vendor op '", def.name, "' declares no operands");
  if (!def.typeRule) return makeError("vendor op '", def.name, "' has no type rule");
  if (!def.referenceKernel) return makeError("vendor op '", def.name, "' has no reference kernel");
  for (const AttrSpec& spec : def.attributes)
    if (spec.name == kVendorOpAttr)
      return makeError("vendor op '", def.name, "' declares the reserved attribute '", kVendorOpAttr, "'");
  for (const VendorOpExample& example : def.examples)
    if (!example.constantOperands.empty() && example.constantOperands.size() != example.operandTypes.size())
      return makeError("vendor op '", def.name, "': example '", example.name,
                       "' gives constantOperands for some operands only");
  for (const VendorPattern& pattern : def.patterns)
    if (!pattern.matchAndRewrite)
      return makeError("vendor op '", def.name, "': pattern '", pattern.name, "' is empty");
  return Error::success();
}

/// The def's declaration as an OpInfo (its own name, operands and attributes
/// plus `vendor_op`), so the generic operand and attribute check applies.
OpInfo declarationOf(const VendorOpDef& def) {
  OpInfo info = opInfo(OpKind::VendorOp);
  info.name = def.name;
  info.operandNames = def.operandNames;
  info.variadic = false;
  info.attributes = def.attributes;
  info.attributes.push_back(AttrSpec{std::string(kVendorOpAttr), AttrKind::String, false});
  return info;
}

}  // namespace

VendorOpRegistry& VendorOpRegistry::global() {
  static VendorOpRegistry registry;
  return registry;
}

Error VendorOpRegistry::add(const std::string& backend, std::vector<VendorOpDef> defs) {
  std::set<std::string> names;
  for (const VendorOpDef& def : defs) {
    EMBER_RETURN_IF_ERROR(checkDef(backend, def));
    if (!names.insert(def.name).second)
      return makeError("backend '", backend, "' registers vendor op '", def.name, "' twice");
    std::string owner = ownerOf(def.name);
    if (!owner.empty())
      return makeError("backend '", backend, "': vendor op '", def.name,
                       "' is already registered by backend '", owner, "'");
  }
  for (VendorOpDef& def : defs) entries_.push_back(std::make_unique<Entry>(Entry{backend, std::move(def)}));
  return Error::success();
}

const VendorOpDef* VendorOpRegistry::find(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry->def.name == name) return &entry->def;
  return nullptr;
}

std::string VendorOpRegistry::ownerOf(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry->def.name == name) return entry->backend;
  return {};
}

std::vector<const VendorOpDef*> VendorOpRegistry::ofBackend(std::string_view backend) const {
  std::vector<const VendorOpDef*> defs;
  for (const auto& entry : entries_)
    if (entry->backend == backend) defs.push_back(&entry->def);
  return defs;
}

std::vector<const VendorOpDef*> VendorOpRegistry::all() const {
  std::vector<const VendorOpDef*> defs;
  defs.reserve(entries_.size());
  for (const auto& entry : entries_) defs.push_back(&entry->def);
  return defs;
}

std::string VendorOpRegistry::namesList() const {
  std::string list;
  for (const auto& entry : entries_) list += (list.empty() ? "" : ", ") + entry->def.name;
  return list.empty() ? "none" : list;
}

std::string vendorOpName(const Attributes& attrs) {
  if (const AttrValue* v = attrs.find(kVendorOpAttr))
    if (const auto* s = std::get_if<std::string>(v)) return *s;
  return {};
}

Expected<const VendorOpDef*> lookupVendorOp(const Attributes& attrs) {
  const AttrValue* v = attrs.find(kVendorOpAttr);
  if (!v || !std::holds_alternative<std::string>(*v))
    return makeError("missing string attribute '", kVendorOpAttr, "' naming the registered vendor op");
  const std::string& name = std::get<std::string>(*v);
  const VendorOpRegistry& registry = VendorOpRegistry::global();
  if (const VendorOpDef* def = registry.find(name)) return def;
  return makeError("vendor op '", name, "' is not registered (registered: ", registry.namesList(), ")");
}

Error checkVendorOpOperandsAndAttributes(size_t numOperands, const Attributes& attrs) {
  auto def = lookupVendorOp(attrs);
  if (!def) return def.error();
  if (Error e = checkOperandsAndAttributes(declarationOf(**def), numOperands, attrs))
    return e.withContext("vendor op '" + (*def)->name + "'");
  return Error::success();
}

Expected<std::vector<Type>> inferVendorOpResultTypes(std::span<const Type> inputTypes,
                                                     const Attributes& attrs) {
  auto def = lookupVendorOp(attrs);
  if (!def) return def.error();
  if (inputTypes.size() != (*def)->operandNames.size())
    return makeError("vendor op '", (*def)->name, "' expects ", (*def)->operandNames.size(),
                     " operand(s), got ", inputTypes.size());
  auto type = (*def)->typeRule(inputTypes, attrs);
  if (!type) return type.error().withContext("vendor op '" + (*def)->name + "'");
  return std::vector<Type>{type.take()};
}

Error runVendorOpKernel(const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                        std::span<const TensorRef> outputs) {
  auto def = lookupVendorOp(attrs);
  if (!def) return def.error();
  std::vector<Type> inputTypes;
  for (const ConstTensorRef& in : inputs) inputTypes.push_back(in.type);
  auto expected = inferVendorOpResultTypes(inputTypes, attrs);
  if (!expected) return expected.error();
  const std::string& name = (*def)->name;
  if (outputs.size() != 1)
    return makeError("vendor op '", name, "': expected 1 output, got ", outputs.size());
  if (outputs[0].type != (*expected)[0])
    return makeError("vendor op '", name, "': output is ", outputs[0].type.str(), " but the type rule gives ",
                     (*expected)[0].str());
  if (Error e = (*def)->referenceKernel(attrs, inputs, outputs[0]))
    return e.withContext("vendor op '" + name + "'");
  return Error::success();
}

}  // namespace ember
