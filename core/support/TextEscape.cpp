#include "ember/TextEscape.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>

namespace ember {

namespace {

/// The length of the well-formed UTF-8 sequence that starts at text[at], or 0.
size_t utf8SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - at < length || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  return length;
}

/// The code point of the well-formed sequence of `length` bytes at text[at].
char32_t decodeUtf8(std::string_view text, size_t at, size_t length) {
  static constexpr unsigned char kLeadBits[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  char32_t code = static_cast<unsigned char>(text[at]) & kLeadBits[length];
  for (size_t i = 1; i < length; ++i) code = (code << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3f);
  return code;
}

/// YAML 1.2's c-printable: tab, LF, CR, printable ASCII, NEL, and the rest
/// of Unicode except the C1 controls, surrogates, U+FFFE and U+FFFF.
bool isYamlPrintable(char32_t c) {
  return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0x7e) || c == 0x85 ||
         (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

void appendHexByte(std::string& out, unsigned char byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(byte));
  out += buf;
}

}  // namespace

std::string escapeControlChars(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0, step = 1; at < text.size(); at += step, step = 1) {
    const char c = text[at];
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      appendHexByte(out, byte);
    } else if (byte >= 0x80) {
      step = utf8SequenceLength(text, at);
      if (step == 0) {
        appendHexByte(out, byte);
        step = 1;
      } else {
        out.append(text.substr(at, step));
      }
    } else {
      out += c;
    }
  }
  return out;
}

size_t invalidUtf8Offset(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8SequenceLength(text, at);
    if (length == 0) return at;
    at += length;
  }
  return std::string_view::npos;
}

Error checkYamlText(std::string_view text, const std::string& origin) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8SequenceLength(text, at);
    const char32_t code = length ? decodeUtf8(text, at, length) : 0;
    const auto line = [&] { return std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n') + 1; };
    // A lone CR is a line break in YAML, but yaml-cpp keeps it in a plain
    // scalar and may write it back where it reads as a break (CR LF is fine).
    if (code == '\r' && (at + 1 == text.size() || text[at + 1] != '\n'))
      return makeError(origin, ":", line(),
                       ": a carriage return without a line feed, which yaml-cpp misreads");
    if (length == 0 || !isYamlPrintable(code)) {
      char what[48];
      if (length == 0)
        std::snprintf(what, sizeof what, "not valid UTF-8 (byte 0x%02x)",
                      unsigned(static_cast<unsigned char>(text[at])));
      else
        std::snprintf(what, sizeof what, "character U+%04X", unsigned(code));
      return makeError(origin, ":", line(), ": ", what, ", which a YAML file may not hold");
    }
    at += length;
  }
  return Error::success();
}

Error oneLineError(const Error& error) {
  if (!error) return error;
  return Error::make(escapeControlChars(error.message()));
}

}  // namespace ember
