// The instruction-IR optimizer pipeline.
#include "IRPasses.h"

namespace ember {

Error optimizeIR(IRFunction& ir, bool verifyEachPass) {
  struct Pass {
    const char* name;
    bool (*run)(IRFunction&);
  };
  static constexpr Pass kPasses[] = {
      {"dead-store-elimination", eliminateDeadStores},
      {"slice-to-view", sliceToView},
      {"concat-to-copies", concatToCopies},
      {"copy-propagation", propagateCopies},
      {"in-place-sharing", shareBuffersInPlace},
      {"lifetime-tightening", tightenLifetimes},
  };
  for (const Pass& pass : kPasses) {
    pass.run(ir);
    if (verifyEachPass) EMBER_RETURN_IF_ERROR(ir.verify().withContext(std::string("after IR pass '") + pass.name + "'"));
  }
  return Error::success();
}

}  // namespace ember
