// Which loads of a layer's first step may run before the previous layer's
// barrier (compiler.prefetch_weights; docs/npu/compiler.md, "Weights
// prefetched across the layer barrier"): those that read only the weight
// image (never written by any store) into SRAM the previous layer does not
// touch, so they depend on nothing the barrier waits for.
#pragma once

#include <algorithm>
#include <cstdint>

#include "SramAllocator.h"
#include "ember/npu/Isa.h"

namespace ember::npu_backend {

/// The SRAM a load writes, as one conservative range: scratchpad bytes or
/// accumulator entries [begin, end), padding rows and columns included.
struct SramSpan {
  bool accumulator = false;
  uint64_t begin = 0, end = 0;
  bool meets(const SramSpan& other) const {
    return accumulator == other.accumulator && begin < other.end && other.begin < end;
  }
};

inline SramSpan loadSpan(const npu::isa::Instruction& load) {
  using npu::isa::Field;
  // isa.md: row r of plane p lands at sram + (p * rowsPerPlane + r) * sram_stride.
  const int64_t planes = std::max<int64_t>(1, load[Field::ZSize]);
  const int64_t rows = planes * (load[Field::YSize] + load[Field::PadTop] + load[Field::PadBottom]);
  const int64_t length = load[Field::XSize] + load[Field::PadLeft] + load[Field::PadRight];
  SramSpan span;
  span.accumulator = load[Field::Mem] == int64_t(npu::isa::Memory::Accumulator);
  span.begin = uint64_t(load[Field::SramAddr]);
  span.end = span.begin + uint64_t(std::max<int64_t>(rows - 1, 0) * load[Field::SramStride] + length);
  return span;
}

/// Whether `load` reads only DRAM at or above `readOnlyDramBase` (the weight
/// image) into SRAM that no buffer of the previous layer overlaps.
inline bool prefetchable(const npu::isa::Instruction& load, uint64_t readOnlyDramBase,
                         const SramAllocator& sram) {
  if (load.opcode != npu::isa::Opcode::Load || load.deps != npu::isa::DepFlags{}) return false;
  if (uint64_t(load[npu::isa::Field::DramAddr]) < readOnlyDramBase) return false;
  const SramSpan span = loadSpan(load);
  return !sram.previousLayerTouches(span.accumulator, span.begin, span.end);
}

}  // namespace ember::npu_backend
