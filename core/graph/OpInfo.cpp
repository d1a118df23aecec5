// Parses Ops.def's declarative strings into OpInfo records, once.
#include <array>
#include <sstream>

#include "ember/Graph.h"

namespace ember {

namespace {

struct RawOp {
  OpKind kind;
  const char* name;
  OpCategory category;
  const char* operands;
  unsigned numResults;
  unsigned traits;
  const char* attributes;
};

constexpr RawOp kRawOps[] = {
#define EMBER_OP(Name, Category, Operands, Results, Traits, Attrs) \
  {OpKind::Name, #Name, OpCategory::Category, Operands, Results, Traits, Attrs},
#include "ember/Ops.def"
};

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> parts;
  std::string current;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
      if (*p == '\0') break;
    } else if (*p != ' ') {
      current += *p;
    }
  }
  return parts;
}

AttrKind parseAttrKind(const std::string& s) {
  if (s == "int") return AttrKind::Int;
  if (s == "float") return AttrKind::Float;
  if (s == "string") return AttrKind::String;
  if (s == "ints") return AttrKind::Ints;
  assert(s == "floats" && "unknown attribute kind in Ops.def");
  return AttrKind::Floats;
}

std::array<OpInfo, kNumOpKinds> buildTable() {
  std::array<OpInfo, kNumOpKinds> table;
  for (const RawOp& raw : kRawOps) {
    OpInfo& info = table[size_t(raw.kind)];
    info.kind = raw.kind;
    info.name = raw.name;
    info.category = raw.category;
    info.numResults = raw.numResults;
    info.traits = raw.traits;
    for (std::string operand : splitList(raw.operands)) {
      if (operand.ends_with("...")) {
        info.variadic = true;
        operand.resize(operand.size() - 3);
      }
      info.operandNames.push_back(operand);
    }
    for (std::string attr : splitList(raw.attributes)) {
      AttrSpec spec;
      if (attr.ends_with("?")) {
        spec.optional = true;
        attr.pop_back();
      }
      size_t colon = attr.find(':');
      assert(colon != std::string::npos && "attribute without kind in Ops.def");
      spec.name = attr.substr(0, colon);
      spec.kind = parseAttrKind(attr.substr(colon + 1));
      info.attributes.push_back(spec);
    }
  }
  return table;
}

const std::array<OpInfo, kNumOpKinds>& table() {
  static const std::array<OpInfo, kNumOpKinds> kTable = buildTable();
  return kTable;
}

}  // namespace

const OpInfo& opInfo(OpKind kind) { return table()[size_t(kind)]; }

std::string_view opName(OpKind kind) { return opInfo(kind).name; }

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (const OpInfo& info : table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

}  // namespace ember
