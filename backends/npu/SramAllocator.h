// Static SRAM allocation of one layer's buffers (scratchpad bytes and
// accumulator entries). Buffers live for their layer's instruction range: the
// layer barrier (ProgramBuilder) orders every access of one layer before the
// next layer's, so each layer starts from an empty SRAM. Every buffer is
// recorded with its live range for npu::checkAllocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/npu/Config.h"
#include "ember/npu/ProgramCheck.h"

namespace ember::npu_backend {

class SramAllocator {
 public:
  explicit SramAllocator(const npu::NpuConfig& config);

  /// Starts a layer: everything is free again.
  void beginLayer();
  /// Scratchpad bytes (64-byte aligned). `bank` (if >= 0) is where the search
  /// starts, so that buffers used at the same time land in different banks.
  /// With `awayFromPreviousLayer` the buffer avoids the previous layer's
  /// buffers where it can, so its first load may run before that layer ends
  /// (compiler.prefetch_weights).
  std::optional<uint64_t> allocScratchpad(const std::string& name, uint64_t bytes, int bank = -1,
                                          bool awayFromPreviousLayer = false);
  /// Accumulator entries. `bank` (if >= 0) is where the search starts
  /// (accumulator.banks), so the tiles of consecutive steps can sit in
  /// different banks and the vector queue reads one while the gemms write the
  /// other.
  std::optional<uint64_t> allocAccumulator(const std::string& name, uint64_t entries, int bank = -1,
                                           bool awayFromPreviousLayer = false);
  /// Whether [begin, end) of the scratchpad (bytes) or the accumulator
  /// (entries) meets a buffer of the previous layer.
  bool previousLayerTouches(bool accumulator, uint64_t begin, uint64_t end) const;
  /// Forgets every buffer of the current layer (to retry another placement).
  void rollbackLayer();
  /// Closes the layer: its buffers live over program indices [first, last].
  void endLayer(uint64_t first, uint64_t last);

  const std::vector<npu::SramBuffer>& buffers() const { return buffers_; }
  uint64_t peakScratchpadBytes() const { return peakSpad_; }

 private:
  struct Range {
    uint64_t begin, end;
  };
  std::optional<uint64_t> fit(std::vector<Range>& used, uint64_t capacity, uint64_t size, uint64_t align,
                              uint64_t start);
  /// `fit`, first also avoiding `previous`; the address is recorded in `used` only.
  std::optional<uint64_t> fitAway(std::vector<Range>& used, const std::vector<Range>& previous,
                                  uint64_t capacity, uint64_t size, uint64_t align, uint64_t start);

  npu::NpuConfig config_;
  std::vector<Range> spadUsed_, accUsed_;
  std::vector<Range> previousSpad_, previousAcc_;  ///< the previous layer's buffers
  std::vector<npu::SramBuffer> buffers_;
  size_t layerFirstBuffer_ = 0;
  uint64_t peakSpad_ = 0;
};

}  // namespace ember::npu_backend
