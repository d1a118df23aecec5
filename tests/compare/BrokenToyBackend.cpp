// The toy example backend (examples/oot-backend/ToyBackend.cpp, compiled here
// unchanged) registered under its own name, "toy_off_by_one", so that it never
// clashes with the shipped plugin; its Sub kernel is broken by
// BrokenToyKernels.cpp. The shipped entry point is renamed on inclusion and
// wrapped by a backend that only changes the name.
#define ember_backend_plugin shipped_toy_backend_plugin
#include "ToyBackend.cpp"
#undef ember_backend_plugin

namespace {

class OffByOneToyBackend final : public ember::Backend {
 public:
  std::string name() const override { return "toy_off_by_one"; }
  ember::Error setOption(const std::string& key, const std::string& value) override {
    return toy_->setOption(key, value);
  }
  bool supports(const ember::NodeInfo& info) const override { return toy_->supports(info); }
  bool shouldLower(const ember::Node& node) const override { return toy_->shouldLower(node); }
  ember::Error transformPostLowering(ember::Function& function) const override {
    return toy_->transformPostLowering(function);
  }
  ember::Expected<std::unique_ptr<ember::CompiledFunction>> compile(
      const ember::IRFunction& ir) const override {
    return toy_->compile(ir);
  }
  std::unique_ptr<ember::Device> createDevice() const override { return toy_->createDevice(); }

 private:
  std::unique_ptr<ember::Backend> toy_{shipped_toy_backend_plugin()->create()};
};

}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN("toy_off_by_one",
                            "the toy example with an off-by-one in its f32 Sub (tests/compare)",
                            OffByOneToyBackend)
