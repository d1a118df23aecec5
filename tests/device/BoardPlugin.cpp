// The "board" test backend as a plugin: its device (with the limit given by
// --backend-option memory=BYTES) lives in the shared library.
#include "BoardBackend.h"
#include "ember/Plugin.h"

namespace {
class PluginBoard final : public ember::Backend {
 public:
  std::string name() const override { return inner_->name(); }
  ember::Error setOption(const std::string& key, const std::string& value) override {
    return inner_->setOption(key, value);
  }
  std::vector<ember::BackendOption> options() const override { return inner_->options(); }
  bool supports(const ember::NodeInfo& info) const override { return inner_->supports(info); }
  ember::Expected<std::unique_ptr<ember::CompiledFunction>> compile(
      const ember::IRFunction& ir) const override {
    return inner_->compile(ir);
  }
  std::unique_ptr<ember::Device> createDevice() const override { return inner_->createDevice(); }

 private:
  std::unique_ptr<ember::Backend> inner_ = board::createBoardBackend("board");
};
}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN("board", "test accelerator with its own device (tests/device)", PluginBoard)
