// Parses Ops.def's declarative strings into OpInfo records, once, and answers
// the family and element-kind questions of ember/OpTable.h from them.
#include <algorithm>
#include <array>
#include <cassert>
#include <optional>

#include "OpDefSyntax.h"
#include "ember/Graph.h"
#include "ember/OpTable.h"

namespace ember {

namespace {

struct RawOp {
  OpKind kind;
  const char* name;
  OpCategory category;
  OpFamily family;
  const char* operands;
  unsigned numResults;
  unsigned traits;
  const char* attributes;
};

constexpr RawOp kRawOps[] = {
#define EMBER_OP(Name, Category, Family, Operands, Results, Traits, Attrs) \
  {OpKind::Name, #Name, OpCategory::Category, OpFamily::Family, Operands, Results, Traits, Attrs},
#include "ember/Ops.def"
};

AttrKind parseAttrKind(const std::string& s) {
  if (s == "int") return AttrKind::Int;
  if (s == "float") return AttrKind::Float;
  if (s == "string" || s == "enum") return AttrKind::String;
  if (s == "ints") return AttrKind::Ints;
  assert(s == "floats" && "unknown attribute kind in Ops.def");
  return AttrKind::Floats;
}

/// What Ops.def says about one op beyond OpInfo: its family and, per operand,
/// the element kinds its reference kernel implements (nullopt: undeclared).
struct OpTableEntry {
  OpFamily family = OpFamily::Storage;
  std::vector<std::optional<ElemKindSet>> operandKinds;
};

struct Tables {
  std::array<OpInfo, kNumOpKinds> info;
  std::array<OpTableEntry, kNumOpKinds> entries;
};

Tables buildTables() {
  Tables tables;
  for (const RawOp& raw : kRawOps) {
    OpInfo& info = tables.info[size_t(raw.kind)];
    OpTableEntry& entry = tables.entries[size_t(raw.kind)];
    info.kind = raw.kind;
    info.name = raw.name;
    info.category = raw.category;
    info.numResults = raw.numResults;
    info.traits = raw.traits;
    entry.family = raw.family;
    for (const std::string& text : opdef::splitList(raw.operands)) {
      opdef::OperandDecl operand = opdef::parseOperand(text);
      info.variadic = info.variadic || operand.variadic;
      info.operandNames.push_back(operand.name);
      std::optional<ElemKindSet> kinds;
      if (!operand.kinds.empty()) {
        kinds = elemKindSetFromName(operand.kinds);
        assert(kinds && "unknown element-kind set in Ops.def");
      }
      entry.operandKinds.push_back(kinds);
    }
    for (const std::string& text : opdef::splitList(raw.attributes)) {
      opdef::AttributeDecl attr = opdef::parseAttribute(text);
      assert(attr.valid && "malformed attribute in Ops.def");
      info.attributes.push_back(AttrSpec{attr.name, parseAttrKind(attr.kind), attr.optional});
    }
  }
  return tables;
}

const Tables& tables() {
  static const Tables kTables = buildTables();
  return kTables;
}

const std::optional<ElemKindSet>* declaredKinds(OpKind kind, size_t operand) {
  if (size_t(kind) >= kNumOpKinds) return nullptr;
  const auto& operandKinds = tables().entries[size_t(kind)].operandKinds;
  if (operandKinds.empty()) return nullptr;
  // Variadic ops declare their repeated operand once, last.
  if (operand >= operandKinds.size() && !tables().info[size_t(kind)].variadic) return nullptr;
  return &operandKinds[std::min(operand, operandKinds.size() - 1)];
}

}  // namespace

const OpInfo& opInfo(OpKind kind) { return tables().info[size_t(kind)]; }

std::string_view opName(OpKind kind) { return opInfo(kind).name; }

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (const OpInfo& info : tables().info)
    if (info.name == name) return info.kind;
  return std::nullopt;
}

std::string_view opFamilyName(OpFamily family) {
  switch (family) {
    case OpFamily::Storage:
      return "storage";
    case OpFamily::ElementwiseUnary:
      return "elementwise unary";
    case OpFamily::ElementwiseBinary:
      return "elementwise binary";
    case OpFamily::ElementwiseTernary:
      return "elementwise ternary";
    case OpFamily::LinearAlgebra:
      return "linear algebra";
    case OpFamily::Pooling:
      return "pooling";
    case OpFamily::Reduction:
      return "reduction";
    case OpFamily::DataMovement:
      return "data movement";
    case OpFamily::GatherScatter:
      return "gather/scatter";
    case OpFamily::Resampling:
      return "resampling";
    case OpFamily::ValueDependent:
      return "value-dependent";
    case OpFamily::OnnxQuantization:
      return "ONNX quantization";
    case OpFamily::Random:
      return "random";
    case OpFamily::Quantized:
      return "quantized";
    case OpFamily::QuantizedTransformer:
      return "quantized transformer";
    case OpFamily::Vendor:
      return "vendor";
    case OpFamily::Normalization:
      return "normalization";
    case OpFamily::IRBookkeeping:
      return "IR bookkeeping";
  }
  return "unknown";
}

std::string elemKindSetStr(ElemKindSet set) {
  std::string s;
  for (unsigned k = 0; k <= unsigned(ElemKind::F64); ++k) {
    if (!contains(set, ElemKind(k))) continue;
    if (!s.empty()) s += ", ";
    s += elemKindName(ElemKind(k));
  }
  return s;
}

std::optional<ElemKindSet> elemKindSetFromName(std::string_view names) {
  ElemKindSet set = 0;
  for (const std::string& name : opdef::splitList(names, '|')) {
    if (name == "any")
      set |= kAnyKinds;
    else if (name == "numeric")
      set |= kNumericKinds;
    else if (name == "float")
      set |= kFloatKinds;
    else if (name == "int")
      set |= kIntKinds;
    else if (name == "bool")
      set |= kBoolKinds;
    else if (name == "castable")
      set |= kCastableKinds;
    else if (name == "quant8")
      set |= kQuant8Kinds;
    else if (std::optional<ElemKind> kind = elemKindFromName(name))
      set |= elemKindBit(*kind);
    else
      return std::nullopt;
  }
  if (set == 0) return std::nullopt;
  return set;
}

OpFamily opFamily(OpKind kind) {
  return size_t(kind) < kNumOpKinds ? tables().entries[size_t(kind)].family : OpFamily::Storage;
}

bool declaresOperandKinds(OpKind kind, size_t operand) {
  const std::optional<ElemKindSet>* kinds = declaredKinds(kind, operand);
  return kinds && kinds->has_value();
}

ElemKindSet operandElemKinds(OpKind kind, size_t operand) {
  const std::optional<ElemKindSet>* kinds = declaredKinds(kind, operand);
  return kinds && kinds->has_value() ? **kinds : kAnyKinds;
}

}  // namespace ember
