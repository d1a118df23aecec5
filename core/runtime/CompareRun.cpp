// Compiling and running one side of a comparison, and what both the node
// comparison and the pass bisection need from a run.
#include "CompareRun.h"

#include <algorithm>
#include <set>

#include "ember/Pass.h"

namespace ember::compare_detail {

namespace {

/// The stages before lowering, as the pipeline runs them (graph optimizer and
/// extra passes under one pass gate, then beforeLowering), so that values can
/// be exposed after them. Returns the options that compile the rest: those
/// stages off, and what is left of the pass limit.
Expected<CompileOptions> runStagesBeforeLowering(Function& function, const Backend& backend,
                                                 const CompileOptions& options) {
  PassGate gate(options.disabledPasses, options.passLimit);
  EMBER_RETURN_IF_ERROR(runStagesBeforeLowering(function, backend, options, gate));

  CompileOptions rest = options;
  rest.optimizeGraph = false;
  rest.beforeLowering = nullptr;
  for (const auto& makePass : options.extraGraphPasses) rest.disabledPasses.erase(makePass()->name());
  rest.extraGraphPasses.clear();
  if (options.passLimit >= 0)
    rest.passLimit = std::max<int64_t>(0, options.passLimit - int64_t(gate.ran().size()));
  return rest;
}

}  // namespace

Expected<SideRun> compileAndRun(const CompareSide& side, const CompileOptions& options,
                                const std::map<std::string, Tensor>& inputs,
                                std::vector<ExposedValue>* exposed) {
  Module module;
  Expected<Function*> function = side.makeModel(module);
  if (!function) return function.error();
  Expected<std::unique_ptr<Backend>> backend = side.makeBackend();
  if (!backend) return backend.error();
  CompileOptions compileOptions = options;
  if (exposed) {
    auto rest = runStagesBeforeLowering(**function, **backend, options);
    if (!rest) return rest.error().withContext(side.label);
    compileOptions = rest.take();
    *exposed = exposeNodeResults(**function);
  }
  Expected<CompiledModel> model = compileFunction(**function, backend.take(), compileOptions);
  if (!model) return model.error().withContext(side.label);

  ExecutionContext context;
  for (const auto& [name, tensor] : inputs) context.setInput(name, tensor);
  EMBER_RETURN_IF_ERROR(checkInputs(*model, context).withContext(side.label));
  std::unique_ptr<Device> device = model->createDevice();
  const std::string id = "compare";
  EMBER_RETURN_IF_ERROR(device->load(id, model->function).withContext(side.label));
  EMBER_RETURN_IF_ERROR(device->run(id, context).withContext(side.label));
  EMBER_RETURN_IF_ERROR(device->unload(id).withContext(side.label));

  SideRun run;
  run.outputs = model->outputs;
  run.report = std::move(model->report);
  for (const auto& [name, type] : run.outputs) {
    const Tensor* tensor = context.output(name);
    if (!tensor) return makeError(side.label, ": the backend produced no output '", name, "'");
    run.values.emplace(name, *tensor);
  }
  return run;
}

std::vector<ExposedValue> exposeNodeResults(Function& function) {
  std::map<std::pair<const Node*, unsigned>, std::string> existing;
  std::set<std::string> names;
  for (const auto& [name, value] : function.outputs()) {
    existing.emplace(std::make_pair(value.node, value.resNo), name);
    names.insert(name);
  }
  std::vector<ExposedValue> exposed;
  for (Node* node : function.topologicalOrder()) {
    if (node->info().category == OpCategory::Storage) continue;
    for (unsigned r = 0; r < node->numResults(); ++r) {
      ExposedValue value{"", node->name(), std::string(node->info().name), r};
      if (auto it = existing.find({node, r}); it != existing.end()) {
        value.output = it->second;
      } else {
        // A prefix no ONNX output is likely to use (made unique regardless), and
        // no character an accelerator's symbol table refuses ('#', spaces).
        std::string name = "ember.compare/" + node->name() + ":" + std::to_string(r);
        while (!names.insert(name).second) name += "'";
        value.output = name;
        function.addOutput(name, node->result(r));
      }
      exposed.push_back(std::move(value));
    }
  }
  return exposed;
}

Expected<std::vector<ValueComparison>> compareOutputs(const SideRun& test, const std::string& testLabel,
                                                      const SideRun& oracle, const std::string& oracleLabel,
                                                      const Tolerance& tolerance) {
  auto list = [](const SideRun& run) {
    std::string names;
    for (const auto& [name, type] : run.outputs) names += (names.empty() ? "'" : ", '") + name + "'";
    return names;
  };
  auto typeOf = [](const SideRun& run, const std::string& name) -> const Type* {
    for (const auto& [n, type] : run.outputs)
      if (n == name) return &type;
    return nullptr;
  };
  for (const auto& [name, type] : oracle.outputs)
    if (!typeOf(test, name))
      return makeError("output '", name, "' of ", oracleLabel, " is not an output of ", testLabel,
                       " (its outputs: ", list(test), ")");
  std::vector<ValueComparison> compared;
  for (const auto& [name, type] : test.outputs) {
    const Type* expected = typeOf(oracle, name);
    if (!expected)
      return makeError("output '", name, "' of ", testLabel, " is not an output of ", oracleLabel,
                       " (its outputs: ", list(oracle), ")");
    if (*expected != type)
      return makeError("output '", name, "': ", testLabel, " gives ", type.str(), ", ", oracleLabel,
                       " gives ", expected->str());
    ValueComparison value;
    value.node = name;
    value.type = *expected;
    value.diff = diffTensors(test.values.at(name), oracle.values.at(name), tolerance);
    compared.push_back(std::move(value));
  }
  return compared;
}

}  // namespace ember::compare_detail
