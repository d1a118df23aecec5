// The header word of an encoded NPU instruction (Isa.h: bits 0..31 of word 0,
// docs/npu/isa.md), read and set in place: a compiler that keeps its program
// encoded sets the dependency tokens, the vector-queue bit and the layer tag
// without decoding and re-encoding the instruction. The encoder and the
// decoder read the same bit positions from here.
#pragma once

#include <cstdint>

#include "ember/npu/Isa.h"

namespace ember::npu::isa::header {

inline constexpr unsigned kPopPrevBit = 8, kPopNextBit = 9, kPushPrevBit = 10, kPushNextBit = 11;
inline constexpr unsigned kPopSideBit = 12, kPushSideBit = 13, kVectorQueueBit = 14, kReservedBit = 15;
inline constexpr unsigned kLayerLsb = 16;

/// The header bits 8..15 that `deps` sets (little-endian: byte 1).
constexpr uint8_t tokenBits(const DepFlags& deps) {
  return uint8_t(
      (deps.popPrev ? 1u << (kPopPrevBit - 8) : 0u) | (deps.popNext ? 1u << (kPopNextBit - 8) : 0u) |
      (deps.pushPrev ? 1u << (kPushPrevBit - 8) : 0u) | (deps.pushNext ? 1u << (kPushNextBit - 8) : 0u) |
      (deps.popSide ? 1u << (kPopSideBit - 8) : 0u) | (deps.pushSide ? 1u << (kPushSideBit - 8) : 0u));
}

/// The opcode byte (an Opcode value when the instruction is valid).
inline uint8_t opcodeByte(const EncodedInstruction& in) { return in[0]; }
inline bool hasOpcode(const EncodedInstruction& in, Opcode op) { return in[0] == uint8_t(op); }
/// Sets the token bits of `deps` (bits already set stay set).
inline void addTokens(EncodedInstruction& in, const DepFlags& deps) { in[1] |= tokenBits(deps); }
/// Sets `vq`: the (vector) instruction runs on the vector queue.
inline void setVectorQueue(EncodedInstruction& in) { in[1] |= uint8_t(1u << (kVectorQueueBit - 8)); }
/// Sets the layer tag (bits 16..31).
inline void setLayer(EncodedInstruction& in, uint16_t layer) {
  in[kLayerLsb / 8] = uint8_t(layer);
  in[kLayerLsb / 8 + 1] = uint8_t(layer >> 8);
}

}  // namespace ember::npu::isa::header
