// The field tables of the NPU ISA (docs/npu/isa.md): for every opcode, where
// each field lies in the 256-bit instruction and how it is read, made from
// IsaFields.def (which the compiler's operand structs, IsaOperands.h, read
// too). The encoder, decoder, assembler and disassembler read them through
// Isa.h; the compiler takes its limits from them at compile time
// (fieldMaxOf), so a field that grows in a new ISA version moves every limit
// with it.
#pragma once

#include "ember/npu/Isa.h"

namespace ember::npu::isa {
namespace tables {

/// The fields of opcode `op` (IsaFields.def); none for Finish.
template <Opcode op>
inline constexpr std::span<const FieldLayout> kFieldsOf{};

#define EMBER_NPU_OPCODE_FIELDS(op) inline constexpr FieldLayout k##op##Fields[] = {
#define EMBER_NPU_FIELD(field, member, keyword, lsb, width, kind, initial) \
  {Field::field, keyword, lsb, width, FieldKind::kind},
#define EMBER_NPU_OPCODE_END(op) \
  }                              \
  ;                              \
  template <>                    \
  inline constexpr std::span<const FieldLayout> kFieldsOf<Opcode::op> = k##op##Fields;
#include "ember/npu/IsaFields.def"

inline constexpr OpcodeSpec kOpcodeSpecs[] = {
#define EMBER_NPU_OPCODE_SPEC(name, value, mnemonic, queue) \
  {Opcode::name, mnemonic, Queue::queue, kFieldsOf<Opcode::name>},
    EMBER_NPU_OPCODES(EMBER_NPU_OPCODE_SPEC)
#undef EMBER_NPU_OPCODE_SPEC
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
