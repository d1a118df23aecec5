#include "Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/FileIO.h"
#include "ember/JsonWriter.h"

namespace ember::codesign {

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

std::optional<double> Json::numberAt(std::string_view key) const {
  const Json* v = find(key);
  if (!v || !v->isNumber()) return std::nullopt;
  return v->number();
}

std::string Json::stringAt(std::string_view key, const std::string& fallback) const {
  const Json* v = find(key);
  return v && v->isString() ? v->string() : fallback;
}

Json& Json::push(Json value) {
  assert(kind_ == Kind::Array);
  items_.push_back(std::move(value));
  return items_.back();
}

Json& Json::set(std::string key, Json value) {
  assert(kind_ == Kind::Object);
  for (auto& [k, v] : members_)
    if (k == key) return v = std::move(value);
  members_.emplace_back(std::move(key), std::move(value));
  return members_.back().second;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  Expected<Json> document() {
    Json value;
    if (Error e = parseValue(value, 0)) return e;
    skipSpace();
    if (pos_ != text_.size()) return fail("unexpected text after the document");
    return value;
  }

 private:
  Error fail(const std::string& what) const { return makeError(origin_, ": offset ", pos_, ": ", what); }

  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Error parseValue(Json& out, int depth) {
    if (depth > 200) return fail("nesting too deep");
    skipSpace();
    if (pos_ >= text_.size()) return fail("unexpected end of input");
    char c = text_[pos_];
    if (c == '{') return parseObject(out, depth);
    if (c == '[') return parseArray(out, depth);
    if (c == '"') {
      std::string s;
      if (Error e = parseString(s)) return e;
      out = Json(std::move(s));
      return Error::success();
    }
    if (consume("true")) return out = Json(true), Error::success();
    if (consume("false")) return out = Json(false), Error::success();
    if (consume("null")) return out = Json(), Error::success();
    return parseNumber(out);
  }

  Error parseNumber(Json& out) {
    size_t start = pos_;
    while (pos_ < text_.size() && std::string_view("+-0123456789.eE").find(text_[pos_]) != std::string::npos)
      ++pos_;
    std::string word(text_.substr(start, pos_ - start));
    char* end = nullptr;
    double d = word.empty() ? 0 : std::strtod(word.c_str(), &end);
    if (word.empty() || *end != '\0') {
      pos_ = start;
      return fail("expected a value");
    }
    out = Json(d);
    return Error::success();
  }

  Error parseString(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char esc = text_[pos_++];
      switch (esc) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return fail("truncated \\u escape");
          unsigned code = std::strtoul(std::string(text_.substr(pos_, 4)).c_str(), nullptr, 16);
          pos_ += 4;
          // Reports only escape control characters; keep others as UTF-8.
          if (code < 0x80) {
            out += char(code);
          } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
          } else {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          out += esc;
      }
    }
    if (pos_ >= text_.size()) return fail("unterminated string");
    ++pos_;
    return Error::success();
  }

  Error parseArray(Json& out, int depth) {
    ++pos_;
    out = Json::array();
    skipSpace();
    if (consume("]")) return Error::success();
    while (true) {
      Json item;
      if (Error e = parseValue(item, depth + 1)) return e;
      out.push(std::move(item));
      skipSpace();
      if (consume("]")) return Error::success();
      if (!consume(",")) return fail("expected ',' or ']'");
    }
  }

  Error parseObject(Json& out, int depth) {
    ++pos_;
    out = Json::object();
    skipSpace();
    if (consume("}")) return Error::success();
    while (true) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name");
      std::string key;
      if (Error e = parseString(key)) return e;
      skipSpace();
      if (!consume(":")) return fail("expected ':'");
      Json value;
      if (Error e = parseValue(value, depth + 1)) return e;
      out.set(std::move(key), std::move(value));
      skipSpace();
      if (consume("}")) return Error::success();
      if (!consume(",")) return fail("expected ',' or '}'");
    }
  }

  std::string_view text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

}  // namespace

void Json::writeTo(JsonWriter& json) const {
  switch (kind_) {
    case Kind::Null:
      json.null();
      break;
    case Kind::Bool:
      json.value(bool_);
      break;
    case Kind::Number:
      // Integers (counters, sizes) as integers; the rest with 17 digits to round-trip.
      if (number_ == std::floor(number_) && std::fabs(number_) < 9e15 &&
          !(number_ == 0 && std::signbit(number_)))
        json.value(int64_t(number_));
      else
        json.value(number_);
      break;
    case Kind::String:
      json.value(string_);
      break;
    case Kind::Array:
      json.beginArray();
      for (const Json& item : items_) item.writeTo(json);
      json.endArray();
      break;
    case Kind::Object:
      json.beginObject();
      for (const auto& [key, value] : members_) {
        json.key(key);
        value.writeTo(json);
      }
      json.endObject();
      break;
  }
}

std::string Json::dump() const {
  JsonWriter json(17);
  writeTo(json);
  return json.str();
}

Expected<Json> parseJson(std::string_view text, const std::string& origin) {
  return Parser(text, origin).document();
}

Expected<std::string> readTextFile(const std::string& path) { return readFile(path); }

Expected<Json> readJsonFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string text, readTextFile(path));
  return parseJson(text, path);
}

Error writeTextFileAtomic(const std::string& path, const std::string& text) {
  return writeFileAtomic(path, text);
}

}  // namespace ember::codesign
