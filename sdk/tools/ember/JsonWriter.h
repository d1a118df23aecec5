// A tiny streaming JSON writer for --report-json: objects, arrays, strings,
// numbers and booleans, pretty-printed with two-space indents.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ember::cli {

class JsonWriter {
 public:
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  /// The key of the next value inside an object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);  ///< 10 significant digits; non-finite values are written as null
  JsonWriter& value(int64_t i);
  JsonWriter& value(uint64_t u);
  JsonWriter& value(int i) { return value(int64_t(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();

  /// The document so far (complete once every begin has its end).
  std::string str() const { return out_.str() + "\n"; }

  static std::string escape(std::string_view s);

 private:
  void beforeValue();
  void newline();
  void close(char bracket);

  std::ostringstream out_;
  /// Per open container: whether it has an element yet.
  std::vector<bool> hasElement_;
  bool afterKey_ = false;
};

}  // namespace ember::cli
