// The backend contract (DESIGN.md, "The backend contract is narrow").
//
// Compile side: name, supports, shouldLower, transformPostLowering, compile.
// Run side: a Device that loads, runs and unloads compiled functions.
// Everything except name, supports and compile has a default.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/IR.h"
#include "ember/Tensor.h"

namespace ember {

/// What supports() is asked: an op kind with its input and result types.
struct NodeInfo {
  OpKind kind;
  std::vector<Type> inputTypes;
  std::vector<Type> resultTypes;

  static NodeInfo of(const Node& node);
};

/// Named input and output tensors of one run.
class ExecutionContext {
 public:
  void setInput(const std::string& name, Tensor tensor) { inputs_[name] = std::move(tensor); }
  const Tensor* input(const std::string& name) const;
  const std::map<std::string, Tensor>& inputs() const { return inputs_; }

  void setOutput(const std::string& name, Tensor tensor) { outputs_[name] = std::move(tensor); }
  const Tensor* output(const std::string& name) const;
  std::map<std::string, Tensor>& outputs() { return outputs_; }
  const std::map<std::string, Tensor>& outputs() const { return outputs_; }

 private:
  std::map<std::string, Tensor> inputs_;
  std::map<std::string, Tensor> outputs_;
};

/// A compiled function, ready to run. Backend-specific.
class CompiledFunction {
 public:
  virtual ~CompiledFunction() = default;
  /// Reads the context's inputs (checked against the function's input types)
  /// and writes all outputs.
  virtual Error execute(ExecutionContext& context) = 0;
};

/// The run side: where compiled functions execute.
class Device {
 public:
  virtual ~Device() = default;
  virtual Error load(const std::string& id, std::shared_ptr<CompiledFunction> function);
  virtual Error run(const std::string& id, ExecutionContext& context);
  virtual Error unload(const std::string& id);
  /// Bytes of device memory; 0 means unlimited (host memory).
  virtual uint64_t memoryLimitBytes() const { return 0; }

 private:
  std::map<std::string, std::shared_ptr<CompiledFunction>> loaded_;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  /// Whether this backend executes `info` natively. Gates lowering,
  /// quantization and partitioning.
  virtual bool supports(const NodeInfo& info) const = 0;
  /// Whether a high-level node should be lowered to primitives (default: yes).
  virtual bool shouldLower(const Node& node) const;
  /// Backend-specific rewrites after lowering (default: none).
  virtual Error transformPostLowering(Function& function) const;
  /// Compiles planned IR.
  virtual Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const = 0;
  /// The device this backend's functions run on (default: the host).
  virtual std::unique_ptr<Device> createDevice() const;
};

}  // namespace ember
