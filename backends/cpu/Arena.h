// A zeroed, 64-byte aligned block of memory: one region of a compiled function.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ember::cpu {

class Arena {
 public:
  explicit Arena(uint64_t bytes)
      : data_(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 64) / 64 * 64))) {
    std::memset(data_, 0, (bytes + 64) / 64 * 64);
  }
  ~Arena() { std::free(data_); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* data_;
};

}  // namespace ember::cpu
