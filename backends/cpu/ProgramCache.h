// The in-memory JIT cache: programs keyed by a hash of the IR's text, confirmed
// by the full text. Programs hold shapes and offsets, never weights.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "Program.h"

namespace ember::cpu {

inline uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

class ProgramCache {
 public:
  static ProgramCache& global() {
    static ProgramCache cache;
    return cache;
  }
  std::shared_ptr<Program> find(uint64_t key, const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.first == text ? it->second.second : nullptr;
  }
  void insert(uint64_t key, std::string text, std::shared_ptr<Program> program) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() > 64) entries_.clear();  // a bound, not an LRU: programs are small
    entries_[key] = {std::move(text), std::move(program)};
  }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::pair<std::string, std::shared_ptr<Program>>> entries_;
};

}  // namespace ember::cpu
