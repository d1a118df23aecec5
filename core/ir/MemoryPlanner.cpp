// Static memory planning: constants and I/O are packed in order; activations
// get offsets from their live intervals (AllocActivation..DeallocActivation).
#include <algorithm>
#include <vector>

#include "ember/Arithmetic.h"
#include "ember/IR.h"

namespace ember {

namespace {

struct Interval {
  ValueId value;
  size_t begin, end;  // instruction indices, inclusive
  uint64_t size;      // aligned bytes
};

std::vector<Interval> liveIntervals(const IRFunction& ir, uint64_t alignment) {
  std::vector<Interval> intervals;
  std::vector<size_t> slot(ir.numValues(), SIZE_MAX);
  const auto& instrs = ir.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instruction& inst = instrs[i];
    if (inst.kind == OpKind::AllocActivation) {
      ValueId v = inst.operands[0].value;
      slot[v] = intervals.size();
      intervals.push_back(
          {v, i, instrs.size(), alignUp(std::max<uint64_t>(ir.value(v).type.sizeInBytes(), 1), alignment)});
    } else if (inst.kind == OpKind::DeallocActivation) {
      intervals[slot[inst.operands[0].value]].end = i;
    }
  }
  return intervals;
}

/// Max over time of the live bytes: no plan can use less.
uint64_t lowerBound(const std::vector<Interval>& intervals, size_t numInstrs) {
  std::vector<int64_t> delta(numInstrs + 2, 0);
  for (const Interval& iv : intervals) {
    delta[iv.begin] += int64_t(iv.size);
    delta[iv.end + 1] -= int64_t(iv.size);
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);
  return uint64_t(peak);
}

/// Places intervals in the given order, each at the lowest offset where it
/// overlaps no placed interval that is live at the same time.
uint64_t placeInOrder(std::vector<Interval>& order, std::vector<uint64_t>& offsets) {
  std::vector<const Interval*> placed;
  std::vector<uint64_t> placedOffset;
  uint64_t total = 0;
  offsets.assign(order.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Interval& iv = order[k];
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) bytes of conflicting buffers
    for (size_t j = 0; j < placed.size(); ++j)
      if (placed[j]->begin <= iv.end && iv.begin <= placed[j]->end)
        busy.push_back({placedOffset[j], placedOffset[j] + placed[j]->size});
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + iv.size <= b) break;
      offset = std::max(offset, e);
    }
    offsets[k] = offset;
    placed.push_back(&iv);
    placedOffset.push_back(offset);
    total = std::max(total, offset + iv.size);
  }
  return total;
}

}  // namespace

uint64_t activationLowerBound(const IRFunction& ir, uint64_t alignment) {
  return lowerBound(liveIntervals(ir, alignment), ir.instructions().size());
}

Error planMemory(IRFunction& ir, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    return makeError("memory alignment ", alignment, " is not a power of two");
  MemoryPlan& plan = ir.plan();
  plan = MemoryPlan{};
  plan.alignment = alignment;

  for (ValueId v = 0; v < ir.numValues(); ++v) {
    IRValue& value = ir.value(v);
    uint64_t* cursor = nullptr;
    if (value.kind == ValueKind::Constant) cursor = &plan.constantBytes;
    if (value.kind == ValueKind::Input || value.kind == ValueKind::Output) cursor = &plan.ioBytes;
    if (!cursor) continue;
    value.offset = *cursor;
    *cursor = alignUp(*cursor + value.type.sizeInBytes(), alignment);
  }

  std::vector<Interval> intervals = liveIntervals(ir, alignment);
  plan.activationLowerBoundBytes = lowerBound(intervals, ir.instructions().size());

  // Two orders, keep the smaller arena: largest first, and longest-lived first.
  std::vector<std::vector<Interval>> orders(2, intervals);
  std::stable_sort(orders[0].begin(), orders[0].end(),
                   [](const Interval& a, const Interval& b) { return a.size > b.size; });
  std::stable_sort(orders[1].begin(), orders[1].end(), [](const Interval& a, const Interval& b) {
    return (a.end - a.begin) * a.size > (b.end - b.begin) * b.size;
  });
  uint64_t best = UINT64_MAX;
  for (auto& order : orders) {
    std::vector<uint64_t> offsets;
    uint64_t total = placeInOrder(order, offsets);
    if (total >= best) continue;
    best = total;
    for (size_t k = 0; k < order.size(); ++k) ir.value(order[k].value).offset = offsets[k];
  }
  plan.activationBytes = intervals.empty() ? 0 : best;
  return Error::success();
}

}  // namespace ember
