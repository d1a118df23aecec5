// A zeroed, 64-byte aligned block of memory: one region of a compiled function.
// A region of 2 MiB or more is 2 MiB aligned and asks Linux for transparent
// huge pages (MADV_HUGEPAGE; most systems enable THP only on request): a model
// streams its packed weights, 100 MB for resnet50, through the TLB on every run.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ember::cpu {

class Arena {
 public:
  explicit Arena(uint64_t bytes) {
    constexpr uint64_t kHugePage = uint64_t(2) << 20;
    const uint64_t alignment = bytes >= kHugePage ? kHugePage : 64;
    const uint64_t rounded = (bytes + alignment) / alignment * alignment;
    data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (alignment == kHugePage) madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
    std::memset(data_, 0, rounded);
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
