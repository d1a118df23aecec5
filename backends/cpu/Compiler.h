// Turns planned instruction IR into the cpu backend's program: fusion, one step
// per instruction, the weight-packing plan and the list of ops the JIT emits.
#pragma once

#include <memory>
#include <vector>

#include "Program.h"
#include "ember/IR.h"

namespace ember::cpu {

struct BuiltProgram {
  std::shared_ptr<Program> program;
  std::vector<JitOp> ops;  ///< what the JIT emits, in program order
};

Expected<BuiltProgram> buildProgram(const IRFunction& ir, GemmArch arch);

}  // namespace ember::cpu
