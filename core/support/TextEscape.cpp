#include "ember/TextEscape.h"

#include <cstdio>

namespace ember {

std::string escapeControlChars(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(byte));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

Error oneLineError(const Error& error) {
  if (!error) return error;
  return Error::make(escapeControlChars(error.message()));
}

}  // namespace ember
