// The Ember NPU instruction set: the one definition of the binary encoding
// (docs/npu/isa.md). The assembler, the disassembler, the simulator's decoder
// and the compiler's emitter all use these tables, so they cannot drift.
//
// An instruction is 256 bits: four little-endian 64-bit words. Word 0 holds a
// common header; every opcode places its fields in the remaining bits. A field
// never crosses a 64-bit word. Bits that an opcode does not define must be 0.
//
//   bits  0..7   opcode
//   bit   8      pop_prev   wait for (and consume) a token from the previous queue
//   bit   9      pop_next   wait for a token from the next queue
//   bit  10      push_prev  after completion, send a token to the previous queue
//   bit  11      push_next  after completion, send a token to the next queue
//   bit  12      pop_side   wait for a token from the side queue (ISA v3)
//   bit  13      push_side  after completion, send a token to the side queue (ISA v3)
//   bit  14      vq         a vector instruction runs on the vector queue (ISA v3)
//   bit  15      reserved (0)
//   bits 16..31  layer tag (0 = none, i = the bundle's layer i-1)
//   bits 32..255 opcode fields (kOpcodeSpecs)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ember/Error.h"

namespace ember::npu::isa {

/// Bumped whenever an encoding or a semantic changes. Bundles carry it.
/// Version 2 adds gemm's `wbuf` (the weight buffer, docs/npu/isa.md); a
/// version-1 program is a version-2 program that never sets it, so both run.
/// Version 3 adds the vector queue (header bits pop_side, push_side, vq and
/// sync q=3) and gemm's `bias_init`/`bias` (the bias row as the accumulator's
/// initial value); a version-2 program never sets them, so versions 1-3 all run.
/// Version 4 adds the vector unit's row normalisations `softmax` and
/// `layernorm` (opcodes 12 and 13, undefined before): a program that uses them
/// needs version 4, and programs of versions 1-3 run unchanged.
inline constexpr uint32_t kIsaVersion = 4;
inline constexpr uint32_t kOldestIsaVersion = 1;
inline constexpr size_t kInstructionBytes = 32;
inline constexpr unsigned kFieldsFirstBit = 32;

/// The decoupled queues. Load -> compute -> store is the chain of ISA v1/v2
/// (each queue's previous and next queue); ISA v3 adds the vector queue beside
/// it (isa.md "Dependency tokens"): its previous queue is compute, its next is
/// store and its side queue is load; the side queue of every other queue is
/// the vector queue.
enum class Queue : uint8_t { Load = 0, Compute = 1, Store = 2, Vector = 3 };
inline constexpr int kNumQueues = 4;
std::string_view queueName(Queue q);

/// The three token links of a queue.
enum class Link : uint8_t { Prev, Next, Side };
/// The queue at the other end of `q`'s `link`, or nullopt when there is none
/// (load has no previous queue, store no next queue).
std::optional<Queue> linkedQueue(Queue q, Link link);
/// Position in the data flow load -> compute -> vector -> store: a token that
/// moves forward announces data, one that moves backward returns a buffer.
constexpr int pipelineRank(Queue q) {
  return q == Queue::Load ? 0 : q == Queue::Compute ? 1 : q == Queue::Vector ? 2 : 3;
}

#define EMBER_NPU_OPCODES(X)                                                         \
  X(Load, 1, "load", Load)               /* DMA DRAM -> scratchpad/accumulator */    \
  X(Store, 2, "store", Store)            /* DMA scratchpad/accumulator -> DRAM */    \
  X(Gemm, 3, "gemm", Compute)            /* matrix engine: acc (+)= inp x wgt */     \
  X(Requant, 4, "requant", Compute)      /* vector: acc int32 -> spad int8 */        \
  X(VAdd, 5, "vadd", Compute)            /* vector: acc += acc (bias, broadcast) */  \
  X(VClip, 6, "vclip", Compute)          /* vector: acc = clamp(acc, lo32, hi32) */  \
  X(Lut, 7, "lut", Compute)              /* vector: spad int8 -> table -> int8 */    \
  X(Pool, 8, "pool", Compute)            /* vector: max/avg window over spad int8 */ \
  X(EAdd, 9, "eadd", Compute)            /* vector: int8 + int8 with rescale */      \
  X(Sync, 10, "sync", Compute)           /* tokens only; queue chosen by field q */  \
  X(Finish, 11, "finish", Compute)       /* end of program */                        \
  X(Softmax, 12, "softmax", Compute)     /* vector: int8 rows -> softmax rows */     \
  X(LayerNorm, 13, "layernorm", Compute) /* vector: int8 rows -> layernorm */

enum class Opcode : uint8_t {
#define EMBER_NPU_OPCODE_ENUM(name, value, mnemonic, queue) name = value,
  EMBER_NPU_OPCODES(EMBER_NPU_OPCODE_ENUM)
#undef EMBER_NPU_OPCODE_ENUM
};

/// Every named field of any opcode. An instruction's decoded form stores one
/// value per field (0 for fields its opcode does not have).
#define EMBER_NPU_FIELDS(X)                                                                                  \
  X(Mem)                                                                                                     \
  X(DramAddr)                                                                                                \
  X(SramAddr)                                                                                                \
  X(XSize)                                                                                                   \
  X(YSize)                                                                                                   \
  X(ZSize)                                                                                                   \
  X(DramYStride)                                                                                             \
  X(DramZStride)                                                                                             \
  X(SramStride) X(PadTop) X(PadBottom) X(PadLeft) X(PadRight) X(PadValue) X(Accumulate) X(Preload)           \
      X(WeightBuffer) X(M) X(K) X(N) X(InpAddr) X(WgtAddr) X(AccAddr) X(InpStride) X(WgtStride) X(AccStride) \
          X(Src) X(Src2) X(Dst) X(Rows) X(Cols) X(SrcStride) X(Src2Stride) X(DstStride) X(Multiplier)        \
              X(Shift) X(ZeroPoint) X(Lo) X(Hi) X(Lo32) X(Hi32) X(LutAddr) X(ParamAddr) X(Mode) X(KernelH)   \
                  X(KernelW) X(StrideH) X(StrideW) X(OutH) X(OutW) X(Channels) X(QueueSel) X(BiasInit)       \
                      X(BiasAddr) X(Masked)

enum class Field : uint8_t {
#define EMBER_NPU_FIELD_ENUM(name) name,
  EMBER_NPU_FIELDS(EMBER_NPU_FIELD_ENUM)
#undef EMBER_NPU_FIELD_ENUM
      Count
};
inline constexpr size_t kNumFields = size_t(Field::Count);

/// How a field's bits are read and printed.
enum class FieldKind : uint8_t {
  Unsigned,  ///< printed in decimal
  Address,   ///< unsigned, printed in hex
  Signed,    ///< two's complement
  Memory,    ///< 0 = spad, 1 = acc
  PoolMode,  ///< 0 = max, 1 = avg
  QueueId,   ///< 0 = load, 1 = compute, 2 = store, 3 = vector (ISA v3)
};

struct FieldLayout {
  Field field;
  std::string_view name;  ///< assembly keyword
  uint8_t lsb;            ///< bit position in the 256-bit instruction
  uint8_t width;
  FieldKind kind;
};

struct OpcodeSpec {
  Opcode opcode;
  std::string_view mnemonic;
  Queue queue;  ///< Sync's queue comes from its `q` field instead
  std::span<const FieldLayout> fields;
};

/// Whether `op` is a vector-unit opcode (may run on the vector queue).
constexpr bool isVectorOpcode(Opcode op) {
  return op == Opcode::Requant || op == Opcode::VAdd || op == Opcode::VClip || op == Opcode::Lut ||
         op == Opcode::Pool || op == Opcode::EAdd || op == Opcode::Softmax || op == Opcode::LayerNorm;
}

/// The specification of `op`, or nullptr for an undefined opcode value.
const OpcodeSpec* findOpcode(uint8_t value);
const OpcodeSpec* findOpcode(std::string_view mnemonic);
std::span<const OpcodeSpec> allOpcodes();

/// Memory spaces addressed by Mem fields.
enum class Memory : uint8_t { Scratchpad = 0, Accumulator = 1 };
enum class PoolMode : uint8_t { Max = 0, Avg = 1 };

/// The dependency-token bits of the header (VTA style; semantics in isa.md).
struct DepFlags {
  bool popPrev = false, popNext = false, pushPrev = false, pushNext = false;
  bool popSide = false, pushSide = false;  ///< ISA v3
  bool pops(Link l) const { return l == Link::Prev ? popPrev : l == Link::Next ? popNext : popSide; }
  bool pushes(Link l) const { return l == Link::Prev ? pushPrev : l == Link::Next ? pushNext : pushSide; }
  bool operator==(const DepFlags&) const = default;
};
inline constexpr Link kLinks[] = {Link::Prev, Link::Next, Link::Side};

/// A decoded instruction: every field as a signed 64-bit value.
struct Instruction {
  Opcode opcode = Opcode::Finish;
  DepFlags deps;
  uint16_t layer = 0;
  /// ISA v3 header bit `vq`: a vector opcode (requant, vadd, vclip, lut,
  /// pool, eadd) runs on the vector queue instead of the compute queue.
  bool vectorQueue = false;
  std::array<int64_t, kNumFields> values{};

  int64_t operator[](Field f) const { return values[size_t(f)]; }
  int64_t& operator[](Field f) { return values[size_t(f)]; }
  /// The queue that executes it (Sync: its `q` field; a vector opcode with
  /// `vq`: the vector queue).
  Queue queue() const;
  /// The lowest ISA version that encodes it (4 for softmax and layernorm, 3
  /// with the vector queue's bits, 2 with a gemm `wbuf`, else 1).
  uint32_t minIsaVersion() const;
  bool operator==(const Instruction&) const = default;
};

using EncodedInstruction = std::array<uint8_t, kInstructionBytes>;

/// Encodes; an error names the field whose value does not fit its width, or a
/// field that the opcode does not have but is non-zero.
Expected<EncodedInstruction> encode(const Instruction& instr);
/// Decodes; a malformed instruction (unknown opcode, reserved bits set, bits
/// outside the opcode's fields, dependency bits toward a missing queue) is an
/// error describing what is wrong.
Expected<Instruction> decode(std::span<const uint8_t, kInstructionBytes> bytes);
/// Decodes bytes that decode() has already accepted, without checking them
/// again: the program checkers read each instruction of a validated program
/// several times.
Instruction decodeAccepted(std::span<const uint8_t, kInstructionBytes> bytes);

/// The range of a field's values: [min, max].
constexpr int64_t fieldMin(const FieldLayout& layout) {
  return layout.kind == FieldKind::Signed ? -(int64_t(1) << (layout.width - 1)) : 0;
}
constexpr int64_t fieldMax(const FieldLayout& layout) {
  if (layout.kind == FieldKind::Signed) return (int64_t(1) << (layout.width - 1)) - 1;
  if (layout.kind == FieldKind::QueueId) return 3;
  if (layout.kind == FieldKind::Memory || layout.kind == FieldKind::PoolMode) return 1;
  return layout.width >= 63 ? INT64_MAX : (int64_t(1) << layout.width) - 1;
}

/// The lookup table Lut reads from the scratchpad: one int8 per int8 input.
inline constexpr size_t kLutTableBytes = 256;

/// Layout of the 32-byte parameter record that EAdd reads from the scratchpad
/// (little-endian): int32 multiplier_a, shift_a, multiplier_b, shift_b,
/// multiplier_out, shift_out; int8 zero_a, zero_b, zero_out, lo, hi; 3 bytes 0.
inline constexpr size_t kEAddParamBytes = 32;
/// The left shift that EAdd applies to both inputs before rescaling them to a
/// common scale (TFLite's scheme, composed from ember::quant functions).
inline constexpr int kEAddLeftShift = 20;

/// The 32-byte parameter record softmax reads (little-endian): int32
/// input_multiplier, input_shift, output_multiplier, output_shift (ember::quant
/// SoftmaxParams); int8 zero_out, lo, hi; 13 bytes 0.
inline constexpr size_t kSoftmaxParamBytes = 32;
/// layernorm's parameter record: a 16-byte header (int64 epsilon_c; int8
/// zero_in, zero_out, lo, hi; 4 bytes 0), then one 16-byte record per channel
/// (int32 gamma_multiplier; int8 gamma_shift; int8 gamma_negative (non-zero:
/// gamma < 0); 2 bytes 0; int64 beta), the ember::quant LayerNormChannel of
/// each column.
inline constexpr size_t kLayerNormHeaderBytes = 16;
inline constexpr size_t kLayerNormChannelBytes = 16;
/// Channels of one layernorm: its per-channel records are latched in the
/// vector unit's 16 KiB parameter buffer (docs/npu/isa.md).
inline constexpr int64_t kLayerNormMaxChannels = 1024;
inline constexpr size_t layerNormParamBytes(int64_t channels) {
  return kLayerNormHeaderBytes + size_t(channels) * kLayerNormChannelBytes;
}

}  // namespace ember::npu::isa
