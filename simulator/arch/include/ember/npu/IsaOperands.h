// One operand struct per NPU opcode with a named member per field, and the
// builder `instruction(operands)` that fills an isa::Instruction from it, both
// made from IsaFields.def (the table the encoder reads too), so the compiler
// names every field it sets: `instruction(RequantOperands{.src = acc, ...})`.
// Members are in the fields' bit order (designated initializers follow it); an
// address is a uint64_t, a memory, pool mode or queue field its enum, any other
// field an int64_t. The header's token bits are left to the program builder.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ember/npu/Isa.h"

namespace ember::npu::isa {

/// The C++ type of an operand struct's member for a field of kind `kind`.
template <FieldKind kind>
using OperandType = std::conditional_t<
    kind == FieldKind::Address, uint64_t,
    std::conditional_t<kind == FieldKind::Memory, Memory,
                       std::conditional_t<kind == FieldKind::PoolMode, PoolMode,
                                          std::conditional_t<kind == FieldKind::QueueId, Queue, int64_t>>>>;

#define EMBER_NPU_OPCODE_FIELDS(op) struct op##Operands {
#define EMBER_NPU_FIELD(field, member, keyword, lsb, width, kind, initial) \
  OperandType<FieldKind::kind> member = OperandType<FieldKind::kind>(initial);
#define EMBER_NPU_OPCODE_END(op) \
  }                              \
  ;
#include "ember/npu/IsaFields.def"

#define EMBER_NPU_OPCODE_FIELDS(op)                              \
  inline Instruction instruction(const op##Operands& operands) { \
    Instruction in;                                              \
    in.opcode = Opcode::op;
#define EMBER_NPU_FIELD(field, member, keyword, lsb, width, kind, initial) \
  in[Field::field] = int64_t(operands.member);
#define EMBER_NPU_OPCODE_END(op) \
  return in;                     \
  }
#include "ember/npu/IsaFields.def"

}  // namespace ember::npu::isa
