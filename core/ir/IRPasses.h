// The instruction-IR passes, one per file. Each returns whether it changed
// the function.
#pragma once

#include "ember/IR.h"

namespace ember {

/// Copies from a single-producer activation are removed; the producer writes
/// the destination (model outputs, Concat parts) directly.
bool propagateCopies(IRFunction& ir);
/// Contiguous Slices become views of their input.
bool sliceToView(IRFunction& ir);
/// Contiguous Concats become copies into views of the result.
bool concatToCopies(IRFunction& ir);
/// Allocs move to the first use, deallocs to the last.
bool tightenLifetimes(IRFunction& ir);
/// Data-parallel instructions reuse a dying input's buffer.
bool shareBuffersInPlace(IRFunction& ir);
/// Instructions whose results nobody reads are removed, with their buffers.
bool eliminateDeadStores(IRFunction& ir);

}  // namespace ember
