// Compiling, running and timing a model split over several chips
// (MultichipModel.h, docs/multichip.md).
#include "ember/multichip/MultichipModel.h"

#include <algorithm>
#include <limits>
#include <set>

#include "ember/HostModel.h"
#include "ember/PassGate.h"
#include "ember/multichip/StageSplit.h"
#include "ember/npu/CoSimulation.h"

namespace ember::multichip {

std::string_view splitModeName(SplitMode mode) { return mode == SplitMode::Pipeline ? "pipeline" : "data"; }

namespace {

std::string chipLabel(const SystemConfig& system, size_t chip) {
  return "chip '" + system.chips[chip].name + "' (" + system.chips[chip].config.name + ")";
}

double nanosecondsOf(const SystemConfig& system, size_t chip, uint64_t cycles) {
  return double(cycles) / system.chips[chip].config.clockGhz;
}

Expected<std::unique_ptr<Backend>> chipBackend(const SystemConfig& system, size_t chip,
                                               const MultichipOptions& options) {
  auto backend = BackendRegistry::global().create(options.backend);
  if (!backend) return backend.error();
  EMBER_RETURN_IF_ERROR(
      (*backend)->setOption("config", system.chips[chip].configPath).withContext(chipLabel(system, chip)));
  return backend.take();
}

/// The options a stage compiles with: the graph is already optimized and
/// quantized, so only lowering and what follows run.
CompileOptions stageOptions(const MultichipOptions& options) {
  CompileOptions stage = options.compile;
  stage.optimizeGraph = false;
  stage.beforeLowering = {};
  stage.extraGraphPasses.clear();
  stage.passLimit = -1;
  return stage;
}

Expected<CompiledStage> compileStage(StageFunction stageFunction, const std::string& name, size_t chip,
                                     const SystemConfig& system, const MultichipOptions& options,
                                     const std::vector<Node*>& nodes) {
  const std::string where = chipLabel(system, chip) + " cannot hold stage '" + name + "'";
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, chipBackend(system, chip, options));
  Expected<CompiledModel> compiled =
      compileFunction(*stageFunction.function, std::move(backend), stageOptions(options));
  if (!compiled) return compiled.error().withContext(where);
  CompiledStage stage;
  stage.name = name;
  stage.chip = chip;
  stage.inputs = std::move(stageFunction.inputs);
  stage.outputs = std::move(stageFunction.outputs);
  stage.outputAliases = std::move(stageFunction.outputAliases);
  stage.numNodes = nodes.size();
  if (!nodes.empty()) {
    stage.firstNode = nodes.front()->name();
    stage.lastNode = nodes.back()->name();
  }
  for (const LayerReport& layer : compiled->report.device.layers)
    stage.estimatedCycles += layer.estimatedCycles;
  const std::string ownBackend = options.backend + ":";
  for (const std::string& partition : compiled->report.partitions)
    if (partition.rfind(ownBackend, 0) != 0) stage.hostPartitions.push_back(partition);
  const MemoryPlan& memory = compiled->report.memory;
  stage.dramBytes = int64_t(memory.constantBytes + memory.ioBytes + memory.activationBytes);
  stage.model = std::make_shared<CompiledModel>(compiled.take());
  return stage;
}

/// Each node's estimated cycles on `chip`: the whole model compiled for it.
Expected<std::map<std::string, uint64_t>> nodeEstimates(const Function& function,
                                                        const std::vector<Node*>& nodes,
                                                        const SystemConfig& system, size_t chip,
                                                        const MultichipOptions& options) {
  EMBER_ASSIGN_OR_RETURN(StageFunction whole, buildStageFunction(function, nodes, "whole"));
  EMBER_ASSIGN_OR_RETURN(CompiledStage compiled,
                         compileStage(std::move(whole), "whole model", chip, system, options, nodes));
  std::map<std::string, uint64_t> cycles;
  for (const LayerReport& layer : compiled.model->report.device.layers)
    cycles[layer.name] += layer.estimatedCycles;
  return cycles;
}

Error checkOutputsComputed(const Function& function) {
  for (const auto& [name, value] : function.outputs())
    if (value.node->isPlaceholder() || value.node->isConstant())
      return makeError("model output '", name, "' is not computed by any node; a multi-chip run needs one");
  return Error::success();
}

/// What the stage balancing weighs: each node's time on each chip, each cut's transfer time.
struct PipelineCosts {
  std::vector<std::vector<double>> stage, boundary;
};

Expected<PipelineCosts> pipelineCosts(const Function& function, const std::vector<Node*>& nodes,
                                      const SystemConfig& system, const MultichipOptions& options) {
  const size_t chips = system.chips.size();
  // Per distinct chip config, the compiler's estimate of every node.
  // A chip that cannot hold the whole model borrows another chip's estimates
  // (its own stage is then compiled, or refused, for it).
  std::map<std::string, std::map<std::string, uint64_t>> estimatesByConfig;
  Error firstFailure;
  for (size_t chip = 0; chip < chips; ++chip) {
    const std::string& config = system.chips[chip].configPath;
    if (estimatesByConfig.count(config)) continue;
    Expected<std::map<std::string, uint64_t>> estimates =
        nodeEstimates(function, nodes, system, chip, options);
    if (estimates)
      estimatesByConfig[config] = estimates.take();
    else if (!firstFailure)
      firstFailure = estimates.error();
  }
  if (estimatesByConfig.empty()) return firstFailure;
  std::vector<std::vector<double>> stageCost(chips, std::vector<double>(nodes.size(), 0.0));
  for (size_t chip = 0; chip < chips; ++chip) {
    auto own = estimatesByConfig.find(system.chips[chip].configPath);
    const auto& estimates = own != estimatesByConfig.end() ? own->second : estimatesByConfig.begin()->second;
    for (size_t j = 0; j < nodes.size(); ++j) {
      auto it = estimates.find(nodes[j]->name());
      if (it != estimates.end()) stageCost[chip][j] = nanosecondsOf(system, chip, it->second);
    }
  }
  const std::vector<int64_t> bytes = cutBytes(nodes);
  std::vector<std::vector<double>> boundaryCost(chips, std::vector<double>(nodes.size() + 1, 0.0));
  for (size_t chip = 0; chip + 1 < chips; ++chip) {
    const std::vector<size_t> path = route(system, chip, chip + 1);
    for (size_t j = 0; j <= nodes.size(); ++j)
      boundaryCost[chip][j] = bytes[j] ? transferNanoseconds(system, path, bytes[j]) : 0.0;
  }
  return PipelineCosts{std::move(stageCost), std::move(boundaryCost)};
}

Error compilePipeline(Function& function, const SystemConfig& system, const MultichipOptions& options,
                      MultichipModel& model) {
  const std::vector<Node*> nodes = computeNodes(function);
  const size_t chips = system.chips.size();
  EMBER_ASSIGN_OR_RETURN(PipelineCosts costs, pipelineCosts(function, nodes, system, options));
  EMBER_ASSIGN_OR_RETURN(std::vector<size_t> starts,
                         balanceStages(costs.stage, costs.boundary, nodes.size()));

  std::map<std::string, size_t> producerOf;
  for (size_t k = 0; k < chips; ++k) {
    const std::vector<Node*> stageNodes(nodes.begin() + std::ptrdiff_t(starts[k]),
                                        nodes.begin() + std::ptrdiff_t(starts[k + 1]));
    const std::string name = "s" + std::to_string(k);
    EMBER_ASSIGN_OR_RETURN(StageFunction stageFunction, buildStageFunction(function, stageNodes, name));
    EMBER_ASSIGN_OR_RETURN(CompiledStage stage,
                           compileStage(std::move(stageFunction), name, k, system, options, stageNodes));
    for (const std::string& input : stage.inputs) {
      auto producer = producerOf.find(input);
      if (producer == producerOf.end()) continue;  // a model input
      int64_t inputBytes = 0;
      for (const auto& [inputName, type] : stage.model->inputs)
        if (inputName == input) inputBytes = int64_t(type.sizeInBytes());
      model.transfers.push_back({input, producer->second, k, inputBytes});
    }
    for (const std::string& output : stage.outputs) producerOf[output] = k;
    model.stages.push_back(std::move(stage));
  }
  return Error::success();
}

Error compileDataParallel(Function& function, const SystemConfig& system, const MultichipOptions& options,
                          MultichipModel& model) {
  const std::vector<Node*> nodes = computeNodes(function);
  for (size_t chip = 0; chip < system.chips.size(); ++chip) {
    const std::string name = "s" + std::to_string(chip);
    EMBER_ASSIGN_OR_RETURN(StageFunction whole, buildStageFunction(function, nodes, name));
    EMBER_ASSIGN_OR_RETURN(CompiledStage stage,
                           compileStage(std::move(whole), name, chip, system, options, nodes));
    model.stages.push_back(std::move(stage));
  }
  return Error::success();
}

}  // namespace

Expected<MultichipModel> compileMultichip(Function& function, const SystemConfig& system,
                                          const MultichipOptions& options) {
  if (system.chips.empty()) return makeError(system.path, ": the system has no chip");
  MultichipModel model;
  model.system = system;
  model.split = options.split;
  // The graph stages of the one-chip run: optimizer, then the quantizer (for
  // the first chip's support, with the fallbacks).
  {
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, chipBackend(system, 0, options));
    PassGate gate(options.compile.disabledPasses, options.compile.passLimit);
    EMBER_RETURN_IF_ERROR(runStagesBeforeLowering(function, *backend, options.compile, gate));
  }
  EMBER_RETURN_IF_ERROR(checkOutputsComputed(function));
  for (const Node* input : function.inputs()) model.inputs.push_back({input->name(), input->resultType()});
  for (const auto& [name, value] : function.outputs()) model.outputs.push_back({name, value.type()});

  EMBER_RETURN_IF_ERROR(options.split == SplitMode::Pipeline
                            ? compilePipeline(function, system, options, model)
                            : compileDataParallel(function, system, options, model));
  std::vector<StagePlacement> placements;
  placements.reserve(model.stages.size());
  for (const CompiledStage& stage : model.stages)
    placements.push_back({stage.name, system.chips[stage.chip].name, stage.dramBytes});
  EMBER_RETURN_IF_ERROR(checkStagePlacement(system, placements));
  return model;
}

namespace {

/// Data parallel: each micro-batch to the chip whose estimated finish is earliest.
std::vector<size_t> assignMicroBatches(const MultichipModel& model, size_t microBatches) {
  std::vector<double> finish(model.stages.size(), 0.0);
  std::vector<size_t> assigned;
  for (size_t i = 0; i < microBatches; ++i) {
    size_t best = 0;
    double bestFinish = std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < model.stages.size(); ++s) {
      const double estimate =
          finish[s] + nanosecondsOf(model.system, model.stages[s].chip,
                                    std::max<uint64_t>(1, model.stages[s].estimatedCycles));
      if (estimate < bestFinish) {
        bestFinish = estimate;
        best = s;
      }
    }
    finish[best] = bestFinish;
    assigned.push_back(best);
  }
  return assigned;
}

/// The last run's host time of a stage: its host partitions (modelled) and
/// the tensors that crossed the host link between them and the chip.
double hostNanoseconds(const CompiledModel& stage, const SystemConfig& system) {
  if (!system.hostTimed) return 0;
  const HostModel& host = system.host;
  double nanoseconds =
      modelledHostSeconds(stage, stage.backend->name(), host.macsPerSecond, host.memoryGbps * 1e9) * 1e9;
  if (const RunStatistics* stats = lastRunStatistics(*stage.function))
    nanoseconds += hostLinkMicroseconds(stats->hostTransfers, stats->hostTransferBytes, host.linkGbps * 1e9,
                                        host.linkLatencyUs) *
                   1e3;
  return nanoseconds;
}

Error runStage(CompiledStage& stage, std::map<std::string, Tensor>& values, size_t microBatch,
               MultichipRun& run, size_t stageIndex, const SystemConfig& system) {
  ExecutionContext context;
  for (const std::string& input : stage.inputs) {
    auto value = values.find(input);
    if (value == values.end())
      return makeError("micro-batch ", microBatch, ": no value for input '", input, "'");
    context.setInput(input, value->second);
  }
  const std::string where = "micro-batch " + std::to_string(microBatch) + ", stage '" + stage.name + "' on " +
                            chipLabel(system, stage.chip);
  EMBER_RETURN_IF_ERROR(checkInputs(*stage.model, context).withContext(where));
  EMBER_RETURN_IF_ERROR(stage.model->function->execute(context).withContext(where));
  uint64_t cycles = 0;
  if (const DeviceReport* device = stage.model->function->deviceReport()) {
    cycles = device->cycles;
    run.stageMacs[stageIndex] += device->macs;
    run.hostSeconds += device->hostSeconds;
  }
  run.stageCycles[microBatch][stageIndex] = cycles;
  run.stageHostNs[microBatch][stageIndex] = hostNanoseconds(*stage.model, system);
  for (const std::string& output : stage.outputs) {
    const Tensor* tensor = context.output(output);
    if (!tensor) return makeError(where, ": no output '", output, "'");
    values[output] = *tensor;
  }
  for (const auto& [modelOutput, cutName] : stage.outputAliases) values[modelOutput] = values.at(cutName);
  return Error::success();
}

}  // namespace

Expected<MultichipRun> runMultichip(MultichipModel& model,
                                    const std::vector<std::map<std::string, Tensor>>& inputs) {
  MultichipRun run;
  run.outputs.resize(inputs.size());
  run.stageCycles.resize(inputs.size());
  run.stageHostNs.resize(inputs.size());
  run.stageMacs.assign(model.stages.size(), 0);
  const std::vector<size_t> assigned =
      model.split == SplitMode::Data ? assignMicroBatches(model, inputs.size()) : std::vector<size_t>{};
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::map<std::string, Tensor> values = inputs[i];
    if (model.split == SplitMode::Data) {
      EMBER_RETURN_IF_ERROR(runStage(model.stages[assigned[i]], values, i, run, assigned[i], model.system));
    } else {
      for (size_t s = 0; s < model.stages.size(); ++s)
        EMBER_RETURN_IF_ERROR(runStage(model.stages[s], values, i, run, s, model.system));
    }
    for (const auto& [name, type] : model.outputs) {
      auto value = values.find(name);
      if (value == values.end())
        return makeError("micro-batch ", i, ": no stage produced output '", name, "'");
      run.outputs[i][name] = value->second;
    }
  }
  return run;
}

std::vector<Task> buildTasks(const MultichipModel& model, const MultichipRun& run,
                             const SystemConfig& system) {
  std::vector<Task> tasks;
  std::map<size_t, size_t> lastOnStage;  // stage -> its previous compute task (runs in micro-batch order)
  for (size_t i = 0; i < run.stageCycles.size(); ++i) {
    std::map<size_t, size_t> computeOf;  // stage -> this micro-batch's compute task
    for (const auto& [s, cycles] : run.stageCycles[i]) {
      const CompiledStage& stage = model.stages[s];
      Task compute;
      compute.kind = Task::Kind::Compute;
      compute.microBatch = i;
      compute.chip = stage.chip;
      compute.nanoseconds = nanosecondsOf(system, stage.chip, cycles);
      compute.hostNanoseconds = run.stageHostNs[i].at(s);
      compute.label = stage.name + " #" + std::to_string(i);
      for (const CutTransfer& transfer : model.transfers) {
        if (transfer.toStage != s) continue;
        Task send;
        send.kind = Task::Kind::Transfer;
        send.microBatch = i;
        send.chip = model.stages[transfer.fromStage].chip;
        send.toChip = stage.chip;
        send.bytes = transfer.bytes;
        send.after = {computeOf.at(transfer.fromStage)};
        send.label = transfer.tensor + " #" + std::to_string(i);
        compute.after.push_back(tasks.size());
        tasks.push_back(std::move(send));
      }
      if (auto previous = lastOnStage.find(s); previous != lastOnStage.end())
        compute.after.push_back(previous->second);
      computeOf[s] = lastOnStage[s] = tasks.size();
      tasks.push_back(std::move(compute));
    }
  }
  return tasks;
}

MultichipFigures timeRun(const MultichipModel& model, const MultichipRun& run, const SystemConfig& system) {
  return figuresOf(model, run, system,
                   scheduleTasks(system, buildTasks(model, run, system), run.stageCycles.size()));
}

MultichipFigures figuresOf(const MultichipModel& model, const MultichipRun& run, const SystemConfig& system,
                           Schedule scheduled) {
  MultichipFigures figures;
  const size_t microBatches = run.stageCycles.size();
  figures.schedule = std::move(scheduled);
  const Schedule& schedule = figures.schedule;
  figures.makespanNs = schedule.makespanNs;
  figures.latencyNs = microBatches ? schedule.microBatchEndNs[0] : 0.0;
  const double span = schedule.makespanNs > 0 ? schedule.makespanNs : 1.0;
  figures.throughputPerSecond =
      schedule.makespanNs > 0 ? double(microBatches) * 1e9 / schedule.makespanNs : 0.0;
  // The steady state: one micro-batch per interval of the busiest chip (its
  // programs and its host's partitions, run one after the other) or link direction.
  double bottleneck = 0;
  for (size_t c = 0; c < schedule.chipBusyNs.size(); ++c)
    bottleneck = std::max(bottleneck, schedule.chipBusyNs[c] + schedule.hostBusyNs[c]);
  for (const LinkUse& use : schedule.links) bottleneck = std::max({bottleneck, use.busyNs[0], use.busyNs[1]});
  figures.steadyThroughputPerSecond =
      bottleneck > 0 && microBatches ? double(microBatches) * 1e9 / bottleneck : 0.0;
  std::vector<uint64_t> chipMacs(system.chips.size(), 0);
  for (size_t s = 0; s < model.stages.size(); ++s) chipMacs[model.stages[s].chip] += run.stageMacs[s];
  for (size_t c = 0; c < system.chips.size(); ++c) {
    figures.chipUtilization.push_back(schedule.chipBusyNs[c] / span);
    const npu::NpuConfig& config = system.chips[c].config;
    const double peakMacs = span * config.clockGhz * double(config.rows * config.cols);
    figures.chipMacUtilization.push_back(double(chipMacs[c]) / peakMacs);
  }
  for (const LinkUse& use : schedule.links)
    figures.linkUtilization.push_back(std::max(use.busyNs[0], use.busyNs[1]) / span);
  return figures;
}

namespace {

/// What every chip driver of a co-simulated run shares.
struct CoSimContext {
  MultichipModel& model;
  const SystemConfig& system;
  const std::vector<std::map<std::string, Tensor>>& inputs;
  std::vector<std::vector<size_t>> microBatchesOf;  ///< per stage, in order
  MultichipRun run;
  std::vector<double> microBatchEndNs;
};

std::vector<uint8_t> bytesOf(const Tensor& tensor) {
  const auto* data = static_cast<const uint8_t*>(tensor.data());
  return {data, data + tensor.sizeInBytes()};
}

/// The type under which stage `stage` reads input `name`.
Type inputType(const CompiledStage& stage, const std::string& name) {
  for (const auto& [inputName, type] : stage.model->inputs)
    if (inputName == name) return type;
  return Type();
}

/// Stage `s`'s chip: its micro-batches in order, each waiting for the cut
/// tensors the stage reads, running the stage (its simulations run on this
/// chip) and sending the cut tensors it produces.
Error driveStage(npu::ChipPort& port, CoSimContext& context, size_t s) {
  MultichipModel& model = context.model;
  CompiledStage& stage = model.stages[s];
  const std::vector<CutTransfer>& transfers = model.transfers;
  for (size_t i : context.microBatchesOf[s]) {
    std::map<std::string, Tensor> values = context.inputs[i];
    for (size_t t = 0; t < transfers.size(); ++t) {
      if (transfers[t].toStage != s) continue;
      EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, port.receive(i * transfers.size() + t));
      Tensor tensor(inputType(stage, transfers[t].tensor));
      if (bytes.size() != tensor.sizeInBytes())
        return makeError("stage '", stage.name, "': '", transfers[t].tensor, "' arrived with ", bytes.size(),
                         " bytes, not ", tensor.sizeInBytes());
      std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(tensor.data()));
      values[transfers[t].tensor] = std::move(tensor);
    }
    EMBER_RETURN_IF_ERROR(runStage(stage, values, i, context.run, s, context.system));
    port.hostWork(context.run.stageHostNs[i].at(s));
    for (size_t t = 0; t < transfers.size(); ++t) {
      if (transfers[t].fromStage != s) continue;
      const size_t to = model.stages[transfers[t].toStage].chip;
      EMBER_RETURN_IF_ERROR(port.send(to, route(context.system, stage.chip, to), i * transfers.size() + t,
                                      bytesOf(values.at(transfers[t].tensor))));
    }
    context.microBatchEndNs[i] = std::max(context.microBatchEndNs[i], port.nowNs());
    for (const auto& [name, type] : model.outputs)
      if (auto value = values.find(name); value != values.end()) context.run.outputs[i][name] = value->second;
  }
  return Error::success();
}

npu::CoSimSystemSpec coSimSpecOf(const SystemConfig& system) {
  npu::CoSimSystemSpec spec;
  for (const Chip& chip : system.chips) spec.chips.push_back({chip.name, chip.config.clockGhz});
  for (const Link& link : system.links)
    spec.links.push_back({link.a, link.b, link.bandwidthGBps, link.latencyNs});
  if (system.dram == DramKind::Shared) spec.sharedDramGBps = system.sharedDramGBps;
  return spec;
}

}  // namespace

Expected<CoSimulatedRun> coSimulateMultichip(MultichipModel& model,
                                             const std::vector<std::map<std::string, Tensor>>& inputs,
                                             const SystemConfig& system) {
  CoSimContext context{model, system, inputs, {}, {}, {}};
  context.run.outputs.resize(inputs.size());
  context.run.stageCycles.resize(inputs.size());
  context.run.stageHostNs.resize(inputs.size());
  context.run.stageMacs.assign(model.stages.size(), 0);
  context.microBatchEndNs.assign(inputs.size(), 0.0);
  context.microBatchesOf.resize(model.stages.size());
  const std::vector<size_t> assigned =
      model.split == SplitMode::Data ? assignMicroBatches(model, inputs.size()) : std::vector<size_t>{};
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t s = 0; s < model.stages.size(); ++s)
      if (model.split == SplitMode::Pipeline || assigned[i] == s) context.microBatchesOf[s].push_back(i);
  std::vector<npu::ChipDriver> drivers(system.chips.size(), [](npu::ChipPort&) { return Error::success(); });
  for (size_t s = 0; s < model.stages.size(); ++s)
    drivers[model.stages[s].chip] = [&context, s](npu::ChipPort& port) {
      return driveStage(port, context, s);
    };
  EMBER_ASSIGN_OR_RETURN(npu::CoSimResult result, npu::coSimulate(coSimSpecOf(system), drivers));

  for (size_t i = 0; i < inputs.size(); ++i)
    for (const auto& [name, type] : model.outputs)
      if (!context.run.outputs[i].count(name))
        return makeError("micro-batch ", i, ": no stage produced output '", name, "'");
  Schedule schedule;
  schedule.chipBusyNs = result.chipBusyNs;
  schedule.hostBusyNs = result.chipHostNs;
  for (const npu::CoSimLinkStats& stats : result.links) {
    LinkUse use;
    use.busyNs[0] = stats.busyNs[0];
    use.busyNs[1] = stats.busyNs[1];
    use.bytes[0] = int64_t(stats.bytes[0]);
    use.bytes[1] = int64_t(stats.bytes[1]);
    use.transfers = stats.transfers;
    schedule.links.push_back(use);
  }
  schedule.microBatchEndNs = context.microBatchEndNs;
  for (double end : context.microBatchEndNs) schedule.makespanNs = std::max(schedule.makespanNs, end);
  CoSimulatedRun coSimulated;
  coSimulated.figures = figuresOf(model, context.run, system, std::move(schedule));
  MultichipFigures& figures = coSimulated.figures;
  figures.chipDramStallCycles = result.dramStallCycles;
  figures.chipSharedDramWaitCycles = result.sharedDramWaitCycles;
  figures.sharedDramBusyNs = result.sharedDramBusyNs;
  figures.sharedDramBytes = result.sharedDramBytes;
  if (figures.makespanNs > 0) figures.sharedDramUtilization = result.sharedDramBusyNs / figures.makespanNs;
  // The shared DRAM is one more resource a long stream is bound by.
  if (result.sharedDramBusyNs > 0)
    figures.steadyThroughputPerSecond = std::min(figures.steadyThroughputPerSecond,
                                                 double(inputs.size()) * 1e9 / result.sharedDramBusyNs);
  coSimulated.run = std::move(context.run);
  coSimulated.hostSeconds = result.hostSeconds;
  return coSimulated;
}

SystemConfig withLinks(const SystemConfig& system, double bandwidthGBps, double latencyNs) {
  SystemConfig changed = system;
  for (Link& link : changed.links) {
    link.bandwidthGBps = bandwidthGBps;
    if (latencyNs >= 0) link.latencyNs = latencyNs;
  }
  return changed;
}

}  // namespace ember::multichip
