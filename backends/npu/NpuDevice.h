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

/// The NPU as a Device: the partitions loaded on it share its DRAM (config
/// key dram.size_mib), which the runtime checks at load. Runs synchronously.
std::unique_ptr<Device> makeNpuDevice(const npu::NpuConfig& config);

}  // namespace ember::npu_backend
