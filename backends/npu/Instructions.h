// The NPU instructions the compiler emits: one operand struct per opcode with
// named fields, generated from the ISA's field table (ember/npu/IsaOperands.h,
// IsaFields.def), and `instruction(operands)` to build one. Token bits are set
// later by the ProgramBuilder.
#pragma once

#include "ember/npu/IsaOperands.h"

namespace ember::npu_backend {

using npu::isa::EAddOperands;
using npu::isa::GemmOperands;
using npu::isa::instruction;
using npu::isa::LayerNormOperands;
using npu::isa::LoadOperands;
using npu::isa::LutOperands;
using npu::isa::PoolOperands;
using npu::isa::RequantOperands;
using npu::isa::SoftmaxOperands;
using npu::isa::StoreOperands;
using npu::isa::VAddOperands;

/// A sync on `queue`: tokens only, no work.
inline npu::isa::Instruction makeSync(npu::isa::Queue queue) {
  return instruction(npu::isa::SyncOperands{.queue = queue});
}

}  // namespace ember::npu_backend
