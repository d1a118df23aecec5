// A backend's Device::memoryLimitBytes() bounds what is compiled for it: a
// model whose static plan does not fit is refused with one line naming the
// backend and the limit; one that fits compiles and runs.
#include <gtest/gtest.h>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace {

using namespace ember;

constexpr uint64_t kOneMiB = 1 << 20;

class SmallDevice final : public Device {
 public:
  uint64_t memoryLimitBytes() const override { return kOneMiB; }
};

/// The reference backend on a device with 1 MiB of memory.
class SmallDeviceBackend final : public Backend {
 public:
  std::string name() const override { return "small-device"; }
  bool supports(const NodeInfo& info) const override { return inner_->supports(info); }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return inner_->compile(ir);
  }
  std::unique_ptr<Device> createDevice() const override { return std::make_unique<SmallDevice>(); }

 private:
  std::unique_ptr<Backend> inner_ = BackendRegistry::global().create("reference").take();
};

/// x[1, n] f32 -> Relu -> y: inputs and outputs alone take 8n bytes.
std::unique_ptr<Function> reluModel(int64_t n) {
  auto f = std::make_unique<Function>("relu");
  Node* x = f->createPlaceholder("x", Type(ElemKind::F32, {1, n}));
  f->addOutput("y", f->create(OpKind::Relu, "relu", {x}).take()->result());
  return f;
}

TEST(DeviceMemory, ModelAboveTheDeviceLimitIsRefused) {
  registerBuiltinBackends();
  auto big = reluModel(200000);  // 1.6 MB of inputs and outputs
  auto refused = compileFunction(*big, std::make_unique<SmallDeviceBackend>(), CompileOptions());
  ASSERT_FALSE(refused);
  EXPECT_NE(
      refused.error().message().find("above the device memory of backend 'small-device' (1048576 bytes)"),
      std::string::npos)
      << refused.error().message();
  EXPECT_EQ(refused.error().message().find('\n'), std::string::npos);

  auto small = reluModel(1000);
  auto compiled = compileFunction(*small, std::make_unique<SmallDeviceBackend>(), CompileOptions());
  ASSERT_TRUE(compiled) << compiled.error().message();
}

}  // namespace
