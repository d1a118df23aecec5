// The instruction-IR passes, one per file. Each returns whether it changed
// the function.
#pragma once

#include "ember/IR.h"

namespace ember {

/// AllocActivation or DeallocActivation.
bool isLifetimeMarker(const Instruction& inst);
/// Every use of `from` (operands other than lifetime markers, and views)
/// becomes a use of `to`; from's markers go and `from` becomes an unused view
/// of `to`. `to` must have from's size.
void mergeValueInto(IRFunction& ir, ValueId from, ValueId to);

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
