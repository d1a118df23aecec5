// The field tables of the NPU ISA (docs/npu/isa.md): for every opcode, where
// each field lies in the 256-bit instruction and how it is read. The encoder,
// decoder, assembler and disassembler read them through Isa.h; the compiler
// takes its limits from them at compile time (fieldMaxOf), so a field that
// grows in a new ISA version moves every limit with it.
#pragma once

#include "ember/npu/Isa.h"

namespace ember::npu::isa {
namespace tables {

using F = Field;
using K = FieldKind;

// Word 0 bits 32..63, word 1 64..127, word 2 128..191, word 3 192..255.
inline constexpr FieldLayout kLoadFields[] = {
    {F::Mem, "mem", 32, 2, K::Memory},
    {F::PadValue, "pad_value", 40, 8, K::Signed},
    {F::PadTop, "pad_top", 48, 8, K::Unsigned},
    {F::PadBottom, "pad_bottom", 56, 8, K::Unsigned},
    {F::DramAddr, "dram", 64, 32, K::Address},
    {F::SramAddr, "sram", 96, 24, K::Address},
    {F::PadLeft, "pad_left", 120, 8, K::Unsigned},
    {F::XSize, "x", 128, 16, K::Unsigned},
    {F::YSize, "y", 144, 16, K::Unsigned},
    {F::ZSize, "z", 160, 16, K::Unsigned},
    {F::PadRight, "pad_right", 176, 8, K::Unsigned},
    {F::DramYStride, "dram_ystride", 192, 24, K::Unsigned},
    {F::DramZStride, "dram_zstride", 216, 24, K::Unsigned},
    {F::SramStride, "sram_stride", 240, 16, K::Unsigned},
};

inline constexpr FieldLayout kStoreFields[] = {
    {F::Mem, "mem", 32, 2, K::Memory},
    {F::DramAddr, "dram", 64, 32, K::Address},
    {F::SramAddr, "sram", 96, 24, K::Address},
    {F::XSize, "x", 128, 16, K::Unsigned},
    {F::YSize, "y", 144, 16, K::Unsigned},
    {F::ZSize, "z", 160, 16, K::Unsigned},
    {F::DramYStride, "dram_ystride", 192, 24, K::Unsigned},
    {F::DramZStride, "dram_zstride", 216, 24, K::Unsigned},
    {F::SramStride, "sram_stride", 240, 16, K::Unsigned},
};

inline constexpr FieldLayout kGemmFields[] = {
    {F::Accumulate, "accumulate", 32, 1, K::Unsigned},
    {F::Preload, "preload", 33, 1, K::Unsigned},
    {F::WeightBuffer, "wbuf", 34, 1, K::Unsigned},   // ISA v2
    {F::BiasInit, "bias_init", 35, 1, K::Unsigned},  // ISA v3
    {F::M, "m", 48, 16, K::Unsigned},
    {F::InpAddr, "inp", 64, 24, K::Address},
    {F::WgtAddr, "wgt", 88, 24, K::Address},
    {F::InpStride, "inp_stride", 112, 16, K::Unsigned},
    {F::AccAddr, "acc", 128, 24, K::Address},
    {F::WgtStride, "wgt_stride", 152, 16, K::Unsigned},
    {F::AccStride, "acc_stride", 168, 16, K::Unsigned},
    {F::K, "k", 192, 16, K::Unsigned},
    {F::N, "n", 208, 16, K::Unsigned},
    {F::BiasAddr, "bias", 224, 24, K::Address},  // ISA v3
};

inline constexpr FieldLayout kRequantFields[] = {
    {F::ZeroPoint, "zp", 32, 8, K::Signed},
    {F::Lo, "lo", 40, 8, K::Signed},
    {F::Hi, "hi", 48, 8, K::Signed},
    {F::Src, "src", 64, 24, K::Address},
    {F::Dst, "dst", 88, 24, K::Address},
    {F::Shift, "shift", 112, 8, K::Signed},
    {F::Rows, "rows", 128, 16, K::Unsigned},
    {F::Cols, "cols", 144, 16, K::Unsigned},
    {F::SrcStride, "src_stride", 160, 16, K::Unsigned},
    {F::DstStride, "dst_stride", 176, 16, K::Unsigned},
    {F::Multiplier, "multiplier", 192, 32, K::Signed},
};

inline constexpr FieldLayout kVAddFields[] = {
    {F::Dst, "dst", 64, 24, K::Address},
    {F::Src, "src", 88, 24, K::Address},
    {F::Rows, "rows", 128, 16, K::Unsigned},
    {F::Cols, "cols", 144, 16, K::Unsigned},
    {F::DstStride, "dst_stride", 160, 16, K::Unsigned},
    {F::SrcStride, "src_stride", 176, 16, K::Unsigned},
};

inline constexpr FieldLayout kVClipFields[] = {
    {F::Dst, "dst", 64, 24, K::Address},     {F::Rows, "rows", 128, 16, K::Unsigned},
    {F::Cols, "cols", 144, 16, K::Unsigned}, {F::DstStride, "dst_stride", 160, 16, K::Unsigned},
    {F::Lo32, "lo", 192, 32, K::Signed},     {F::Hi32, "hi", 224, 32, K::Signed},
};

inline constexpr FieldLayout kLutFields[] = {
    {F::Src, "src", 64, 24, K::Address},
    {F::Dst, "dst", 88, 24, K::Address},
    {F::Rows, "rows", 128, 16, K::Unsigned},
    {F::Cols, "cols", 144, 16, K::Unsigned},
    {F::SrcStride, "src_stride", 160, 16, K::Unsigned},
    {F::DstStride, "dst_stride", 176, 16, K::Unsigned},
    {F::LutAddr, "table", 192, 24, K::Address},
};

inline constexpr FieldLayout kPoolFields[] = {
    {F::Mode, "mode", 32, 1, K::PoolMode},
    {F::KernelH, "kh", 40, 8, K::Unsigned},
    {F::KernelW, "kw", 48, 8, K::Unsigned},
    {F::StrideH, "sh", 56, 8, K::Unsigned},
    {F::Src, "src", 64, 24, K::Address},
    {F::Dst, "dst", 88, 24, K::Address},
    {F::StrideW, "sw", 112, 8, K::Unsigned},
    {F::OutH, "out_h", 128, 16, K::Unsigned},
    {F::OutW, "out_w", 144, 16, K::Unsigned},
    {F::Channels, "c", 160, 16, K::Unsigned},
    {F::SrcStride, "src_stride", 176, 16, K::Unsigned},
    {F::DstStride, "dst_stride", 192, 16, K::Unsigned},
};

inline constexpr FieldLayout kEAddFields[] = {
    {F::Src, "a", 64, 24, K::Address},
    {F::Src2, "b", 88, 24, K::Address},
    {F::Rows, "rows", 128, 16, K::Unsigned},
    {F::Cols, "cols", 144, 16, K::Unsigned},
    {F::SrcStride, "a_stride", 160, 16, K::Unsigned},
    {F::Src2Stride, "b_stride", 176, 16, K::Unsigned},
    {F::Dst, "dst", 192, 24, K::Address},
    {F::DstStride, "dst_stride", 216, 16, K::Unsigned},
    {F::ParamAddr, "params", 232, 24, K::Address},
};

inline constexpr FieldLayout kSyncFields[] = {{F::QueueSel, "q", 32, 2, K::QueueId}};

inline constexpr OpcodeSpec kOpcodeSpecs[] = {
    {Opcode::Load, "load", Queue::Load, kLoadFields},
    {Opcode::Store, "store", Queue::Store, kStoreFields},
    {Opcode::Gemm, "gemm", Queue::Compute, kGemmFields},
    {Opcode::Requant, "requant", Queue::Compute, kRequantFields},
    {Opcode::VAdd, "vadd", Queue::Compute, kVAddFields},
    {Opcode::VClip, "vclip", Queue::Compute, kVClipFields},
    {Opcode::Lut, "lut", Queue::Compute, kLutFields},
    {Opcode::Pool, "pool", Queue::Compute, kPoolFields},
    {Opcode::EAdd, "eadd", Queue::Compute, kEAddFields},
    {Opcode::Sync, "sync", Queue::Compute, kSyncFields},
    {Opcode::Finish, "finish", Queue::Compute, {}},
};

}  // namespace tables

inline constexpr const auto& kOpcodeSpecs = tables::kOpcodeSpecs;

/// The layout of `field` in `op`'s instruction; fails to compile in a constant
/// expression (and is nullptr at run time) when the opcode has no such field.
constexpr const FieldLayout* findField(Opcode op, Field field) {
  for (const OpcodeSpec& spec : kOpcodeSpecs)
    if (spec.opcode == op)
      for (const FieldLayout& layout : spec.fields)
        if (layout.field == field) return &layout;
  return nullptr;
}

/// The largest value `field` of `op` encodes (e.g. 65535 for gemm `m`).
constexpr int64_t fieldMaxOf(Opcode op, Field field) { return fieldMax(*findField(op, field)); }

}  // namespace ember::npu::isa
