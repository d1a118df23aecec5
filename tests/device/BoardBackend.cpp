// The "board" test backend (BoardBackend.h): an interpreter of the planned IR
// over Ember's kernels, in board memory, behind a Device of its own.
#include "BoardBackend.h"

#include <cstring>
#include <map>
#include <mutex>

#include "ember/Kernels.h"
#include "tests/support/PlannedIRFunction.h"

namespace board {

using namespace ember;

BoardCounters& counters() {
  static BoardCounters c;
  return c;
}

namespace {

std::mutex& countersMutex() {
  static std::mutex m;
  return m;
}

void count(uint64_t BoardCounters::*field, uint64_t n = 1) {
  std::lock_guard<std::mutex> lock(countersMutex());
  counters().*field += n;
}

void event(const std::string& text) {
  std::lock_guard<std::mutex> lock(countersMutex());
  counters().events.push_back(text);
}

/// The planned IR run over the reference kernels, in the three regions.
class BoardFunction final : public test::PlannedIRFunction {
 public:
  explicit BoardFunction(const IRFunction& ir) : PlannedIRFunction(ir, "board") {}
};

/// A tensor in board memory.
class BoardTensor final : public DeviceTensor {
 public:
  explicit BoardTensor(Tensor tensor) : tensor_(std::move(tensor)) {}
  Type type() const override { return tensor_.type(); }
  Expected<Tensor> toHost() const override {
    count(&BoardCounters::toHost);
    return tensor_;
  }
  const Tensor& onBoard() const { return tensor_; }

 private:
  Tensor tensor_;
};

class DeferredRun final : public RunHandle {
 public:
  DeferredRun(Device& device, std::string id, ExecutionContext& context)
      : device_(device), id_(std::move(id)), context_(context) {}
  Error wait() override { return device_.run(id_, context_); }

 private:
  Device& device_;
  std::string id_;
  ExecutionContext& context_;
};

class BoardDevice final : public Device {
 public:
  explicit BoardDevice(BoardConfig config) : config_(std::move(config)) {}

  std::string name() const override { return config_.deviceName; }
  uint64_t memoryLimitBytes() const override { return config_.memoryBytes; }
  bool keepsTensors() const override { return config_.keepsTensors; }

  Error load(const std::string& id, std::shared_ptr<CompiledFunction> function) override {
    auto boardFunction = std::dynamic_pointer_cast<BoardFunction>(function);
    if (!boardFunction) return makeError("board: '", id, "' is not a board function");
    if (!loaded_.emplace(id, std::move(boardFunction)).second)
      return makeError("board: '", id, "' is already loaded");
    return Error::success();
  }
  Error unload(const std::string& id) override {
    if (!loaded_.erase(id)) return makeError("board: '", id, "' is not loaded");
    return Error::success();
  }

  Error run(const std::string& id, ExecutionContext& context) override {
    auto it = loaded_.find(id);
    if (it == loaded_.end()) return makeError("board: '", id, "' is not loaded");
    event("run " + id);
    count(&BoardCounters::runs);
    // What the function reads: host inputs as given, device inputs from board memory.
    ExecutionContext onBoard;
    for (const auto& [name, tensor] : context.inputs()) {
      onBoard.setInput(name, tensor);
      count(&BoardCounters::hostInputs);
    }
    for (const auto& [name, tensor] : context.deviceInputs()) {
      auto* mine = dynamic_cast<const BoardTensor*>(tensor.get());
      if (!mine) return makeError("board: input '", name, "' is on another device");
      onBoard.setInput(name, mine->onBoard());
      count(&BoardCounters::deviceInputs);
    }
    EMBER_RETURN_IF_ERROR(it->second->execute(onBoard));
    for (auto& [name, tensor] : onBoard.outputs()) {
      if (config_.keepsTensors && context.isKeptOnDevice(name)) {
        context.setDeviceOutput(name, std::make_shared<BoardTensor>(std::move(tensor)));
        count(&BoardCounters::deviceOutputs);
      } else {
        context.setOutput(name, std::move(tensor));
        count(&BoardCounters::hostOutputs);
      }
    }
    return Error::success();
  }

  std::unique_ptr<RunHandle> runAsync(const std::string& id, ExecutionContext& context) override {
    event("launch " + id);
    if (!config_.deferred) return Device::runAsync(id, context);
    return std::make_unique<DeferredRun>(*this, id, context);
  }

 private:
  BoardConfig config_;
  std::map<std::string, std::shared_ptr<BoardFunction>> loaded_;
};

class BoardBackend final : public Backend {
 public:
  explicit BoardBackend(std::string name) : name_(std::move(name)), config_(defaultConfig(name_)) {}

  std::string name() const override { return name_; }

  Error setOption(const std::string& key, const std::string& value) override {
    if (key == "memory") {
      config_.memoryBytes = std::stoull(value);
    } else if (key == "device") {
      config_.deviceName = value;
    } else if (key == "ops") {
      config_.ops.clear();
      for (size_t start = 0; start <= value.size();) {
        size_t end = value.find(',', start);
        if (end == std::string::npos) end = value.size();
        auto kind = opKindFromName(value.substr(start, end - start));
        if (!kind) return makeError("board: ops: unknown op '", value.substr(start, end - start), "'");
        config_.ops.insert(*kind);
        start = end + 1;
      }
    } else {
      return makeError("board: unknown backend option '", key, "' (known: memory, device, ops)");
    }
    return Error::success();
  }
  std::vector<BackendOption> options() const override {
    return {{"memory", "BYTES: the device's memory limit"},
            {"device", "NAME: the device's name (boards with one name share a device)"},
            {"ops", "OP,OP...: the f32 ops supports() accepts"}};
  }

  bool supports(const NodeInfo& info) const override {
    if (!config_.ops.count(info.kind)) return false;
    for (const Type& t : info.inputTypes)
      if (t.kind != ElemKind::F32) return false;
    return kernelSupports(info.kind, info.inputTypes, info.resultTypes);
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return std::unique_ptr<CompiledFunction>(new BoardFunction(ir));
  }

  std::unique_ptr<Device> createDevice() const override { return std::make_unique<BoardDevice>(config_); }

 private:
  std::string name_;
  BoardConfig config_;
};

}  // namespace

BoardConfig& defaultConfig(const std::string& name) {
  static std::map<std::string, BoardConfig> configs;
  return configs[name];
}

std::unique_ptr<Backend> createBoardBackend(const std::string& name) {
  return std::make_unique<BoardBackend>(name);
}

}  // namespace board
