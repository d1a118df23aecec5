// Which QuantizedAdds (and MaxPools) may run in the epilogue of the conv that
// produces one of their operands (docs/npu/compiler.md, "Residual add in the
// conv epilogue", "Max pooling in the conv epilogue").
#pragma once

#include <cstddef>
#include <map>
#include <optional>

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

/// What a conv may run in its epilogue: a residual add or a max pooling.
struct ConvFusion {
  std::optional<ResidualAddCandidate> add;
  std::optional<size_t> maxPool;  ///< the MaxPool's instruction index
};

/// Conv instruction index -> what it may absorb: the residual adds above and,
/// with `compiler.fuse_max_pool`, a MaxPool that is the next instruction
/// (allocations aside), reads the conv's result that nothing else reads, has
/// the conv's quantization, no dilation, a top padding of `kernel - stride`
/// rows (so each band's windows start on the last rows of the band before)
/// and a result that does not overlap the conv's input.
std::map<size_t, ConvFusion> convFusionCandidates(CompileContext& ctx);

}  // namespace ember::npu_backend
