// A backend that crashes the process in compile(): `ember conformance`
// without --isolate must still have named the case that was running.
#include <cstdlib>

#include "ember/Plugin.h"

namespace {

class CrashingBackend final : public ember::Backend {
 public:
  std::string name() const override { return "crashing"; }
  bool supports(const ember::NodeInfo& info) const override { return info.kind == ember::OpKind::Relu; }
  ember::Expected<std::unique_ptr<ember::CompiledFunction>> compile(const ember::IRFunction&) const override {
    std::abort();
  }
};

}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN("crashing", "aborts in compile (tests/sdk)", CrashingBackend)
