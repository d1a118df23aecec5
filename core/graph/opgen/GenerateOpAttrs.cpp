// Writes ember/OpAttrs.h: one struct per op of Ops.def that has attributes
// (ConvAttrs with .strides, .pads, ...) and one enum per enum attribute
// (PadMode::Reflect). Run by CMake at build time; C++ only, so the build
// needs no Python. The file is rewritten only when its text changes, so an
// Ops.def edit that leaves the attributes alone rebuilds nothing else.
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../OpDefSyntax.h"
#include "ember/CamelCase.h"

namespace {

using ember::camelCase;

struct RawOp {
  const char* name;
  const char* attributes;
};

constexpr RawOp kRawOps[] = {
#define EMBER_OP(Name, Category, Family, Operands, Results, Traits, Attrs) {#Name, Attrs},
#include "ember/Ops.def"
};

std::string cppType(const std::string& kind) {
  if (kind == "int") return "int64_t";
  if (kind == "float") return "double";
  if (kind == "string") return "std::string";
  if (kind == "ints") return "std::vector<int64_t>";
  return "std::vector<double>";
}

std::string getter(const std::string& kind) {
  if (kind == "int") return "getInt";
  if (kind == "float") return "getFloat";
  if (kind == "string" || kind == "enum") return "getString";
  if (kind == "ints") return "getInts";
  return "getFloats";
}

/// Ops with the same attribute list share one struct, and enum attributes
/// with the same values one enum (ArgMinAttrs is ArgMaxAttrs): a kernel that
/// serves several ops reads one type.
std::map<std::string, std::string> structBySignature;
std::map<std::vector<std::string>, std::string> enumByValues;

void writeEnum(std::ostream& os, const std::string& enumName, const std::vector<std::string>& values) {
  auto [it, inserted] = enumByValues.emplace(values, enumName);
  if (!inserted) {
    os << "using " << enumName << " = " << it->second << ";\n\n";
    return;
  }
  os << "enum class " << enumName << " : uint8_t {";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : " ") << camelCase(values[i], true);
  os << " };\n\n";
  os << "inline std::string_view toString(" << enumName << " value) {\n  switch (value) {\n";
  for (const std::string& v : values)
    os << "    case " << enumName << "::" << camelCase(v, true) << ": return \"" << v << "\";\n";
  os << "  }\n  return \"\";\n}\n\n";
  os << "inline std::optional<" << enumName << "> parse" << enumName << "(std::string_view text) {\n";
  for (const std::string& v : values)
    os << "  if (text == \"" << v << "\") return " << enumName << "::" << camelCase(v, true) << ";\n";
  os << "  return std::nullopt;\n}\n\n";
}

/// The member declaration and the statement of from() that fills it.
void writeOp(std::ostream& os, const RawOp& op) {
  std::vector<ember::opdef::AttributeDecl> attrs;
  for (const std::string& text : ember::opdef::splitList(op.attributes))
    attrs.push_back(ember::opdef::parseAttribute(text));
  if (attrs.empty()) return;
  const std::string structName = std::string(op.name) + "Attrs";
  for (const auto& a : attrs)
    if (a.kind == "enum") writeEnum(os, op.name + camelCase(a.name, true), a.enumValues);
  auto [it, inserted] = structBySignature.emplace(op.attributes, structName);
  if (!inserted) {
    os << "using " << structName << " = " << it->second << ";\n\n";
    return;
  }

  os << "/// " << op.name << "'s attributes (Ops.def).\nstruct " << structName << " {\n";
  for (const auto& a : attrs) {
    std::string type = a.kind == "enum" ? op.name + camelCase(a.name, true) : cppType(a.kind);
    std::string init = a.kind == "int" || a.kind == "float" ? "{}" : "";
    if (a.kind == "enum") init = "{}";
    if (a.optional) {
      type.insert(0, "std::optional<").push_back('>');
      init.clear();
    }
    os << "  " << type << " " << camelCase(a.name, false) << init << ";\n";
  }
  os << "\n  static " << structName << " from(const Attributes& attrs) {\n    " << structName << " result;\n";
  for (const auto& a : attrs) {
    const std::string member = "result." + camelCase(a.name, false);
    const std::string read = "attrs." + getter(a.kind) + "(\"" + a.name + "\")";
    std::string value = read;
    // The type rule has checked the value, so an unknown one cannot reach here.
    if (a.kind == "enum") {
      const std::string& enumName = enumByValues.at(a.enumValues);
      value = "parse";
      value.append(enumName).append("(").append(read).append(").value_or(").append(enumName).append("{})");
    }
    if (a.optional)
      os << "    if (attrs.has(\"" << a.name << "\")) " << member << " = " << value << ";\n";
    else
      os << "    " << member << " = " << value << ";\n";
  }
  os << "    return result;\n  }\n};\n\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ember_opgen OUTPUT.h\n";
    return 2;
  }
  std::ostringstream os;
  os << "// Generated from core/include/ember/Ops.def by core/graph/opgen/GenerateOpAttrs.cpp.\n"
        "// Do not edit: change Ops.def. One struct per op with attributes; enum\n"
        "// attributes are C++ enums. Read them with `ConvAttrs::from(attrs)` or\n"
        "// `node.attrs<ConvAttrs>()`.\n"
        "#pragma once\n\n#include <cstdint>\n#include <optional>\n#include <string>\n"
        "#include <string_view>\n#include <vector>\n\n#include \"ember/Attributes.h\"\n\nnamespace ember "
        "{\n\n";
  for (const RawOp& op : kRawOps) writeOp(os, op);
  os << "}  // namespace ember\n";

  const std::string text = os.str();
  std::ifstream existing(argv[1], std::ios::binary);
  if (existing) {
    std::stringstream old;
    old << existing.rdbuf();
    if (old.str() == text) return 0;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    std::cerr << "ember_opgen: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
