// ember multichip: a model split over the chips of a multi-NPU system
// (docs/multichip.md): pipeline stages or data parallelism over a batch of
// micro-batches, the chips and links co-simulated in one SystemC elaboration
// (or, with --schedule-only, each stage simulated on its own and the chips
// and links timed by the event schedule); outputs as the one-chip run writes them.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "Commands.h"
#include "ModelIO.h"
#include "MultichipReport.h"
#include "Tool.h"
#include "ember/multichip/MultichipModel.h"
#include "ember/multichip/SystemConfig.h"
#include "ember/npu/CoSimulation.h"

namespace ember::cli {
namespace {

using multichip::MultichipModel;

/// `type` with its leading dimension multiplied by `factor` (a batch of micro-batches).
Expected<Type> batched(const std::string& name, const Type& type, int64_t factor) {
  if (factor == 1) return type;
  if (type.dims.empty())
    return makeError("input or output '", name, "' is a scalar: it cannot be batched (--batch 1 only)");
  Dims dims = type.dims;
  dims[0] *= factor;
  return type.withDims(dims);
}

Expected<std::vector<double>> parseBandwidths(const std::string& list) {
  std::vector<double> values;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    char* stop = nullptr;
    const double value = std::strtod(item.c_str(), &stop);
    if (item.empty() || *stop != '\0' || !(value > 0))
      return makeError("--sweep-link-bandwidth: '", item, "' is not a positive number of GB/s");
    values.push_back(value);
    start = end + 1;
  }
  return values;
}

/// Micro-batch i of `tensor` (its leading dimension `count` micro-batches long).
Tensor sliceOf(const Tensor& tensor, const Type& microType, size_t i) {
  Tensor slice(microType);
  const size_t bytes = microType.sizeInBytes();
  std::memcpy(slice.data(), static_cast<const std::byte*>(tensor.data()) + i * bytes, bytes);
  return slice;
}

/// What the command line asks for.
struct MultichipArgs {
  PipelineArgs pipeline;
  InputArgs inputArgs;
  std::string systemPath, split = "pipeline", outputDir, reportPath, sweepList;
  int64_t batch = 1;
  bool quiet = false;
  bool scheduleOnly = false;
  bool untimedHost = false;
  std::optional<double> hostMacsPerSecond, hostGbps, hostLinkGbps, hostLinkUs;  ///< over the system's host:
  std::vector<double> sweep;  ///< parsed from sweepList by validateMultichipArgs
};

void addMultichipOptions(OptionParser& parser, MultichipArgs& a) {
  a.pipeline.addTo(parser);
  parser.addString("--system", "SYSTEM.yaml", &a.systemPath,
                   "the multi-chip system: chips, links, DRAM (e.g. multichip/configs/ring4-npu16.yaml)");
  parser.addString("--split", "pipeline|data", &a.split,
                   "pipeline: one stage per chip; data: the whole model on every chip (default: pipeline)");
  parser.addInt("--batch", "N", &a.batch,
                "micro-batches to run, stacked along each input's axis 0 (default: 1)", 1, 1 << 20);
  parser.addList(
      "--input", "NAME=FILE.npy", &a.inputArgs.inputs,
      "the batch of input NAME (FILE.npy alone for a one-input model); axis 0 is --batch times the\n"
      "model's");
  parser.addFlag("--random-inputs", &a.inputArgs.randomInputs,
                 "fill inputs without --input with random data");
  parser.addInt("--seed", "N", &a.inputArgs.seed, "seed of --random-inputs (default: 0)");
  parser.addString("--output-dir", "DIR", &a.outputDir,
                   "write each output (the whole batch) to DIR/<name>.npy");
  parser.addString("--report-json", "FILE", &a.reportPath, "write the report as JSON to FILE");
  parser.addString("--sweep-link-bandwidth", "GBPS,...", &a.sweepList,
                   "also run (co-simulate, or retime with --schedule-only) with every link at each of\n"
                   "these bandwidths (GB/s)");
  parser.addFlag("--schedule-only", &a.scheduleOnly,
                 "simulate each stage on its own and time the chips and links with the event schedule\n"
                 "instead of co-simulating them (faster link sweeps; same outputs)");
  parser.addNonNegativeNumber("--host-macs-per-s", "N", &a.hostMacsPerSecond,
                              "each chip's host: MACs per second (default: host.macs_per_s, else 50e9)");
  parser.addNonNegativeNumber("--host-gbps", "GB/s", &a.hostGbps,
                              "each chip's host: memory bandwidth (default: host.gbps, else 20)");
  parser.addNonNegativeNumber("--host-link-gbps", "GB/s", &a.hostLinkGbps,
                              "host link between a chip and its host (default: host.link_gb_per_s, else 12)");
  parser.addNonNegativeNumber(
      "--host-link-us", "US", &a.hostLinkUs,
      "set-up time of each host-link transfer (default: host.link_latency_us, else 2)");
  parser.addFlag("--untimed-host", &a.untimedHost,
                 "host partitions and host-link transfers take no simulated time (host.timed: false)");
  parser.addFlag("--quiet", &a.quiet, "print nothing on success");
}

/// The command line's host options over the system's `host:` section.
void applyHostOptions(const MultichipArgs& a, multichip::SystemConfig& system) {
  HostModel& host = system.host;
  host.macsPerSecond = a.hostMacsPerSecond.value_or(host.macsPerSecond);
  host.memoryGbps = a.hostGbps.value_or(host.memoryGbps);
  host.linkGbps = a.hostLinkGbps.value_or(host.linkGbps);
  host.linkLatencyUs = a.hostLinkUs.value_or(host.linkLatencyUs);
  if (a.untimedHost) system.hostTimed = false;
}

/// Checks what the parser cannot and creates --output-dir; an exit status on failure.
std::optional<int> validateMultichipArgs(const OptionParser& parser, MultichipArgs& a) {
  if (auto status = a.pipeline.validate(parser)) return *status;
  if (a.pipeline.backend != "npu")
    return parser.usageError("--backend must be npu (the system's chips are NPUs), not '" +
                             a.pipeline.backend + "'");
  if (!a.pipeline.config.empty())
    return parser.usageError("--config: each chip's NPU config comes from --system");
  if (a.systemPath.empty()) return parser.usageError("--system SYSTEM.yaml is required");
  if (a.split != "pipeline" && a.split != "data")
    return parser.usageError("--split must be pipeline or data, not '" + a.split + "'");
  if (!a.sweepList.empty()) {
    Expected<std::vector<double>> parsed = parseBandwidths(a.sweepList);
    if (!parsed) return parser.usageError(parsed.error().message());
    a.sweep = parsed.take();
  }
  if (!a.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.outputDir, ec);
    if (ec) return fail(a.outputDir + ": cannot create output directory: " + ec.message());
  }
  return std::nullopt;
}

/// The model's inputs with their leading dimension `batch` times as long.
Expected<Signature> batchedInputs(const Function& function, int64_t batch) {
  Signature batchInputs;
  for (const Node* in : function.inputs()) {
    Expected<Type> type = batched(in->name(), in->resultType(), batch);
    if (!type) return type.error();
    batchInputs.push_back({in->name(), *type});
  }
  return batchInputs;
}

/// The batch's outputs: the micro-batches' along axis 0, stored in `outputs`.
Expected<Signature> gatherBatchOutputs(const MultichipModel& model, const multichip::MultichipRun& run,
                                       int64_t batch, ExecutionContext& outputs) {
  Signature batchOutputs;
  for (const auto& [name, type] : model.outputs) {
    Expected<Type> whole = batched(name, type, batch);
    if (!whole) return whole.error();
    batchOutputs.push_back({name, *whole});
    Tensor tensor(*whole);
    const size_t bytes = type.sizeInBytes();
    for (size_t i = 0; i < size_t(batch); ++i)
      std::memcpy(static_cast<std::byte*>(tensor.data()) + i * bytes, run.outputs[i].at(name).data(), bytes);
    outputs.setOutput(name, std::move(tensor));
  }
  return batchOutputs;
}

/// Runs the micro-batches and times them: co-simulated (the event schedule of
/// the same stage cycles kept as the cross-check), or with --schedule-only
/// simulated stage by stage and scheduled; then each swept link bandwidth.
Expected<MultichipSummary> runAndTime(const MultichipArgs& a, MultichipModel& model,
                                      const std::vector<std::map<std::string, Tensor>>& microBatches,
                                      multichip::MultichipRun& run) {
  MultichipSummary summary;
  summary.model = &model;
  summary.run = &run;
  summary.coSimulated = !a.scheduleOnly;
  const Type& firstInput = model.inputs.empty() ? Type() : model.inputs.front().second;
  summary.imagesPerMicroBatch = firstInput.dims.empty() ? 1 : firstInput.dims.front();
  if (a.scheduleOnly) {
    EMBER_ASSIGN_OR_RETURN(run, multichip::runMultichip(model, microBatches));
    summary.figures = multichip::timeRun(model, run, model.system);
    for (double bandwidth : a.sweep)
      summary.sweep.push_back(
          {bandwidth, multichip::timeRun(model, run, multichip::withLinks(model.system, bandwidth))});
    return summary;
  }
  EMBER_ASSIGN_OR_RETURN(multichip::CoSimulatedRun coSimulated,
                         multichip::coSimulateMultichip(model, microBatches, model.system));
  run = std::move(coSimulated.run);
  summary.figures = std::move(coSimulated.figures);
  summary.scheduleEstimate = multichip::timeRun(model, run, model.system);
  summary.coSimulationHostSeconds = coSimulated.hostSeconds;
  for (double bandwidth : a.sweep) {
    EMBER_ASSIGN_OR_RETURN(
        multichip::CoSimulatedRun point,
        multichip::coSimulateMultichip(model, microBatches, multichip::withLinks(model.system, bandwidth)));
    summary.sweep.push_back({bandwidth, std::move(point.figures)});
  }
  return summary;
}

/// Writes --output-dir and --report-json and prints the outputs and the report.
int writeResults(const MultichipArgs& a, const Signature& batchOutputs, const ExecutionContext& outputs,
                 const MultichipSummary& summary) {
  Expected<std::vector<std::string>> written = writeOutputs(a.outputDir, batchOutputs, outputs);
  if (!written) return fail(written.error());
  if (!a.reportPath.empty()) {
    JsonWriter json;
    json.beginObject();
    writeMultichipJson(json, summary);
    json.endObject();
    if (Error e = writeTextFile(a.reportPath, json.str())) return fail(e);
  }
  if (!a.quiet) {
    if (Error e = printOutputs(std::cout, batchOutputs, outputs, *written)) return fail(e);
    printMultichipReport(std::cout, summary);
  }
  return kExitSuccess;
}

}  // namespace

int multichipCommand(const std::vector<std::string>& args) {
  const auto started = std::chrono::steady_clock::now();
  MultichipArgs a;
  a.pipeline.backend = "npu";
  OptionParser parser(
      "ember multichip", "MODEL.onnx --system SYSTEM.yaml [options]",
      "Splits MODEL.onnx over the NPUs of a multi-chip system (docs/multichip.md): pipeline\n"
      "stages balanced by the compiler's cycle estimates, or data parallelism over the batch.\n"
      "Runs --batch micro-batches (each the model's own input shape) through the chips on the\n"
      "simulator, times chips and links together and prints latency, throughput and per-chip\n"
      "and per-link utilisation. Outputs are the one-chip run's, the batch along axis 0.");
  addMultichipOptions(parser, a);
  if (auto status = parser.parse(args)) return *status;
  if (auto status = validateMultichipArgs(parser, a)) return *status;

  Expected<multichip::SystemConfig> system = multichip::loadSystemConfig(a.systemPath);
  if (!system) return fail(system.error());
  applyHostOptions(a, *system);
  // Before any simulation: the process elaborates its chips once (docs/multichip.md).
  if (!a.scheduleOnly)
    if (Error e = npu::reserveCoSimulatedChips(system->chips.size()))
      return fail(e.withContext(a.systemPath));
  if (Error e = loadBackends(a.pipeline.backendPaths)) return fail(e);
  Expected<LoadedModel> loaded = importModel(a.pipeline);
  if (!loaded) return fail(loaded.error());
  Function& function = *loaded->function;

  // The batch's inputs, read (or drawn) whole and checked, then cut into micro-batches.
  Expected<Signature> batchInputs = batchedInputs(function, a.batch);
  if (!batchInputs) return fail(batchInputs.error());
  ExecutionContext given;
  if (Error e = prepareInputs(*batchInputs, a.inputArgs, given)) return fail(e);

  multichip::MultichipOptions options;
  options.split = a.split == "pipeline" ? multichip::SplitMode::Pipeline : multichip::SplitMode::Data;
  options.compile = a.pipeline.compileOptions();
  Expected<MultichipModel> model = multichip::compileMultichip(function, *system, options);
  if (!model) return fail(model.error().withContext(a.pipeline.model));

  std::vector<std::map<std::string, Tensor>> microBatches(static_cast<size_t>(a.batch));
  for (const auto& [name, type] : model->inputs)
    for (size_t i = 0; i < size_t(a.batch); ++i) microBatches[i][name] = sliceOf(*given.input(name), type, i);
  multichip::MultichipRun run;
  Expected<MultichipSummary> summary = runAndTime(a, *model, microBatches, run);
  if (!summary) return fail(summary.error().withContext(a.pipeline.model));

  ExecutionContext outputs;
  Expected<Signature> batchOutputs = gatherBatchOutputs(*model, run, a.batch, outputs);
  if (!batchOutputs) return fail(batchOutputs.error());
  summary->hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return writeResults(a, *batchOutputs, outputs, *summary);
}

}  // namespace ember::cli
