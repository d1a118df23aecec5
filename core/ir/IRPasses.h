// The instruction-IR passes, one per file. Each returns whether it changed
// the function.
#pragma once

#include "ember/IR.h"

namespace ember {

/// Model outputs copied from an activation are written in place instead.
bool eliminateOutputCopies(IRFunction& ir);
/// Data-parallel instructions reuse a dying input's buffer.
bool shareBuffersInPlace(IRFunction& ir);
/// Instructions whose results nobody reads are removed, with their buffers.
bool eliminateDeadStores(IRFunction& ir);

}  // namespace ember
