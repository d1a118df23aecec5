// Spelling snake_case names (ONNX attributes, backend names) as C++ ones.
// Header-only: the build-time op generator uses it without linking ember.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace ember {

/// "coordinate_transformation_mode" -> "CoordinateTransformationMode" (or
/// "coordinateTransformationMode" when !upperFirst): each '_' is dropped and
/// the letter after it upper-cased.
inline std::string camelCase(std::string_view snake, bool upperFirst) {
  std::string out;
  bool upper = upperFirst;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

}  // namespace ember
