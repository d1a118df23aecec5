// Splits Ops.def's declarative strings ("lhs:numeric,rhs:numeric",
// "mode:enum(a|b)?"). Header-only so that OpInfo.cpp and the attribute-struct
// generator (opgen/), which cannot link ember_graph, share one reading.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::opdef {

/// Splits on `separator`, dropping spaces and empty parts.
inline std::vector<std::string> splitList(std::string_view text, char separator = ',') {
  std::vector<std::string> parts;
  std::string current;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else if (text[i] != ' ') {
      current += text[i];
    }
  }
  return parts;
}

/// One "name[...][:kinds]" entry of the operands string.
struct OperandDecl {
  std::string name;
  std::string kinds;  ///< "numeric|bool"; empty when undeclared
  bool variadic = false;
};

inline OperandDecl parseOperand(std::string text) {
  OperandDecl decl;
  size_t colon = text.find(':');
  if (colon != std::string::npos) {
    decl.kinds = text.substr(colon + 1);
    text.resize(colon);
  }
  if (text.ends_with("...")) {
    decl.variadic = true;
    text.resize(text.size() - 3);
  }
  decl.name = text;
  return decl;
}

/// One "name:kind[?]" entry of the attributes string.
struct AttributeDecl {
  std::string name;
  std::string kind;  ///< int|float|string|ints|floats|enum
  std::vector<std::string> enumValues;
  bool optional = false;
  bool valid = true;
};

inline AttributeDecl parseAttribute(std::string text) {
  AttributeDecl decl;
  if (text.ends_with("?")) {
    decl.optional = true;
    text.pop_back();
  }
  size_t colon = text.find(':');
  if (colon == std::string::npos) {
    decl.valid = false;
    return decl;
  }
  decl.name = text.substr(0, colon);
  decl.kind = text.substr(colon + 1);
  if (decl.kind.starts_with("enum(") && decl.kind.ends_with(")")) {
    decl.enumValues = splitList(std::string_view(decl.kind).substr(5, decl.kind.size() - 6), '|');
    decl.kind = "enum";
    decl.valid = !decl.enumValues.empty();
  }
  return decl;
}

}  // namespace ember::opdef
