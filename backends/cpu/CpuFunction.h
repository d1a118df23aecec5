// A compiled function of the cpu backend: its own regions (constants, I/O,
// activations, packed weights) around a shared program.
#pragma once

#include <memory>
#include <string>

#include "Program.h"
#include "ember/Backend.h"
#include "ember/IR.h"

namespace ember::cpu {

/// `aotHeader`: where writeArtifact writes the AOT header (empty: next to the object).
std::unique_ptr<CompiledFunction> makeCpuFunction(const IRFunction& ir, std::shared_ptr<Program> program,
                                                  int threads, std::string aotHeader = "");

}  // namespace ember::cpu
