// Runs a partitioned model through its devices: loads each partition on its
// backend's device (checking the device's memory), starts each partition as
// soon as the tensors it reads are ready, and hands a tensor from one
// partition to a later one on the same device without a host copy.
#include "PartitionedFunction.h"

#include <mutex>

namespace ember {

PartitionedFunction::PartitionedFunction(std::vector<Stage> stages, std::vector<DeviceSlot> devices,
                                         std::vector<std::string> modelOutputs,
                                         std::vector<StorageOutput> storageOutputs)
    : stages_(std::move(stages)),
      devices_(std::move(devices)),
      modelOutputs_(std::move(modelOutputs)),
      storageOutputs_(std::move(storageOutputs)),
      keepOnDevice_(stages_.size()),
      loadedBytes_(devices_.size(), 0) {
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const std::string& name : stages_[s].outputs) producer_[name] = s;
  // A tensor stays on its device when a later partition there reads it.
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const std::string& name : stages_[s].inputs) {
      auto it = producer_.find(name);
      if (it == producer_.end()) continue;
      const size_t device = stages_[it->second].device;
      if (device == stages_[s].device && devices_[device].device->keepsTensors())
        keepOnDevice_[it->second].insert(name);
    }
}

PartitionedFunction::~PartitionedFunction() {
  std::set<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids = loadedIds_;
  }
  for (const std::string& id : ids) (void)unload(id);
}

std::string PartitionedFunction::stageId(const std::string& id, size_t stage) const {
  return id + "/p" + std::to_string(stage);
}

Error PartitionedFunction::load(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return loadLocked(id);
}

Error PartitionedFunction::loadLocked(const std::string& id) {
  if (loadedIds_.count(id)) return makeError("device: function '", id, "' is already loaded");
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& stage = stages_[s];
    DeviceSlot& slot = devices_[stage.device];
    const uint64_t limit = slot.device->memoryLimitBytes();
    const uint64_t loaded = loadedBytes_[stage.device];
    Error refused = Error::success();
    if (limit && loaded + stage.memoryBytes > limit)
      refused =
          makeError(slot.label, ": cannot load ", stage.label, ": it needs ", stage.memoryBytes, " bytes",
                    loaded ? " with " + std::to_string(loaded) + " already loaded" : std::string(),
                    ", above the device memory of ", limit, " bytes");
    else
      refused =
          slot.device->load(stageId(id, s), stage.function).withContext(slot.label + ", " + stage.label);
    if (refused) {
      for (size_t done = 0; done < s; ++done) {
        (void)devices_[stages_[done].device].device->unload(stageId(id, done));
        loadedBytes_[stages_[done].device] -= stages_[done].memoryBytes;
      }
      return refused;
    }
    loadedBytes_[stage.device] += stage.memoryBytes;
  }
  loadedIds_.insert(id);
  return Error::success();
}

Error PartitionedFunction::unload(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!loadedIds_.erase(id)) return makeError("device: function '", id, "' is not loaded");
  Error first = Error::success();
  for (size_t s = 0; s < stages_.size(); ++s) {
    Error e = devices_[stages_[s].device].device->unload(stageId(id, s));
    if (e && !first) first = e;
    loadedBytes_[stages_[s].device] -= stages_[s].memoryBytes;
  }
  return first;
}

namespace {

/// One tensor of a run: in host memory, on a device, or both.
struct Value {
  const Tensor* host = nullptr;
  std::optional<Tensor> hostCopy;  ///< owns `host` after a toHost()
  std::shared_ptr<DeviceTensor> onDevice;
  size_t device = 0;
  bool intermediate = false;   ///< written by a partition (not a model input)
  bool countedOnHost = false;  ///< already counted as a host transfer
};

Error ensureOnHost(Value& value, const std::string& name) {
  if (value.host) return Error::success();
  if (!value.onDevice) return makeError("tensor '", name, "' is neither on the host nor on a device");
  auto copied = value.onDevice->toHost();
  if (!copied) return copied.error().withContext("copying '" + name + "' to the host");
  value.hostCopy = copied.take();
  value.host = &*value.hostCopy;
  return Error::success();
}

/// Hands `value` to a stage on `device`: as the device's own tensor when it
/// is there and the device keeps tensors, otherwise from the host (counting
/// an intermediate's first host copy).
Error setStageInput(const std::string& name, Value& value, size_t device, bool deviceKeepsTensors,
                    ExecutionContext& stageContext, RunStatistics& stats) {
  if (value.onDevice && value.device == device && deviceKeepsTensors) {
    stageContext.setDeviceInput(name, value.onDevice);
    ++stats.deviceHandoffs;
    return Error::success();
  }
  EMBER_RETURN_IF_ERROR(ensureOnHost(value, name));
  if (value.intermediate && !value.countedOnHost) {
    value.countedOnHost = true;
    ++stats.hostTransfers;
    stats.hostTransferBytes += value.host->sizeInBytes();
  }
  stageContext.setInput(name, *value.host);
  return Error::success();
}

/// The model outputs into `context`, those no partition computes (a model
/// input passed through, or a constant) included.
Error setModelOutputs(std::map<std::string, Value>& values, const std::vector<StorageOutput>& storageOutputs,
                      const std::vector<std::string>& modelOutputs, ExecutionContext& context) {
  for (const StorageOutput& out : storageOutputs) {
    if (out.constant) {
      values[out.name].host = &*out.constant;
      continue;
    }
    auto it = values.find(out.inputName);
    if (it == values.end())
      return makeError("model output '", out.name, "': no model input '", out.inputName, "'");
    values[out.name].host = it->second.host;
  }
  for (const std::string& name : modelOutputs) {
    auto it = values.find(name);
    if (it == values.end()) return makeError("no partition produced model output '", name, "'");
    EMBER_RETURN_IF_ERROR(ensureOnHost(it->second, name));
    context.setOutput(name, *it->second.host);
  }
  return Error::success();
}

/// One run of the stages: each starts, through Device::runAsync, once its
/// producers and the previous run on its device have finished.
struct StageRun {
  using Stage = PartitionedFunction::Stage;
  using DeviceSlot = PartitionedFunction::DeviceSlot;

  StageRun(const std::vector<Stage>& stages, const std::vector<DeviceSlot>& devices,
           const std::map<std::string, size_t>& producer,
           const std::vector<std::set<std::string>>& keepOnDevice, const ExecutionContext& context)
      : stages(stages),
        devices(devices),
        producer(producer),
        keepOnDevice(keepOnDevice),
        contexts(stages.size()),
        pending(stages.size()),
        lastOnDevice(devices.size()) {
    stats.partitions = stages.size();
    for (const auto& [name, tensor] : context.inputs()) values[name].host = &tensor;
  }

  /// Starts every stage (`ids`: its id on its device) and waits for all.
  Error runAll(const std::vector<std::string>& ids) {
    for (size_t s = 0; s < stages.size(); ++s)
      if (Error e = start(s, ids[s])) return waitAll(e);
    for (size_t s = 0; s < stages.size(); ++s)
      if (Error e = finish(s)) return waitAll(e);
    return Error::success();
  }

  /// Waits for stage s and publishes its outputs.
  Error finish(size_t s) {
    if (!pending[s]) return Error::success();
    Error e = pending[s]->wait();
    pending[s].reset();
    if (e) return e.withContext(stages[s].label);
    for (const std::string& name : stages[s].outputs) {
      Value& value = values[name];
      value.intermediate = true;
      value.device = stages[s].device;
      value.onDevice = contexts[s].deviceOutput(name);
      value.host = contexts[s].output(name);
      if (!value.host && !value.onDevice)
        return makeError(stages[s].label, ": produced no tensor '", name, "'");
    }
    return Error::success();
  }

  /// Waits for every stage still running; the first error wins.
  Error waitAll(Error error) {
    for (size_t s = 0; s < stages.size(); ++s)
      if (pending[s]) {
        Error e = pending[s]->wait();
        if (e && !error) error = e.withContext(stages[s].label);
      }
    return error;
  }

  /// Stage s's inputs (its producers, and the previous run on its device,
  /// finished first), then its run.
  Error start(size_t s, const std::string& id) {
    const Stage& stage = stages[s];
    for (const std::string& name : stage.inputs) {
      auto it = producer.find(name);
      if (it != producer.end() && it->second < s) EMBER_RETURN_IF_ERROR(finish(it->second));
    }
    if (lastOnDevice[stage.device]) EMBER_RETURN_IF_ERROR(finish(*lastOnDevice[stage.device]));
    ExecutionContext& stageContext = contexts[s];
    const DeviceSlot& slot = devices[stage.device];
    for (const std::string& name : stage.inputs) {
      auto it = values.find(name);
      if (it == values.end()) return makeError(stage.label, ": tensor '", name, "' was not produced");
      if (Error e =
              setStageInput(name, it->second, stage.device, slot.device->keepsTensors(), stageContext, stats))
        return e.withContext(stage.label);
    }
    for (const std::string& name : keepOnDevice[s]) stageContext.keepOnDevice(name);
    pending[s] = slot.device->runAsync(id, stageContext);
    if (!pending[s]) return makeError(slot.label, ": runAsync returned no handle");
    lastOnDevice[stage.device] = s;
    return Error::success();
  }

  const std::vector<Stage>& stages;
  const std::vector<DeviceSlot>& devices;
  const std::map<std::string, size_t>& producer;
  const std::vector<std::set<std::string>>& keepOnDevice;
  RunStatistics stats;
  std::map<std::string, Value> values;
  std::vector<ExecutionContext> contexts;
  std::vector<std::unique_ptr<RunHandle>> pending;
  std::vector<std::optional<size_t>> lastOnDevice;
};

}  // namespace

Error PartitionedFunction::run(const std::string& id, ExecutionContext& context) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!loadedIds_.count(id)) return makeError("device: function '", id, "' is not loaded");
  }
  std::vector<std::string> ids;
  ids.reserve(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s) ids.push_back(stageId(id, s));
  StageRun stageRun{stages_, devices_, producer_, keepOnDevice_, context};
  EMBER_RETURN_IF_ERROR(stageRun.runAll(ids));
  EMBER_RETURN_IF_ERROR(setModelOutputs(stageRun.values, storageOutputs_, modelOutputs_, context));
  std::lock_guard<std::mutex> lock(mutex_);
  lastRun_ = stageRun.stats;
  return Error::success();
}

Error PartitionedFunction::execute(ExecutionContext& context) {
  static const std::string kId = "execute";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!loadedIds_.count(kId)) EMBER_RETURN_IF_ERROR(loadLocked(kId));
  }
  return run(kId, context);
}

const DeviceReport* PartitionedFunction::deviceReport() const {
  bool any = false;
  merged_ = DeviceReport();
  for (const Stage& stage : stages_) {
    if (const DeviceReport* r = stage.function->deviceReport()) {
      merged_.merge(*r);
      any = true;
    }
  }
  return any ? &merged_ : nullptr;
}

Error PartitionedFunction::writeEach(const std::string& path,
                                     Error (CompiledFunction::*write)(const std::string&) const) const {
  size_t written = 0;
  for (const Stage& stage : stages_) {
    if (!stage.function->deviceReport()) continue;  // host partitions have no artefact
    std::string target = written == 0 ? path : path + "." + std::to_string(written + 1);
    EMBER_RETURN_IF_ERROR(((*stage.function).*write)(target));
    ++written;
  }
  if (written == 0) return makeError("no partition of this model ran on a backend with artefacts");
  return Error::success();
}

Error PartitionedFunction::writeArtifact(const std::string& path) const {
  return writeEach(path, &CompiledFunction::writeArtifact);
}

Error PartitionedFunction::writeTrace(const std::string& path) const {
  return writeEach(path, &CompiledFunction::writeTrace);
}

const RunStatistics* lastRunStatistics(const CompiledFunction& function) {
  auto* partitioned = dynamic_cast<const PartitionedFunction*>(&function);
  return partitioned ? &partitioned->lastRun() : nullptr;
}

}  // namespace ember
