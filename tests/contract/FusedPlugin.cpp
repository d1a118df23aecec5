// The "fused" test backend as a plugin, for `ember conformance --backend-path`.
#include "FusedBackend.h"
#include "ember/Plugin.h"

namespace {
class PluginBackend final : public ember::Backend {
 public:
  std::string name() const override { return inner_->name(); }
  ember::Error setOption(const std::string& key, const std::string& value) override {
    return inner_->setOption(key, value);
  }
  std::vector<ember::BackendOption> options() const override { return inner_->options(); }
  bool supports(const ember::NodeInfo& info) const override { return inner_->supports(info); }
  bool shouldLower(const ember::Node& node) const override { return inner_->shouldLower(node); }
  ember::Expected<std::unique_ptr<ember::CompiledFunction>> compile(
      const ember::IRFunction& ir) const override {
    return inner_->compile(ir);
  }

 private:
  std::unique_ptr<ember::Backend> inner_ = fused::createFusedBackend();
};
}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN("fused", "test backend: f32 Gemm and Softmax kept high-level, one kernel each",
                            PluginBackend)
