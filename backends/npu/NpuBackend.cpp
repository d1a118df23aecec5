// The npu backend: compiles planned int8 IR to an NPU bundle (Compiler.h) and
// runs it in-process on the simulator library (NpuDevice.h). docs/npu/compiler.md.
#include <memory>

#include "Compiler.h"
#include "NpuDevice.h"
#include "ember/Backend.h"
#include "ember/Plugin.h"

namespace ember::npu_backend {
namespace {

class NpuBackend final : public Backend {
 public:
  std::string name() const override { return "npu"; }

  Error setOption(const std::string& key, const std::string& value) override {
    if (key != "config") return makeError("npu: unknown backend option '", key, "' (known: config)");
    auto config = npu::loadConfig(value);
    if (!config) return config.error();
    config_ = config.take();
    return Error::success();
  }

  std::vector<BackendOption> options() const override {
    return {{"config", "NPU configuration YAML file (array size, SRAM, DRAM bandwidth, clock; docs/npu)"}};
  }

  bool supports(const NodeInfo& info) const override { return npuSupport(info, config_).taken; }
  std::string unsupportedReason(const NodeInfo& info) const override {
    return npuSupport(info, config_).reason;
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    auto program = compileToBundle(ir, config_);
    if (!program) return program.error();
    return makeSimulatedFunction(program.take(), config_);
  }

  std::unique_ptr<Device> createDevice() const override { return makeNpuDevice(config_); }

 private:
  npu::NpuConfig config_;
};

}  // namespace
}  // namespace ember::npu_backend

extern "C" const EmberBackendPlugin* ember_backend_plugin_npu() {
  static const EmberBackendPlugin plugin{
      EMBER_PLUGIN_ABI_VERSION, "npu",
      "Ember NPU: int8 matrix engine, compiled to a bundle, run on the simulator",
      []() -> ember::Backend* { return new ember::npu_backend::NpuBackend(); }};
  return &plugin;
}
