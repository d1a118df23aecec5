#include "Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string Json::stringAt(std::string_view key, std::string fallback) const {
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

void escapeTo(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string formatNumber(double d) {
  if (!std::isfinite(d)) return "null";
  char buf[40];
  if (d == std::floor(d) && std::fabs(d) < 9e15)
    std::snprintf(buf, sizeof buf, "%.0f", d);
  else
    std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

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

void Json::dumpTo(std::string& out, int indent) const {
  const std::string pad(size_t(indent + 2), ' ');
  switch (kind_) {
    case Kind::Null:
      out += "null";
      break;
    case Kind::Bool:
      out += bool_ ? "true" : "false";
      break;
    case Kind::Number:
      out += formatNumber(number_);
      break;
    case Kind::String:
      escapeTo(out, string_);
      break;
    case Kind::Array:
      if (items_.empty()) {
        out += "[]";
        break;
      }
      out += "[\n";
      for (size_t i = 0; i < items_.size(); ++i) {
        out += pad;
        items_[i].dumpTo(out, indent + 2);
        out += i + 1 < items_.size() ? ",\n" : "\n";
      }
      out += std::string(size_t(indent), ' ') + "]";
      break;
    case Kind::Object:
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += "{\n";
      for (size_t i = 0; i < members_.size(); ++i) {
        out += pad;
        escapeTo(out, members_[i].first);
        out += ": ";
        members_[i].second.dumpTo(out, indent + 2);
        out += i + 1 < members_.size() ? ",\n" : "\n";
      }
      out += std::string(size_t(indent), ' ') + "}";
      break;
  }
}

std::string Json::dump() const {
  std::string out;
  dumpTo(out, 0);
  return out + "\n";
}

Expected<Json> parseJson(std::string_view text, const std::string& origin) {
  return Parser(text, origin).document();
}

Expected<std::string> readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open for reading");
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) return makeError(path, ": read failed");
  return os.str();
}

Expected<Json> readJsonFile(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string text, readTextFile(path));
  return parseJson(text, path);
}

Error writeTextFileAtomic(const std::string& path, const std::string& text) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) return makeError(path, ": cannot open for writing");
    out << text;
    if (!out.flush()) return makeError(path, ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return makeError(path, ": cannot write: ", ec.message());
  return Error::success();
}

}  // namespace ember::codesign
