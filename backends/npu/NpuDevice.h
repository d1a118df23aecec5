// The npu backend's run path: a compiled program as a CompiledFunction that
// executes on the SystemC simulator (docs/npu/compiler.md). The compiler side
// (ember_npu_compiler) never includes this header.
#pragma once

#include <memory>

#include "Compiler.h"
#include "ember/Backend.h"
#include "ember/npu/Config.h"

namespace ember::npu_backend {

std::unique_ptr<CompiledFunction> makeSimulatedFunction(CompiledProgram program, npu::NpuConfig config);

}  // namespace ember::npu_backend
