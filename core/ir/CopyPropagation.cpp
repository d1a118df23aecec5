// IR pass: copy propagation and elimination. For `Copy(dst, src)` where src
// is an activation with a single producer, the producer writes dst directly
// (and every reader of src reads dst) when nothing else touches dst's bytes
// while src is live. This removes the copies into model outputs and the
// copies that Concat became.
#include <vector>

#include "IRPasses.h"

namespace ember {

namespace {

struct ByteRange {
  ValueId root;
  uint64_t begin, end;
  bool overlaps(const ByteRange& o) const { return root == o.root && begin < o.end && o.begin < end; }
};

ByteRange rangeOf(const IRFunction& ir, ValueId v) {
  auto [root, offset] = ir.resolve(v);
  return {root, offset, offset + ir.value(v).type.sizeInBytes()};
}

/// Whether instruction `j` writes (or, with `reads`, reads) bytes of `range`.
bool touches(const IRFunction& ir, const Instruction& j, const ByteRange& range, bool reads) {
  for (const Operand& op : j.operands) {
    bool isWrite = op.access != Access::In;
    if ((isWrite || reads) && rangeOf(ir, op.value).overlaps(range)) return true;
  }
  return false;
}

bool tryPropagate(IRFunction& ir, size_t copyIndex) {
  auto& instrs = ir.instructions();
  const Instruction& copy = instrs[copyIndex];
  ValueId dst = copy.operands[0].value, src = copy.operands[1].value;
  if (ir.value(src).kind != ValueKind::Activation || ir.value(src).type != ir.value(dst).type) return false;
  ValueKind dstRootKind = ir.value(ir.resolve(dst).first).kind;
  if (dstRootKind != ValueKind::Activation && dstRootKind != ValueKind::Output) return false;

  // The single producer of src, and src's last use.
  int64_t producer = -1, lastUse = -1;
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (isLifetimeMarker(instrs[i])) continue;
    for (const Operand& op : instrs[i].operands) {
      if (ir.resolve(op.value).first != src) continue;
      lastUse = int64_t(i);
      if (op.access != Access::In) {
        if (producer != -1 && producer != int64_t(i)) return false;
        producer = int64_t(i);
      }
    }
  }
  if (producer < 0 || producer > int64_t(copyIndex)) return false;
  // Readers of src after the copy would keep dst's buffer alive longer than
  // the copy saves (DenseNet's features feed every later concat); allowed
  // only when dst is a model output, which lives throughout anyway.
  if (lastUse > int64_t(copyIndex) && dstRootKind != ValueKind::Output) return false;

  // dst's bytes must be free from the producer until src is dead.
  ByteRange dstRange = rangeOf(ir, dst);
  if (touches(ir, instrs[size_t(producer)], dstRange, /*reads=*/true)) return false;
  for (int64_t j = producer + 1; j <= std::max(lastUse, int64_t(copyIndex)); ++j) {
    if (j == int64_t(copyIndex) || isLifetimeMarker(instrs[size_t(j)])) continue;
    bool beforeCopy = j < int64_t(copyIndex);
    if (touches(ir, instrs[size_t(j)], dstRange, /*reads=*/beforeCopy)) return false;
  }

  instrs.erase(instrs.begin() + int64_t(copyIndex));
  mergeValueInto(ir, src, dst);
  return true;
}

}  // namespace

bool propagateCopies(IRFunction& ir) {
  bool changed = false;
  for (size_t i = 0; i < ir.instructions().size();) {
    if (ir.instructions()[i].kind == OpKind::Copy && tryPropagate(ir, i)) {
      changed = true;
      i = 0;  // indices shifted; copies are few, so restarting is cheap
      continue;
    }
    ++i;
  }
  // A destination may now be written before its old allocation point.
  if (changed) tightenLifetimes(ir);
  return changed;
}

}  // namespace ember
