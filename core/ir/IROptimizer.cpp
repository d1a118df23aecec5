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
      {"output-copy-elimination", eliminateOutputCopies},
      {"in-place-sharing", shareBuffersInPlace},
  };
  for (const Pass& pass : kPasses) {
    pass.run(ir);
    if (verifyEachPass) EMBER_RETURN_IF_ERROR(ir.verify().withContext(std::string("after IR pass '") + pass.name + "'"));
  }
  return Error::success();
}

}  // namespace ember
