#include "SramAllocator.h"

#include <algorithm>

#include "ember/Arithmetic.h"

namespace ember::npu_backend {

SramAllocator::SramAllocator(const npu::NpuConfig& config) : config_(config) {}

void SramAllocator::beginLayer() {
  previousSpad_ = std::move(spadUsed_);
  previousAcc_ = std::move(accUsed_);
  spadUsed_.clear();
  accUsed_.clear();
  layerFirstBuffer_ = buffers_.size();
}

std::optional<uint64_t> SramAllocator::fit(std::vector<Range>& used, uint64_t capacity, uint64_t size,
                                           uint64_t align, uint64_t start) {
  if (size == 0) size = 1;
  std::sort(used.begin(), used.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Candidate addresses: `start`, then the end of every used range, then 0.
  std::vector<uint64_t> candidates{start};
  for (const Range& r : used) candidates.push_back(r.end);
  candidates.push_back(0);
  std::vector<uint64_t> ordered;
  ordered.reserve(candidates.size());
  for (uint64_t c : candidates) ordered.push_back(alignUp(c, align));
  std::stable_sort(ordered.begin() + 1, ordered.end(), [&](uint64_t a, uint64_t b) {
    // Prefer addresses at or after `start`, then the lowest.
    bool aAfter = a >= start, bAfter = b >= start;
    if (aAfter != bAfter) return aAfter;
    return a < b;
  });
  for (uint64_t addr : ordered) {
    if (addr + size > capacity) continue;
    bool clash = std::any_of(used.begin(), used.end(),
                             [&](const Range& r) { return addr < r.end && r.begin < addr + size; });
    if (clash) continue;
    used.push_back({addr, addr + size});
    return addr;
  }
  return std::nullopt;
}

std::optional<uint64_t> SramAllocator::fitAway(std::vector<Range>& used, const std::vector<Range>& previous,
                                               uint64_t capacity, uint64_t size, uint64_t align,
                                               uint64_t start) {
  std::vector<Range> both = used;
  both.insert(both.end(), previous.begin(), previous.end());
  auto addr = fit(both, capacity, size, align, start);
  if (!addr) return fit(used, capacity, size, align, start);
  used.push_back({*addr, *addr + std::max<uint64_t>(size, 1)});
  return addr;
}

bool SramAllocator::previousLayerTouches(bool accumulator, uint64_t begin, uint64_t end) const {
  const std::vector<Range>& previous = accumulator ? previousAcc_ : previousSpad_;
  return std::any_of(previous.begin(), previous.end(),
                     [&](const Range& r) { return begin < r.end && r.begin < end; });
}

std::optional<uint64_t> SramAllocator::allocScratchpad(const std::string& name, uint64_t bytes, int bank,
                                                       bool awayFromPreviousLayer) {
  const uint64_t start =
      bank >= 0 ? uint64_t(bank % config_.scratchpadBanks) * uint64_t(config_.bankBytes()) : 0;
  std::optional<uint64_t> addr;
  if (awayFromPreviousLayer) {
    // Away from the previous layer only within the hinted banks: a buffer
    // pushed into another bank costs more in bank conflicts than the
    // prefetch saves.
    std::vector<Range> both = spadUsed_;
    both.insert(both.end(), previousSpad_.begin(), previousSpad_.end());
    const uint64_t bank = uint64_t(config_.bankBytes());
    const uint64_t regionEnd = bank > 0 ? start + alignUp(std::max<uint64_t>(bytes, 1), bank) : 0;
    addr = fit(both, uint64_t(config_.scratchpadBytes), bytes, 64, start);
    if (addr && (*addr < start || *addr + bytes > regionEnd)) addr.reset();
    if (addr) spadUsed_.push_back({*addr, *addr + std::max<uint64_t>(bytes, 1)});
  }
  if (!addr) addr = fit(spadUsed_, uint64_t(config_.scratchpadBytes), bytes, 64, start);
  if (!addr) return std::nullopt;
  buffers_.push_back({name, false, *addr, std::max<uint64_t>(bytes, 1), 0, 0});
  peakSpad_ = std::max(peakSpad_, *addr + bytes);
  return addr;
}

std::optional<uint64_t> SramAllocator::allocAccumulator(const std::string& name, uint64_t entries, int bank,
                                                        bool awayFromPreviousLayer) {
  const uint64_t start =
      bank >= 0 ? uint64_t(bank % config_.accumulatorBanks) * uint64_t(config_.accumulatorBankEntries()) : 0;
  auto addr =
      awayFromPreviousLayer
          ? fitAway(accUsed_, previousAcc_, uint64_t(config_.accumulatorEntries()), entries, 16, start)
          : fit(accUsed_, uint64_t(config_.accumulatorEntries()), entries, 16, start);
  if (!addr) return std::nullopt;
  buffers_.push_back({name, true, *addr, std::max<uint64_t>(entries, 1), 0, 0});
  return addr;
}

void SramAllocator::rollbackLayer() {
  spadUsed_.clear();
  accUsed_.clear();
  buffers_.resize(layerFirstBuffer_);
}

void SramAllocator::endLayer(uint64_t first, uint64_t last) {
  for (size_t i = layerFirstBuffer_; i < buffers_.size(); ++i) {
    buffers_[i].firstInstruction = first;
    buffers_[i].lastInstruction = last;
  }
  layerFirstBuffer_ = buffers_.size();
}

}  // namespace ember::npu_backend
