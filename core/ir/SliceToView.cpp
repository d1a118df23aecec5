// IR pass: a Slice that selects one contiguous byte range of its input (unit
// steps; leading axes of extent 1, one partial axis, then full trailing axes)
// becomes a view of the input, and the instruction disappears.
#include "IRPasses.h"
#include "ember/OpAttrs.h"

namespace ember {

namespace {

/// Byte offset of the slice when it is contiguous, or -1.
int64_t contiguousSliceOffset(const Type& in, const SliceAttrs& slice) {
  const std::vector<int64_t>& starts = slice.starts;
  const std::vector<int64_t>& ends = slice.ends;
  const std::vector<int64_t>& steps = slice.steps;
  Dims strides = in.strides();
  size_t rank = in.rank();
  size_t axis = 0;
  int64_t offset = 0;
  // Leading axes with extent 1 only move the offset.
  while (axis < rank && steps[axis] == 1 && ends[axis] - starts[axis] == 1) {
    offset += starts[axis] * strides[axis];
    ++axis;
  }
  if (axis < rank) {  // one partial axis
    if (steps[axis] != 1) return -1;
    offset += starts[axis] * strides[axis];
    ++axis;
  }
  for (; axis < rank; ++axis)  // then full axes
    if (steps[axis] != 1 || starts[axis] != 0 || ends[axis] != in.dims[axis]) return -1;
  return offset * int64_t(elemSize(in.kind));
}

}  // namespace

bool sliceToView(IRFunction& ir) {
  auto& instrs = ir.instructions();
  bool changed = false;
  for (Instruction& inst : instrs) {
    if (inst.kind != OpKind::Slice) continue;
    ValueId out = inst.operands[0].value, in = inst.operands[1].value;
    if (ir.value(out).kind != ValueKind::Activation) continue;
    int64_t offset = contiguousSliceOffset(ir.value(in).type, SliceAttrs::from(inst.attrs));
    if (offset < 0) continue;
    // The result becomes a view; its alloc, dealloc and the slice go away.
    IRValue& v = ir.value(out);
    v.kind = ValueKind::View;
    v.base = in;
    v.viewOffset = uint64_t(offset);
    inst.kind = OpKind::DeallocActivation;  // marker, erased below
    inst.operands = {{out, Access::In}};
    changed = true;
  }
  if (!changed) return false;
  std::erase_if(instrs, [&](const Instruction& i) {
    return isLifetimeMarker(i) && ir.value(i.operands[0].value).kind == ValueKind::View;
  });
  // Reads through the new views are reads of their base: its dealloc moves
  // after them, so the IR stays valid without lifetime-tightening.
  insertDeallocs(ir);
  return true;
}

}  // namespace ember
