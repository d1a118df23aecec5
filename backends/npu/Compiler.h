// IR -> NPU bundle: lowers every instruction to one bundle layer, then runs
// the static program checks (tokens, SRAM races, allocation) on the result.
#pragma once

#include <map>
#include <vector>

#include "Support.h"
#include "ember/Backend.h"
#include "ember/IR.h"
#include "ember/npu/Bundle.h"
#include "ember/npu/Config.h"

namespace ember::npu_backend {

/// The report columns the compiler fills for each layer (NpuDevice.cpp declares them).
inline constexpr const char* kShapeColumn = "shape";  ///< what was computed, e.g. "1x56x56x64 <- 3x3x64 s1"
inline constexpr const char* kTilesColumn = "tiles";  ///< the tiling chosen, e.g. "m=196 k=16 n=16, order=nk"

struct CompiledProgram {
  npu::Bundle bundle;
  std::vector<LayerReport> layers;  ///< compile-time fields and columns, one per bundle layer
  uint64_t sramPeakBytes = 0;
  /// The IR's output dims by name: a bundle symbol has rank >= 1, so a scalar
  /// output is stored as [1] and restored from here.
  std::map<std::string, Dims> outputDims;
};

/// Whether the NPU with `config` runs `info` natively (Backend::supports):
/// the op and types it implements, and, for the matrix engine's and the
/// vector unit's layers, a plan that fits the config's SRAMs and field limits
/// (else the node falls back instead of failing the compile, and the reason
/// names the sizes: Backend::unsupportedReason).
Support npuSupport(const NodeInfo& info, const npu::NpuConfig& config);

Expected<CompiledProgram> compileToBundle(const IRFunction& ir, const npu::NpuConfig& config);

}  // namespace ember::npu_backend
