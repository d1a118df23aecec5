// The one JSON writer of the project: a streaming writer of objects, arrays,
// strings, numbers and booleans. Containers are pretty-printed with two-space
// indents unless opened Inline (one line, ", " between elements) or Lines (one
// element a line, no indent: the Chrome trace format). Used by the `ember`
// tool's reports, the co-design results and the simulator's statistics.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class JsonWriter {
 public:
  enum class Layout { Pretty, Inline, Lines };

  /// `significantDigits` of doubles (%.Ng): 10 for the tool's reports, 17 to
  /// round-trip exactly.
  explicit JsonWriter(int significantDigits = 10) : significantDigits_(significantDigits) {}

  JsonWriter& beginObject(Layout layout = Layout::Pretty);
  JsonWriter& endObject();
  JsonWriter& beginArray(Layout layout = Layout::Pretty);
  JsonWriter& endArray();
  /// The key of the next value inside an object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);  ///< non-finite values are written as null
  JsonWriter& value(int64_t i);
  JsonWriter& value(uint64_t u);
  JsonWriter& value(int i) { return value(int64_t(i)); }
  JsonWriter& value(unsigned u) { return value(uint64_t(u)); }
  JsonWriter& value(bool b);
  JsonWriter& null();

  /// The document so far (complete once every begin has its end), with a final newline.
  std::string str() const { return out_.str() + "\n"; }

  /// `text` as a quoted JSON string: control characters escaped, UTF-8 passed
  /// through, each byte that is not part of well-formed UTF-8 written as U+FFFD.
  static std::string escape(std::string_view text);

 private:
  struct Open {
    Layout layout;
    bool hasElement = false;
  };

  void beforeValue();
  void open(char bracket, Layout layout);
  void close(char bracket);
  /// A line break indented by the open Pretty containers.
  void newline();

  std::ostringstream out_;
  std::vector<Open> open_;
  bool afterKey_ = false;
  int significantDigits_;
};

}  // namespace ember
