#include "ember/Attributes.h"

#include <cassert>
#include <cstring>
#include <sstream>

namespace ember {

Attributes::Attributes(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [name, value] : init) set(name, value);
}

void Attributes::set(std::string name, AttrValue value) {
  for (auto& entry : entries_) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(name), std::move(value));
}

const AttrValue* Attributes::find(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.first == name) return &entry.second;
  return nullptr;
}

bool Attributes::has(std::string_view name) const { return find(name) != nullptr; }

namespace {
template <typename T>
const T& getOrAssert(const Attributes& attrs, std::string_view name) {
  const AttrValue* v = attrs.find(name);
  assert(v && std::holds_alternative<T>(*v) && "missing or mistyped attribute");
  return std::get<T>(*v);
}
template <typename T>
T getOr(const Attributes& attrs, std::string_view name, T dflt) {
  const AttrValue* v = attrs.find(name);
  if (!v || !std::holds_alternative<T>(*v)) return dflt;
  return std::get<T>(*v);
}
}  // namespace

int64_t Attributes::getInt(std::string_view name) const { return getOrAssert<int64_t>(*this, name); }
int64_t Attributes::getInt(std::string_view name, int64_t dflt) const { return getOr<int64_t>(*this, name, dflt); }
double Attributes::getFloat(std::string_view name) const { return getOrAssert<double>(*this, name); }
double Attributes::getFloat(std::string_view name, double dflt) const { return getOr<double>(*this, name, dflt); }
const std::string& Attributes::getString(std::string_view name) const {
  return getOrAssert<std::string>(*this, name);
}
std::string Attributes::getString(std::string_view name, std::string dflt) const {
  return getOr<std::string>(*this, name, std::move(dflt));
}
const std::vector<int64_t>& Attributes::getInts(std::string_view name) const {
  return getOrAssert<std::vector<int64_t>>(*this, name);
}
std::vector<int64_t> Attributes::getInts(std::string_view name, std::vector<int64_t> dflt) const {
  return getOr<std::vector<int64_t>>(*this, name, std::move(dflt));
}
const std::vector<double>& Attributes::getFloats(std::string_view name) const {
  return getOrAssert<std::vector<double>>(*this, name);
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}
uint64_t hashBytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
}  // namespace

uint64_t Attributes::hash() const {
  uint64_t h = 0;
  for (const auto& [name, value] : entries_) {
    h = mix(h, hashBytes(name.data(), name.size()));
    h = mix(h, value.index());
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            h = mix(h, hashBytes(v.data(), v.size()));
          } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
            h = mix(h, hashBytes(&v, sizeof(v)));
          } else {
            h = mix(h, hashBytes(v.data(), v.size() * sizeof(v[0])));
          }
        },
        value);
  }
  return h;
}

std::string Attributes::str() const {
  std::ostringstream os;
  os.precision(9);
  os << '{';
  bool first = true;
  for (const auto& [name, value] : entries_) {
    if (!first) os << ", ";
    first = false;
    os << name << '=';
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            os << '"' << v << '"';
          } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
            os << v;
          } else {
            os << '[';
            for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
            os << ']';
          }
        },
        value);
  }
  os << '}';
  return os.str();
}

}  // namespace ember
