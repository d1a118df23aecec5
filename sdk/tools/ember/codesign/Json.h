// A small JSON value for the co-design tools: parses the run/sim reports and
// the per-point results, and writes the per-point JSON. Not a general library:
// numbers are doubles (exact for integers below 2^53, enough for counters).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/Error.h"

namespace ember {
class JsonWriter;
}

namespace ember::codesign {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Json() = default;
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}
  Json(double d) : kind_(Kind::Number), number_(d) {}
  Json(int64_t i) : kind_(Kind::Number), number_(double(i)) {}
  Json(int i) : kind_(Kind::Number), number_(double(i)) {}
  Json(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  Json(const char* s) : kind_(Kind::String), string_(s) {}
  static Json array() { return Json(Kind::Array); }
  static Json object() { return Json(Kind::Object); }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  double number() const { return number_; }
  bool boolean() const { return bool_; }
  const std::string& string() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  /// Object members in insertion order.
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

  /// The member `key` of an object, or null when absent (or not an object).
  const Json* find(std::string_view key) const;
  std::optional<double> numberAt(std::string_view key) const;
  std::string stringAt(std::string_view key, const std::string& fallback = "") const;

  Json& push(Json value);
  /// Sets (or replaces) the member `key`.
  Json& set(std::string key, Json value);

  /// Pretty-printed with two-space indents; doubles with up to 17 digits.
  std::string dump() const;

 private:
  explicit Json(Kind kind) : kind_(kind) {}
  void writeTo(JsonWriter& json) const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

/// Parses a JSON document; errors name `origin` and the byte offset.
Expected<Json> parseJson(std::string_view text, const std::string& origin);
/// Reads and parses a file; errors name the path.
Expected<Json> readJsonFile(const std::string& path);

/// Reads a whole file, naming the path on failure.
Expected<std::string> readTextFile(const std::string& path);
/// Writes a file through a temporary and a rename, so that a reader (or a
/// resumed sweep) never sees half a file.
Error writeTextFileAtomic(const std::string& path, const std::string& text);

}  // namespace ember::codesign
