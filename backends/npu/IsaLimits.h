// The ISA field limits the compiler plans against, read from the ISA tables
// (ember/npu/IsaTables.h) rather than written as numbers, so that a field that
// grows in a new ISA version moves the compiler's limits with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ember/npu/IsaTables.h"

namespace ember::npu_backend::limits {

using npu::isa::Field;
using npu::isa::fieldMaxOf;
using npu::isa::Opcode;

/// Elements in one DMA row (load and store `x`).
inline constexpr int64_t kDmaRowElements = fieldMaxOf(Opcode::Load, Field::XSize);
static_assert(kDmaRowElements == fieldMaxOf(Opcode::Store, Field::XSize));
/// Padding rows a load writes above or below each plane.
inline constexpr int64_t kDmaPadRows = fieldMaxOf(Opcode::Load, Field::PadTop);
static_assert(kDmaPadRows == fieldMaxOf(Opcode::Load, Field::PadBottom));
/// A DMA's DRAM row or plane stride, in elements.
inline constexpr int64_t kDramStride = fieldMaxOf(Opcode::Load, Field::DramYStride);
static_assert(kDramStride == fieldMaxOf(Opcode::Load, Field::DramZStride));
/// The scratchpad bytes an instruction's address fields reach.
inline constexpr int64_t kScratchpadAddressSpace = fieldMaxOf(Opcode::Gemm, Field::InpAddr) + 1;
/// Input rows one gemm streams (`m`), and the row stride of its input.
inline constexpr int64_t kGemmRows = fieldMaxOf(Opcode::Gemm, Field::M);
inline constexpr int64_t kGemmInputStride = fieldMaxOf(Opcode::Gemm, Field::InpStride);
/// Rows and columns of one vector instruction (requant, lut, eadd, ...).
inline constexpr int64_t kVectorRows = fieldMaxOf(Opcode::Requant, Field::Rows);
inline constexpr int64_t kVectorCols = fieldMaxOf(Opcode::Requant, Field::Cols);
/// A pooling window's height or width, and a pooling stride.
inline constexpr int64_t kPoolWindow =
    std::min(fieldMaxOf(Opcode::Pool, Field::KernelH), fieldMaxOf(Opcode::Pool, Field::KernelW));
inline constexpr int64_t kPoolStride =
    std::min(fieldMaxOf(Opcode::Pool, Field::StrideH), fieldMaxOf(Opcode::Pool, Field::StrideW));
/// A pooling's input or output row stride, in bytes.
inline constexpr int64_t kPoolRowStride =
    std::min(fieldMaxOf(Opcode::Pool, Field::SrcStride), fieldMaxOf(Opcode::Pool, Field::DstStride));

}  // namespace ember::npu_backend::limits
