#include "ember/JsonWriter.h"

#include <cassert>
#include <cmath>
#include <cstdio>

#include "ember/TextEscape.h"

namespace ember {

void JsonWriter::newline() {
  size_t indent = 0;
  for (const Open& o : open_)
    if (o.layout == Layout::Pretty) indent += 2;
  out_ << '\n' << std::string(indent, ' ');
}

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (open_.empty()) return;  // top level
  Open& container = open_.back();
  if (container.hasElement) out_ << (container.layout == Layout::Inline ? ", " : ",");
  container.hasElement = true;
  if (container.layout != Layout::Inline) newline();
}

void JsonWriter::open(char bracket, Layout layout) {
  beforeValue();
  out_ << bracket;
  open_.push_back({layout});
}

void JsonWriter::close(char bracket) {
  assert(!open_.empty() && !afterKey_);
  const Open closing = open_.back();
  open_.pop_back();
  if (closing.hasElement && closing.layout != Layout::Inline) newline();
  out_ << bracket;
}

JsonWriter& JsonWriter::beginObject(Layout layout) {
  open('{', layout);
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::beginArray(Layout layout) {
  open('[', layout);
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
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", significantDigits_, d);
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

std::string JsonWriter::escape(std::string_view text) {
  // JSON text is Unicode: a byte that is not part of well-formed UTF-8 (a
  // file name from a non-UTF-8 file system) is written as U+FFFD, so that
  // the document stays readable.
  // Only such text is copied; the rest is read as it is.
  std::string replaced;
  for (size_t bad = invalidUtf8Offset(text); bad != std::string_view::npos; bad = invalidUtf8Offset(text)) {
    replaced.append(text.substr(0, bad)).append("\xEF\xBF\xBD");
    text.remove_prefix(bad + 1);
  }
  if (!replaced.empty()) text = replaced.append(text);
  std::string out = "\"";
  for (char c : text) {
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

}  // namespace ember
