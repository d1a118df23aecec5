// An independent check of a memory plan, deliberately simple and separate from
// the planner: every value lies inside its region, and no two activations that
// are live at the same time share a byte.
#include <vector>

#include "ember/IR.h"

namespace ember {

Error IRFunction::verifyPlan() const {
  auto regionSize = [&](Region r) {
    switch (r) {
      case Region::Constants: return plan_.constantBytes;
      case Region::IO: return plan_.ioBytes;
      case Region::Activations: return plan_.activationBytes;
    }
    return uint64_t(0);
  };
  // Live ranges from the alloc/dealloc markers. An activation with no alloc
  // is dead (a removed store, as of an unused Split result) and takes no memory.
  std::vector<size_t> begin(values_.size(), SIZE_MAX), end(values_.size(), SIZE_MAX);
  for (size_t i = 0; i < instrs_.size(); ++i) {
    if (instrs_[i].kind == OpKind::AllocActivation) begin[instrs_[i].operands[0].value] = i;
    if (instrs_[i].kind == OpKind::DeallocActivation) end[instrs_[i].operands[0].value] = i;
  }
  for (ValueId v = 0; v < values_.size(); ++v) {
    const IRValue& value = values_[v];
    if (value.kind == ValueKind::View) continue;
    if (value.kind == ValueKind::Activation && begin[v] == SIZE_MAX) continue;
    if (value.offset % plan_.alignment)
      return makeError(name_, ": value '%", value.name, "' is not aligned to ", plan_.alignment);
    if (value.offset + value.type.sizeInBytes() > regionSize(regionOf(v)))
      return makeError(name_, ": value '%", value.name, "' lies outside its region");
  }
  // Then an all-pairs overlap test of the live activations.
  std::vector<ValueId> acts;
  for (ValueId v = 0; v < values_.size(); ++v)
    if (values_[v].kind == ValueKind::Activation && begin[v] != SIZE_MAX) acts.push_back(v);
  for (size_t a = 0; a < acts.size(); ++a) {
    for (size_t b = a + 1; b < acts.size(); ++b) {
      ValueId x = acts[a], y = acts[b];
      bool liveTogether = begin[x] <= end[y] && begin[y] <= end[x];
      uint64_t xs = values_[x].offset, xe = xs + values_[x].type.sizeInBytes();
      uint64_t ys = values_[y].offset, ye = ys + values_[y].type.sizeInBytes();
      if (liveTogether && xs < ye && ys < xe)
        return makeError(name_, ": activations '%", values_[x].name, "' and '%", values_[y].name,
                         "' are live together and overlap");
    }
  }
  return Error::success();
}

}  // namespace ember
