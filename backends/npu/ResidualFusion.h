// Which QuantizedAdds may run in the epilogue of the conv that produces one of
// their operands (docs/npu/compiler.md, "Residual add in the conv epilogue").
#pragma once

#include <cstddef>
#include <map>

#include "CompileContext.h"

namespace ember::npu_backend {

struct ResidualAddCandidate {
  size_t add = 0;  ///< the add's instruction index
  /// The add's result shares memory with the conv's input (the planner reuses
  /// a buffer that dies at the conv): fused only when the whole input is one
  /// band, read before the first store.
  bool overwritesInput = false;
};

/// Conv instruction index -> the add it may absorb. A conv qualifies when
/// `compiler.fuse_residual_add` is on, the next instruction (allocations
/// aside) is a same-shape QuantizedAdd of its result, nothing else reads that
/// result, and the add's result shares memory with the add's other operand
/// only exactly (in place: each tile is read before it is overwritten).
std::map<size_t, ResidualAddCandidate> residualAddCandidates(CompileContext& ctx);

}  // namespace ember::npu_backend
