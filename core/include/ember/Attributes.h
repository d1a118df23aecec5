// Node and instruction attributes: a small, ordered name -> value map.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/Error.h"

namespace ember {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

/// Attributes keep insertion order so that printing is deterministic.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttrValue>> init);

  void set(std::string name, AttrValue value);
  bool has(std::string_view name) const;
  const AttrValue* find(std::string_view name) const;

  /// Typed getters. The verifier guarantees declared attributes exist, so
  /// these assert on a missing or mistyped attribute unless a default is given.
  int64_t getInt(std::string_view name) const;
  int64_t getInt(std::string_view name, int64_t dflt) const;
  double getFloat(std::string_view name) const;
  double getFloat(std::string_view name, double dflt) const;
  const std::string& getString(std::string_view name) const;
  std::string getString(std::string_view name, std::string dflt) const;
  const std::vector<int64_t>& getInts(std::string_view name) const;
  std::vector<int64_t> getInts(std::string_view name, std::vector<int64_t> dflt) const;
  const std::vector<double>& getFloats(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }
  bool operator==(const Attributes& other) const { return entries_ == other.entries_; }
  uint64_t hash() const;
  /// "{strides=[1,1], group=1}".
  std::string str() const;

 private:
  std::vector<std::pair<std::string, AttrValue>> entries_;
};

}  // namespace ember
