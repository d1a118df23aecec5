// The compile pipeline of docs/design.md's data flow, stage by stage, with the
// verifier between stages.
#include <algorithm>
#include <chrono>

#include "PartitionedFunction.h"
#include "Partitioner.h"
#include "ember/Pass.h"
#include "ember/Runtime.h"
#include "ember/VendorOp.h"

namespace ember {

namespace {
/// The first non-storage node `backend` does not support, or null. Views
/// attached to compute (a Reshape between two nodes) run no kernel, so
/// supports() is not asked about them; a view-only path is.
const Node* firstUnsupported(const Function& function, const Backend& backend) {
  const std::unordered_set<const Node*> attached = attachedViews(function);
  for (const Node* node : function.nodes())
    if (node->info().category != OpCategory::Storage && !attached.count(node) &&
        !backend.supports(NodeInfo::of(*node)))
      return node;
  return nullptr;
}

bool hasComputeNode(const Function& function) {
  for (const Node* node : function.nodes())
    if (node->info().category != OpCategory::Storage) return true;
  return false;
}

Error checkSupported(const Function& function, const Backend& backend) {
  const Node* node = firstUnsupported(function, backend);
  if (!node) return Error::success();
  // The result types too: a backend may decline a kind only a result has (f64 from a Cast).
  std::string results;
  for (size_t i = 0; i < node->numResults(); ++i) results += (i ? ", " : "") + node->resultType(i).str();
  return makeError("node '", node->name(), "' (", node->info().name, "): unsupported by backend '",
                   backend.name(), "' for inputs (", inputTypesOf(*node), ") and results (", results, ")",
                   unsupportedReasons({&backend}, NodeInfo::of(*node)));
}

/// The registered backends `names`, in order.
Expected<std::vector<std::unique_ptr<Backend>>> createFallbacks(const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<Backend>> fallbacks;
  for (const std::string& name : names) {
    auto fallback = BackendRegistry::global().create(name);
    if (!fallback) return fallback.error().withContext("fallback backend");
    fallbacks.push_back(fallback.take());
  }
  return fallbacks;
}

/// What the target and its fallback backends support together: the graph
/// rewrites before lowering (the quantizer) convert a node when some backend
/// of the chain can run the result; the partitioner then places it.
class SupportUnion : public Backend {
 public:
  SupportUnion(const Backend& target, std::vector<std::unique_ptr<Backend>> fallbacks)
      : target_(target), fallbacks_(std::move(fallbacks)) {}
  std::string name() const override { return target_.name(); }
  bool supports(const NodeInfo& info) const override {
    if (target_.supports(info)) return true;
    for (const auto& fallback : fallbacks_)
      if (fallback->supports(info)) return true;
    return false;
  }
  bool shouldLower(const Node& node) const override { return target_.shouldLower(node); }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    return makeError("internal: the support union of '", target_.name(), "' does not compile");
  }

 private:
  const Backend& target_;
  std::vector<std::unique_ptr<Backend>> fallbacks_;
};

Error runBeforeLowering(Function& function, const Backend& backend, const CompileOptions& options) {
  if (options.fallbackBackends.empty()) return options.beforeLowering(function, backend);
  auto chain = supportUnion(backend, options.fallbackBackends);
  if (!chain) return chain.error();
  return options.beforeLowering(function, **chain);
}

}  // namespace

Expected<std::unique_ptr<Backend>> supportUnion(const Backend& target,
                                                const std::vector<std::string>& fallbacks) {
  auto created = createFallbacks(fallbacks);
  if (!created) return created.error();
  return std::unique_ptr<Backend>(std::make_unique<SupportUnion>(target, created.take()));
}

std::vector<std::string> optionalPassNames() {
  PassManager pm;
  addGraphOptimizationPasses(pm);
  std::vector<std::string> names;
  for (std::string& name : pm.passNames())
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  for (std::string& name : irPassNames()) names.push_back(std::move(name));
  return names;
}

Error checkDisabledPassNames(const std::vector<std::string>& disabled,
                             const std::vector<std::string>& known) {
  for (const std::string& name : disabled) {
    if (name == "lowering") return makeError("pass 'lowering' is required and cannot be disabled");
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return makeError("unknown pass '", name, "' (optional passes: ", list, ")");
  }
  return Error::success();
}

namespace {

/// Names in `disabledPasses` must be optional passes of this pipeline.
Error checkDisabledPasses(const CompileOptions& options) {
  std::vector<std::string> known = optionalPassNames();
  for (const auto& makePass : options.extraGraphPasses) known.push_back(makePass()->name());
  const std::vector<std::string> disabled(options.disabledPasses.begin(), options.disabledPasses.end());
  return checkDisabledPassNames(disabled, known);
}

}  // namespace

Error runStagesBeforeLowering(Function& function, const Backend& backend, const CompileOptions& options,
                              PassGate& gate) {
  EMBER_RETURN_IF_ERROR(function.verify());
  EMBER_RETURN_IF_ERROR(checkDisabledPasses(options));
  PassManagerOptions pmOptions;
  pmOptions.verifyEachPass = options.verifyEachPass;
  pmOptions.gate = &gate;
  PassManager pm(pmOptions);
  if (options.optimizeGraph) addGraphOptimizationPasses(pm);
  for (const auto& makePass : options.extraGraphPasses) pm.add(makePass());
  EMBER_RETURN_IF_ERROR(pm.run(function));
  if (options.beforeLowering) EMBER_RETURN_IF_ERROR(runBeforeLowering(function, backend, options));
  return Error::success();
}

namespace {

Error optimizeAndLower(Function& function, const Backend& backend, const CompileOptions& options,
                       PassGate& gate) {
  EMBER_RETURN_IF_ERROR(runStagesBeforeLowering(function, backend, options, gate));
  PassManagerOptions pmOptions;
  pmOptions.verifyEachPass = options.verifyEachPass;
  pmOptions.gate = &gate;
  PassManager pm(pmOptions);
  pm.add(createLoweringPass(backend));
  pm.add(createConstantFoldingPass());
  pm.add(createCommonSubexpressionEliminationPass());
  pm.add(createDeadCodeEliminationPass());
  pm.add(createVendorOpRewritePass(backend.name()));  // the target's vendor ops (ember/VendorOp.h)
  EMBER_RETURN_IF_ERROR(pm.run(function));
  EMBER_RETURN_IF_ERROR(backend.transformPostLowering(function).withContext("transformPostLowering"));
  EMBER_RETURN_IF_ERROR(function.verify());
  // With fallback backends the partitioner places what the target lacks.
  if (!options.fallbackBackends.empty()) return Error::success();
  return checkSupported(function, backend);
}

}  // namespace

Error optimizeAndLower(Function& function, const Backend& backend, const CompileOptions& options) {
  PassGate gate(options.disabledPasses, options.passLimit);
  return optimizeAndLower(function, backend, options, gate);
}

namespace {

struct LoweredToCompiled {
  std::unique_ptr<CompiledFunction> function;
  std::unique_ptr<IRFunction> ir;
};

/// IRGen, the IR optimizer, memory planning and backend.compile for a
/// function that is already lowered for `backend`.
Expected<LoweredToCompiled> compileLowered(const Function& function, const Backend& backend,
                                           const CompileOptions& options, PassGate& gate) {
  auto ir = generateIR(function);
  if (!ir) return ir.error();
  EMBER_RETURN_IF_ERROR((*ir)->verify());
  if (options.optimizeIR) EMBER_RETURN_IF_ERROR(optimizeIR(**ir, options.verifyEachPass, &gate));
  EMBER_RETURN_IF_ERROR(planMemory(**ir, options.alignment));
  EMBER_RETURN_IF_ERROR((*ir)->verifyPlan());
  const MemoryPlan& plan = (*ir)->plan();
  const uint64_t total = plan.constantBytes + plan.ioBytes + plan.activationBytes;
  auto needs = [&] {
    return "the model needs " + std::to_string(total) + " bytes (constants " +
           std::to_string(plan.constantBytes) + ", inputs/outputs " + std::to_string(plan.ioBytes) +
           ", activations " + std::to_string(plan.activationBytes) + ")";
  };
  if (options.memoryLimitBytes && total > options.memoryLimitBytes)
    return makeError(needs(), ", above the memory limit of ", options.memoryLimitBytes, " bytes");
  // The plan is static, so the backend's device memory is checked here,
  // before anything is compiled or loaded.
  if (std::unique_ptr<Device> device = backend.createDevice()) {
    const uint64_t deviceBytes = device->memoryLimitBytes();
    if (deviceBytes && total > deviceBytes)
      return makeError(needs(), ", above the device memory of backend '", backend.name(), "' (", deviceBytes,
                       " bytes)");
  }
  auto compiled = backend.compile(**ir);
  if (!compiled) return compiled.error();
  return LoweredToCompiled{compiled.take(), ir.take()};
}

void addToReport(CompileReport& report, const IRFunction& ir, const CompiledFunction& compiled) {
  const MemoryPlan& plan = ir.plan();
  report.memory.constantBytes += plan.constantBytes;
  report.memory.ioBytes += plan.ioBytes;
  report.memory.activationBytes += plan.activationBytes;
  report.memory.activationLowerBoundBytes += plan.activationLowerBoundBytes;
  report.memory.alignment = plan.alignment;
  report.numInstructions += ir.instructions().size();
  for (const Instruction& inst : ir.instructions())
    if (inst.kind == OpKind::VendorOp) ++report.vendorOps[vendorOpName(inst.attrs)];
  if (const DeviceReport* device = compiled.deviceReport()) report.device.merge(*device);
}

/// One device per backend of the partitions, created once: backends whose
/// devices have the same non-empty name() share the first one created.
class DeviceSlots {
 public:
  size_t slotFor(const Backend& backend) {
    auto known = byBackend_.find(&backend);
    if (known != byBackend_.end()) return known->second;
    std::shared_ptr<Device> device = backend.createDevice();
    if (!device) device = std::make_shared<Device>();
    const std::string name = device->name();
    size_t slot = slots_.size();
    for (size_t i = 0; i < slots_.size() && !name.empty(); ++i)
      if (slots_[i].device->name() == name) slot = i;
    if (slot == slots_.size())
      slots_.push_back({std::move(device), name.empty() ? "device of backend '" + backend.name() + "'"
                                                        : "device '" + name + "'"});
    return byBackend_[&backend] = slot;
  }
  std::vector<PartitionedFunction::DeviceSlot> take() { return std::move(slots_); }

 private:
  std::map<const Backend*, size_t> byBackend_;
  std::vector<PartitionedFunction::DeviceSlot> slots_;
};

/// Compiles each partition for its backend and chains them, each partition
/// on its backend's device.
Error compilePartitioned(Function& function, CompiledModel& model, const CompileOptions& options,
                         PassGate& gate) {
  auto fallbacks = createFallbacks(options.fallbackBackends);
  if (!fallbacks) return fallbacks.error();
  std::vector<const Backend*> backends{model.backend.get()};
  for (const auto& fallback : *fallbacks) backends.push_back(fallback.get());
  auto plan = partitionFunction(function, backends);
  if (!plan) return plan.error();
  model.report.fallbackNodes = plan->fallbackNodes;

  DeviceSlots devices;
  std::vector<PartitionedFunction::Stage> stages;
  for (Partition& partition : plan->partitions) {
    const Backend& backend = *backends[partition.backendIndex];
    // The target's vendor ops were rewritten before partitioning; a fallback
    // backend's are rewritten in its own partitions.
    if (partition.backendIndex != 0) {
      auto rewritten = createVendorOpRewritePass(backend.name())->run(*partition.function);
      if (!rewritten) return rewritten.error().withContext("partition on '" + backend.name() + "'");
    }
    auto compiled = compileLowered(*partition.function, backend, options, gate);
    if (!compiled) return compiled.error().withContext("partition on '" + backend.name() + "'");
    PartitionedFunction::Stage stage;
    for (const Node* in : partition.function->inputs()) stage.inputs.push_back(in->name());
    for (const auto& [name, value] : partition.function->outputs()) stage.outputs.push_back(name);
    addToReport(model.report, *compiled->ir, *compiled->function);
    const std::string nodes = std::to_string(partition.function->numNodes()) + " nodes";
    model.report.partitions.push_back(backend.name() + ":" + nodes);
    const MemoryPlan& memory = compiled->ir->plan();
    stage.memoryBytes = memory.constantBytes + memory.ioBytes + memory.activationBytes;
    stage.label = "partition " + std::to_string(stages.size()) + " (" + backend.name() + ", " + nodes + ")";
    stage.device = devices.slotFor(backend);
    stage.function = std::shared_ptr<CompiledFunction>(std::move(compiled->function));
    if (partition.backendIndex == 0 && !model.ir) model.ir = std::make_unique<IRFunction>(*compiled->ir);
    model.partitionIRs.emplace_back(backend.name(), std::move(compiled->ir));
    stages.push_back(std::move(stage));
  }
  std::vector<std::string> outputs;
  outputs.reserve(model.outputs.size());
  for (const auto& [name, type] : model.outputs) outputs.push_back(name);
  auto partitioned = std::make_shared<PartitionedFunction>(
      std::move(stages), devices.take(), std::move(outputs), std::move(plan->storageOutputs));
  partitioned->keepBackends(fallbacks.take());
  model.function = std::move(partitioned);
  return Error::success();
}

}  // namespace

Expected<CompiledModel> compileFunction(Function& function, std::unique_ptr<Backend> backend,
                                        const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CompiledModel model;
  for (const Node* in : function.inputs()) model.inputs.push_back({in->name(), in->resultType()});
  for (const auto& [name, v] : function.outputs()) model.outputs.push_back({name, v.type()});

  PassGate gate(options.disabledPasses, options.passLimit);
  EMBER_RETURN_IF_ERROR(optimizeAndLower(function, *backend, options, gate));
  model.backend = std::move(backend);
  // A model with no compute node (every output an input or a constant) needs
  // no backend: the partitioned function with no stage passes them through.
  if (firstUnsupported(function, *model.backend) || !hasComputeNode(function)) {
    EMBER_RETURN_IF_ERROR(compilePartitioned(function, model, options, gate));
  } else {
    auto compiled = compileLowered(function, *model.backend, options, gate);
    if (!compiled) return compiled.error();
    addToReport(model.report, *compiled->ir, *compiled->function);
    model.report.partitions.push_back(model.backend->name() + ":" + std::to_string(function.numNodes()) +
                                      " nodes");
    model.function = std::shared_ptr<CompiledFunction>(std::move(compiled->function));
    model.ir = std::move(compiled->ir);
  }
  model.report.passesRun = gate.ran();
  model.report.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  for (auto& entry : inputs) context.setInput(entry.first, std::move(entry.second));
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
