// CompiledModel::createDevice: the device an application loads a compiled
// model on. A partitioned model's device loads each partition on its own
// backend's device; a whole model's device is the target's, with its memory
// checked at load.
#include "PartitionedFunction.h"

namespace ember {

namespace {

/// The target's device, refusing to load the model above its memory.
class WholeModelDevice final : public Device {
 public:
  WholeModelDevice(std::unique_ptr<Device> device, std::string backendName,
                   std::shared_ptr<CompiledFunction> model, uint64_t modelBytes)
      : device_(std::move(device)),
        backendName_(std::move(backendName)),
        model_(std::move(model)),
        modelBytes_(modelBytes) {}

  std::string name() const override { return device_->name(); }
  Error load(const std::string& id, std::shared_ptr<CompiledFunction> function) override {
    const uint64_t bytes = function == model_ ? modelBytes_ : 0;
    const uint64_t limit = device_->memoryLimitBytes();
    if (limit && loadedBytes_ + bytes > limit) {
      const std::string label = device_->name().empty() ? "device of backend '" + backendName_ + "'"
                                                        : "device '" + device_->name() + "'";
      return makeError(
          label, ": cannot load '", id, "': it needs ", bytes, " bytes",
          loadedBytes_ ? " with " + std::to_string(loadedBytes_) + " already loaded" : std::string(),
          ", above the device memory of ", limit, " bytes");
    }
    EMBER_RETURN_IF_ERROR(device_->load(id, std::move(function)));
    loadedBytes_ += bytes;
    bytesOf_[id] = bytes;
    return Error::success();
  }
  Error run(const std::string& id, ExecutionContext& context) override { return device_->run(id, context); }
  std::unique_ptr<RunHandle> runAsync(const std::string& id, ExecutionContext& context) override {
    return device_->runAsync(id, context);
  }
  Error unload(const std::string& id) override {
    EMBER_RETURN_IF_ERROR(device_->unload(id));
    loadedBytes_ -= bytesOf_[id];
    bytesOf_.erase(id);
    return Error::success();
  }
  uint64_t memoryLimitBytes() const override { return device_->memoryLimitBytes(); }
  bool keepsTensors() const override { return device_->keepsTensors(); }

 private:
  std::unique_ptr<Device> device_;
  std::string backendName_;
  std::shared_ptr<CompiledFunction> model_;
  uint64_t modelBytes_;
  uint64_t loadedBytes_ = 0;
  std::map<std::string, uint64_t> bytesOf_;
};

/// Loads a partitioned model: each partition on its backend's device.
class PartitionsDevice final : public Device {
 public:
  explicit PartitionsDevice(std::shared_ptr<PartitionedFunction> model) : model_(std::move(model)) {}

  std::string name() const override { return "partitions"; }
  Error load(const std::string& id, std::shared_ptr<CompiledFunction> function) override {
    if (function != model_)
      return makeError("device of a partitioned model: '", id, "' is not that model's function");
    return model_->load(id);
  }
  Error run(const std::string& id, ExecutionContext& context) override { return model_->run(id, context); }
  Error unload(const std::string& id) override { return model_->unload(id); }

 private:
  std::shared_ptr<PartitionedFunction> model_;
};

}  // namespace

std::unique_ptr<Device> CompiledModel::createDevice() const {
  if (auto partitioned = std::dynamic_pointer_cast<PartitionedFunction>(function))
    return std::make_unique<PartitionsDevice>(std::move(partitioned));
  std::unique_ptr<Device> device = backend->createDevice();
  if (!device) device = std::make_unique<Device>();
  const uint64_t bytes = report.memory.constantBytes + report.memory.ioBytes + report.memory.activationBytes;
  return std::make_unique<WholeModelDevice>(std::move(device), backend->name(), function, bytes);
}

}  // namespace ember
