// The instruction-IR optimizer pipeline.
#include "IRPasses.h"

namespace ember {

namespace {

struct Pass {
  const char* name;
  bool (*run)(IRFunction&);
  /// Undone when it raises the activation lower bound: writing concat parts
  /// in place makes the result live from its first part's producer, which
  /// can cost more memory than the copies save (DenseNet).
  bool keepOnlyIfNoWorse;
};

constexpr Pass kPasses[] = {
    {"dead-store-elimination", eliminateDeadStores, false},
    {"slice-to-view", sliceToView, false},
    {"concat-elimination", [](IRFunction& f) { return concatToCopies(f) && (propagateCopies(f), true); },
     true},
    {"copy-propagation", propagateCopies, false},
    {"in-place-sharing", shareBuffersInPlace, false},
    {"lifetime-tightening", tightenLifetimes, false},
};

}  // namespace

std::vector<std::string> irPassNames() {
  std::vector<std::string> names;
  for (const Pass& pass : kPasses) names.push_back(pass.name);
  return names;
}

Error optimizeIR(IRFunction& ir, bool verifyEachPass, PassGate* gate) {
  for (const Pass& pass : kPasses) {
    if (gate && !gate->shouldRun(pass.name)) continue;
    if (pass.keepOnlyIfNoWorse) {
      IRFunction before = ir;
      uint64_t boundBefore = activationLowerBound(ir);
      if (pass.run(ir) && activationLowerBound(ir) > boundBefore) ir = std::move(before);
    } else {
      pass.run(ir);
    }
    if (verifyEachPass)
      EMBER_RETURN_IF_ERROR(ir.verify().withContext(std::string("after IR pass '") + pass.name + "'"));
  }
  return Error::success();
}

}  // namespace ember
