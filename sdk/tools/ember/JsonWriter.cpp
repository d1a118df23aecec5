#include "JsonWriter.h"

#include <cassert>
#include <cmath>
#include <cstdio>

namespace ember::cli {

void JsonWriter::newline() { out_ << '\n' << std::string(2 * hasElement_.size(), ' '); }

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (hasElement_.empty()) return;  // top level
  if (hasElement_.back()) out_ << ',';
  hasElement_.back() = true;
  newline();
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  out_ << '{';
  hasElement_.push_back(false);
  return *this;
}

void JsonWriter::close(char bracket) {
  assert(!hasElement_.empty() && !afterKey_);
  bool nonEmpty = hasElement_.back();
  hasElement_.pop_back();
  if (nonEmpty) newline();
  out_ << bracket;
}

JsonWriter& JsonWriter::endObject() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  out_ << '[';
  hasElement_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  beforeValue();
  out_ << escape(name) << ": ";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  beforeValue();
  out_ << escape(s);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  beforeValue();
  if (!std::isfinite(d)) {
    out_ << "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", d);
  out_ << buf;
  return *this;
}

JsonWriter& JsonWriter::value(int64_t i) {
  beforeValue();
  out_ << i;
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t u) {
  beforeValue();
  out_ << u;
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  beforeValue();
  out_ << (b ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  out_ << "null";
  return *this;
}

std::string JsonWriter::escape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

}  // namespace ember::cli
