// The backend contract (docs/backend-guide.md, "The contract"; docs/design.md).
//
// Compile side: name, supports, unsupportedReason, shouldLower,
// transformPostLowering, compile.
// Run side: a Device that loads, runs and unloads compiled functions.
// Everything except name, supports and compile has a default.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/DeviceReport.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/IR.h"
#include "ember/Tensor.h"

namespace ember {

/// What supports() is asked: an op kind with its input and result types,
/// and which inputs are compile-time constants (weights a backend may re-lay).
struct NodeInfo {
  OpKind kind;
  std::vector<Type> inputTypes;
  std::vector<Type> resultTypes;
  std::vector<bool> constantInputs;  ///< one per input; empty means unknown
  /// The node's attributes (strides, dilations, perm...), so a backend can
  /// decline a variant it does not run; empty when unknown.
  Attributes attributes;

  bool isConstantInput(size_t i) const { return i < constantInputs.size() && constantInputs[i]; }

  static NodeInfo of(const Node& node);
};

/// A tensor held in a device's memory between two partitions that run on
/// that device: the runtime hands it from the producer to the consumer
/// without a copy through host memory (docs/backend-guide.md, "Device model").
class DeviceTensor {
 public:
  virtual ~DeviceTensor() = default;
  virtual Type type() const = 0;
  /// Copies it to host memory (the runtime counts each call as a host
  /// transfer): done when a partition on another device or the caller reads it.
  virtual Expected<Tensor> toHost() const = 0;
};

/// Named input and output tensors of one run. A device that keeps tensors
/// (Device::keepsTensors) may also be given device-resident inputs, and asked
/// to leave some outputs on the device.
class ExecutionContext {
 public:
  void setInput(const std::string& name, Tensor tensor) { inputs_[name] = std::move(tensor); }
  const Tensor* input(const std::string& name) const;
  const std::map<std::string, Tensor>& inputs() const { return inputs_; }

  void setOutput(const std::string& name, Tensor tensor) { outputs_[name] = std::move(tensor); }
  const Tensor* output(const std::string& name) const;
  std::map<std::string, Tensor>& outputs() { return outputs_; }
  const std::map<std::string, Tensor>& outputs() const { return outputs_; }

  /// An input an earlier partition left on this device (instead of input(name)).
  void setDeviceInput(const std::string& name, std::shared_ptr<DeviceTensor> tensor);
  std::shared_ptr<DeviceTensor> deviceInput(const std::string& name) const;
  const std::map<std::string, std::shared_ptr<DeviceTensor>>& deviceInputs() const { return deviceInputs_; }
  /// Outputs a later partition on the same device reads: the device may give
  /// them with setDeviceOutput instead of setOutput.
  void keepOnDevice(const std::string& name) { keptOnDevice_.insert(name); }
  bool isKeptOnDevice(const std::string& name) const { return keptOnDevice_.count(name) != 0; }
  void setDeviceOutput(const std::string& name, std::shared_ptr<DeviceTensor> tensor);
  std::shared_ptr<DeviceTensor> deviceOutput(const std::string& name) const;

 private:
  std::map<std::string, Tensor> inputs_;
  std::map<std::string, Tensor> outputs_;
  std::map<std::string, std::shared_ptr<DeviceTensor>> deviceInputs_, deviceOutputs_;
  std::set<std::string> keptOnDevice_;
};

/// A compiled function, ready to run. Backend-specific.
class CompiledFunction {
 public:
  virtual ~CompiledFunction() = default;
  /// Reads the context's inputs (checked against the function's input types)
  /// and writes all outputs.
  virtual Error execute(ExecutionContext& context) = 0;
  /// The device's report (ember/DeviceReport.h: cycles, counters and a
  /// per-layer table), or null for none. Updated by each execute().
  virtual const DeviceReport* deviceReport() const { return nullptr; }
  /// Writes the compiled artefact (`ember compile -o`; the NPU's bundle).
  /// Default: an error saying the backend has none.
  virtual Error writeArtifact(const std::string& path) const;
  /// Writes a timeline of the last execute() (Chrome trace-event JSON).
  /// Default: an error saying the backend has none.
  virtual Error writeTrace(const std::string& path) const;
};

/// A run started by Device::runAsync.
class RunHandle {
 public:
  virtual ~RunHandle() = default;
  /// Blocks until the run has finished and returns its error. Called once.
  virtual Error wait() = 0;
};

/// The run side: where compiled functions execute. The runtime loads every
/// partition of a model on its own backend's device (docs/backend-guide.md,
/// "Device model").
class Device {
 public:
  virtual ~Device() = default;
  /// The device's name in messages. Devices of different backends with the
  /// same non-empty name are one device: the runtime creates it once and
  /// loads both backends' partitions on it. Default: empty (not shared).
  virtual std::string name() const { return ""; }
  virtual Error load(const std::string& id, std::shared_ptr<CompiledFunction> function);
  virtual Error run(const std::string& id, ExecutionContext& context);
  /// Starts a run and returns at once; `context` must outlive the handle's
  /// wait(). Default: runs synchronously (run()) and returns a finished handle.
  virtual std::unique_ptr<RunHandle> runAsync(const std::string& id, ExecutionContext& context);
  virtual Error unload(const std::string& id);
  /// Bytes of device memory; 0 means unlimited (host memory). The runtime
  /// refuses to load a function when the functions loaded on this device
  /// would need more.
  virtual uint64_t memoryLimitBytes() const { return 0; }
  /// Whether run() reads ExecutionContext::deviceInput() and honours
  /// keepOnDevice() (default: no; the runtime then passes host tensors only).
  virtual bool keepsTensors() const { return false; }

 private:
  std::map<std::string, std::shared_ptr<CompiledFunction>> loaded_;
};

/// One key setOption() accepts, with a line of help (`ember backends
/// --options NAME` prints them).
struct BackendOption {
  std::string name;
  std::string help;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  /// Sets a backend option (`ember --backend-option KEY=VALUE`; the npu
  /// backend's `config` is the NPU YAML). Default: every key is unknown.
  virtual Error setOption(const std::string& key, const std::string& value);
  /// The keys setOption() accepts, each with its help. Default: none.
  virtual std::vector<BackendOption> options() const { return {}; }
  /// Whether this backend executes `info` natively. Gates lowering,
  /// quantization and partitioning.
  virtual bool supports(const NodeInfo& info) const = 0;
  /// Why supports(info) is false, in a few words with the sizes that decide
  /// it (e.g. "a row of 2000 elements does not fit even alone: ..."); the
  /// partitioner appends it to the fallback reason. Default: "" (no detail).
  virtual std::string unsupportedReason(const NodeInfo& /*info*/) const { return ""; }
  /// Whether a high-level node should be lowered to primitives (default:
  /// yes). A node kept high-level (false) reaches compile() as one IR
  /// instruction of its kind, with its attributes; supports() must accept it.
  virtual bool shouldLower(const Node& node) const;
  /// Backend-specific rewrites after lowering (default: none).
  virtual Error transformPostLowering(Function& function) const;
  /// Compiles planned IR.
  virtual Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const = 0;
  /// The device this backend's functions run on (default: the host).
  virtual std::unique_ptr<Device> createDevice() const;
};

}  // namespace ember
