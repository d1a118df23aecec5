// Shared by the operator sweep's files: one graph compiled for a backend and
// run, and the int8 comparison against the reference's output.
#pragma once

#include <map>
#include <string>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace ember::sweep {

/// Compiles `f` (one output, "out") for `backendName` (with the shipped NPU
/// `config` when not empty) and runs it on `inputs`; an npu run that leaves a
/// node on the fallback is an error.
inline Expected<Tensor> runOnBackend(Function& f, const std::string& backendName, const std::string& config,
                                     const std::map<std::string, Tensor>& inputs) {
  static const bool registered = (registerBuiltinBackends(), true);
  (void)registered;
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  if (!config.empty())
    EMBER_RETURN_IF_ERROR((*backend)->setOption("config", std::string(EMBER_NPU_CONFIG_DIR) + "/" + config));
  EMBER_ASSIGN_OR_RETURN(CompiledModel model, compileFunction(f, backend.take()));
  ExecutionContext context;
  for (const auto& [name, tensor] : inputs) context.setInput(name, tensor);
  EMBER_RETURN_IF_ERROR(model.function->execute(context));
  if (backendName == "npu" && !model.report.fallbackNodes.empty())
    return makeError("npu: ", model.report.fallbackNodes[0].name, " fell back to ",
                     model.report.fallbackNodes[0].backend);
  return context.outputs().at("out");
}

/// The int8 elements of `got` that differ from `expected` (same size).
inline int64_t differingElements(const Tensor& got, const Tensor& expected) {
  int64_t differing = 0;
  for (size_t i = 0; i < got.sizeInBytes(); ++i)
    differing += static_cast<const int8_t*>(got.data())[i] != static_cast<const int8_t*>(expected.data())[i];
  return differing;
}

}  // namespace ember::sweep
