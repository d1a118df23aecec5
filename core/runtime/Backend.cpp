// Defaults of the backend contract and the host device.
#include "ember/Backend.h"

#include <algorithm>

namespace ember {

NodeInfo NodeInfo::of(const Node& node) {
  NodeInfo info{node.kind(), {}, node.resultTypes(), {}, node.attrs()};
  for (const NodeValue& v : node.inputs()) {
    info.inputTypes.push_back(v.type());
    info.constantInputs.push_back(v.node->isConstant());
  }
  return info;
}

const Tensor* ExecutionContext::input(const std::string& name) const {
  auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : &it->second;
}

const Tensor* ExecutionContext::output(const std::string& name) const {
  auto it = outputs_.find(name);
  return it == outputs_.end() ? nullptr : &it->second;
}

void ExecutionContext::setDeviceInput(const std::string& name, std::shared_ptr<DeviceTensor> tensor) {
  deviceInputs_[name] = std::move(tensor);
}

std::shared_ptr<DeviceTensor> ExecutionContext::deviceInput(const std::string& name) const {
  auto it = deviceInputs_.find(name);
  return it == deviceInputs_.end() ? nullptr : it->second;
}

void ExecutionContext::setDeviceOutput(const std::string& name, std::shared_ptr<DeviceTensor> tensor) {
  deviceOutputs_[name] = std::move(tensor);
}

std::shared_ptr<DeviceTensor> ExecutionContext::deviceOutput(const std::string& name) const {
  auto it = deviceOutputs_.find(name);
  return it == deviceOutputs_.end() ? nullptr : it->second;
}

namespace {
/// The handle of a run that already finished (the default runAsync).
class FinishedRun final : public RunHandle {
 public:
  explicit FinishedRun(Error result) : result_(std::move(result)) {}
  Error wait() override { return std::move(result_); }

 private:
  Error result_;
};
}  // namespace

std::unique_ptr<RunHandle> Device::runAsync(const std::string& id, ExecutionContext& context) {
  return std::make_unique<FinishedRun>(run(id, context));
}

Error Device::load(const std::string& id, std::shared_ptr<CompiledFunction> function) {
  if (loaded_.count(id)) return makeError("device: function '", id, "' is already loaded");
  loaded_[id] = std::move(function);
  return Error::success();
}

Error Device::run(const std::string& id, ExecutionContext& context) {
  auto it = loaded_.find(id);
  if (it == loaded_.end()) return makeError("device: function '", id, "' is not loaded");
  return it->second->execute(context);
}

Error Device::unload(const std::string& id) {
  if (!loaded_.erase(id)) return makeError("device: function '", id, "' is not loaded");
  return Error::success();
}

Error CompiledFunction::writeArtifact(const std::string&) const {
  return makeError("this backend writes no compiled artefact");
}

Error CompiledFunction::writeTrace(const std::string&) const {
  return makeError("this backend records no timeline");
}

Error Backend::setOption(const std::string& key, const std::string&) {
  return makeError("backend '", name(), "' has no option '", key, "'");
}

bool Backend::shouldLower(const Node&) const { return true; }

Error Backend::transformPostLowering(Function&) const { return Error::success(); }

std::unique_ptr<Device> Backend::createDevice() const { return std::make_unique<Device>(); }

}  // namespace ember
