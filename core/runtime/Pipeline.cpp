// The compile pipeline of DESIGN.md's data flow, stage by stage, with the
// verifier between stages.
#include <chrono>

#include "ember/Pass.h"
#include "ember/Runtime.h"

namespace ember {

namespace {
Error checkSupported(const Function& function, const Backend& backend) {
  for (const Node* node : function.nodes()) {
    if (node->info().category == OpCategory::Storage) continue;
    NodeInfo info = NodeInfo::of(*node);
    if (backend.supports(info)) continue;
    std::string types;
    for (const Type& t : info.inputTypes) types += (types.empty() ? "" : ", ") + t.str();
    return makeError("node '", node->name(), "' (", node->info().name, "): unsupported by backend '",
                     backend.name(), "' for inputs (", types, ")");
  }
  return Error::success();
}
}  // namespace

Error optimizeAndLower(Function& function, const Backend& backend, const CompileOptions& options) {
  EMBER_RETURN_IF_ERROR(function.verify());
  PassManagerOptions pmOptions;
  pmOptions.verifyEachPass = options.verifyEachPass;
  PassManager pm(pmOptions);
  if (options.optimizeGraph) addGraphOptimizationPasses(pm);
  if (options.beforeLowering) {
    EMBER_RETURN_IF_ERROR(pm.run(function));
    EMBER_RETURN_IF_ERROR(options.beforeLowering(function, backend));
    pm = PassManager(pmOptions);
  }
  pm.add(createLoweringPass(backend));
  pm.add(createConstantFoldingPass());
  pm.add(createCommonSubexpressionEliminationPass());
  pm.add(createDeadCodeEliminationPass());
  EMBER_RETURN_IF_ERROR(pm.run(function));
  EMBER_RETURN_IF_ERROR(backend.transformPostLowering(function).withContext("transformPostLowering"));
  EMBER_RETURN_IF_ERROR(function.verify());
  return checkSupported(function, backend);
}

Expected<CompiledModel> compileFunction(Function& function, std::unique_ptr<Backend> backend,
                                        const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CompiledModel model;
  for (const Node* in : function.inputs()) model.inputs.push_back({in->name(), in->resultType()});
  for (const auto& [name, v] : function.outputs()) model.outputs.push_back({name, v.type()});

  EMBER_RETURN_IF_ERROR(optimizeAndLower(function, *backend, options));
  auto ir = generateIR(function);
  if (!ir) return ir.error();
  EMBER_RETURN_IF_ERROR((*ir)->verify());
  if (options.optimizeIR) {
    EMBER_RETURN_IF_ERROR(optimizeIR(**ir, options.verifyEachPass));
  }
  EMBER_RETURN_IF_ERROR(planMemory(**ir, options.alignment));
  EMBER_RETURN_IF_ERROR((*ir)->verifyPlan());
  auto compiled = backend->compile(**ir);
  if (!compiled) return compiled.error();

  model.function = std::shared_ptr<CompiledFunction>(compiled.take());
  model.ir = ir.take();
  model.backend = std::move(backend);
  model.report.memory = model.ir->plan();
  model.report.numInstructions = model.ir->instructions().size();
  model.report.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return model;
}

Expected<std::map<std::string, Tensor>> compileAndRun(Function& function, const std::string& backendName,
                                                      std::map<std::string, Tensor> inputs,
                                                      const CompileOptions& options) {
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  auto model = compileFunction(function, backend.take(), options);
  if (!model) return model.error();
  ExecutionContext context;
  for (auto& [name, tensor] : inputs) context.setInput(name, std::move(tensor));
  EMBER_RETURN_IF_ERROR(checkInputs(*model, context));
  EMBER_RETURN_IF_ERROR(model->function->execute(context));
  return std::move(context.outputs());
}

Error checkInputs(const CompiledModel& model, const ExecutionContext& context) {
  std::string missing;
  for (const auto& [name, type] : model.inputs) {
    const Tensor* t = context.input(name);
    if (!t) {
      missing += (missing.empty() ? "'" : ", '") + name + "'";
      continue;
    }
    if (t->type().kind != type.kind || t->type().dims != type.dims)
      return makeError("input '", name, "': expected ", type.str(), ", got ", t->type().str());
  }
  if (!missing.empty()) return makeError("missing model input(s) ", missing);
  for (const auto& [name, tensor] : context.inputs()) {
    bool known = false;
    for (const auto& in : model.inputs) known |= in.first == name;
    if (!known) return makeError("'", name, "' is not an input of the model");
  }
  return Error::success();
}

}  // namespace ember
