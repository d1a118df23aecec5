// State shared by the per-op lowerings while one IR function is compiled:
// the config, the cost model, the program being built, the SRAM allocator and
// the DRAM image (I/O and activation regions at the IR's planned offsets, then
// the weight image).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "CostModel.h"
#include "ProgramBuilder.h"
#include "SramAllocator.h"
#include "ember/IR.h"
#include "ember/npu/Config.h"

namespace ember::npu_backend {

/// What a lowering reports about its layer (its report's compile-time fields and columns).
struct LayerInfo {
  std::string shape, tiles;
  uint64_t estimatedCycles = 0;
  bool fusedResidualAdd = false;  ///< the conv also ran the add it was offered
  bool fusedMaxPool = false;      ///< the conv also ran the max pooling it was offered
};

class CompileContext {
 public:
  CompileContext(const IRFunction& ir, const npu::NpuConfig& config);
  CompileContext(const CompileContext&) = delete;  // the prefetch predicate points at this context
  CompileContext& operator=(const CompileContext&) = delete;

  const IRFunction& ir() const { return ir_; }
  const npu::NpuConfig& config() const { return config_; }
  const CostModel& cost() const { return cost_; }
  ProgramBuilder& program() { return program_; }
  SramAllocator& sram() { return sram_; }

  /// DRAM byte address of a value (a constant is placed in the weight image on
  /// first use, raw).
  uint64_t addressOf(ValueId id);
  /// Appends bytes to the weight image; returns their DRAM address.
  uint64_t addWeights(const void* data, size_t bytes, size_t align = 64);
  /// The DRAM address of at least `bytes` bytes all equal to `value` (padding
  /// and constant rows).
  uint64_t fillRegion(int8_t value, uint64_t bytes);

  uint64_t weightsOffset() const { return weightsOffset_; }
  /// The weight image, moved out (tens of megabytes for ResNet-50).
  std::vector<uint8_t> takeWeightImage() { return std::move(weights_); }
  uint64_t ioBase() const { return 0; }
  uint64_t dramBytes() const { return weightsOffset_ + weights_.size(); }

 private:
  const IRFunction& ir_;
  npu::NpuConfig config_;
  CostModel cost_;
  ProgramBuilder program_;
  SramAllocator sram_;
  uint64_t activationBase_ = 0, weightsOffset_ = 0;
  std::vector<uint8_t> weights_;
  std::map<ValueId, uint64_t> constants_;
  std::map<int8_t, std::pair<uint64_t, uint64_t>> fills_;  ///< value -> (address, bytes)
};

}  // namespace ember::npu_backend
