// ember run: import, compile, bind inputs, execute (with warm-up and
// --repeat), write outputs and report.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "Commands.h"
#include "EndToEndLatency.h"
#include "ModelIO.h"
#include "Tool.h"
#include "ValueDependentReport.h"
#include "ember/npu/Simulator.h"

namespace ember::cli {

namespace {

struct RunArgs {
  PipelineArgs pipeline;
  InputArgs inputArgs;
  std::string outputDir, reportPath, tracePath;
  int64_t threads = 1, repeat = 1, maxCycles = 0;
  bool quiet = false;
  HostLinkOptions hostLink;
  HostModelOptions hostModel;
};

void addRunOptions(OptionParser& parser, RunArgs& a) {
  a.pipeline.addTo(parser);
  parser.addList("--input", "NAME=FILE.npy", &a.inputArgs.inputs,
                 "value of model input NAME (FILE.npy alone for a one-input model)");
  parser.addFlag("--random-inputs", &a.inputArgs.randomInputs,
                 "fill inputs without --input with random data");
  parser.addInt("--seed", "N", &a.inputArgs.seed, "seed of --random-inputs (default: 0)");
  parser.addString("--output-dir", "DIR", &a.outputDir, "write each output to DIR/<name>.npy");
  parser.addInt("--threads", "N", &a.threads, "worker threads of the cpu backend (default: 1)", 1, 1024);
  parser.addInt("--repeat", "N", &a.repeat, "time N runs after one warm-up run; report the median", 1,
                1000000);
  parser.addString("--report-json", "FILE", &a.reportPath, "write the report as JSON to FILE");
  parser.addString("--trace", "FILE.json", &a.tracePath,
                   "write the accelerator's timeline of the last run (Chrome trace-event JSON, Perfetto)");
  parser.addFlag("--quiet", &a.quiet, "print nothing on success");
  parser.addInt("--max-cycles", "N", &a.maxCycles,
                "npu: stop with an error once a simulated run passes N cycles (default: no limit)", 1);
  a.hostLink.addTo(parser);
  a.hostModel.addTo(parser);
}

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// The wall time of each timed run, and the host's share of it (what the
/// simulator did not take; docs/cli.md, "End-to-end latency").
struct RunTimes {
  std::vector<double> wall, host;
};

/// One warm-up run when repeating, then `repeat` timed runs.
Expected<RunTimes> timeRuns(const RunArgs& a, Device& device, const std::string& id,
                            ExecutionContext& context, const CompiledModel& model) {
  auto runOnce = [&]() -> Expected<double> {
    auto start = std::chrono::steady_clock::now();
    if (Error e = device.run(id, context))
      return e.withContext(a.maxCycles ? a.pipeline.model + ": --max-cycles " + std::to_string(a.maxCycles)
                                       : a.pipeline.model);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (a.repeat > 1) EMBER_RETURN_IF_ERROR(runOnce().error());
  RunTimes times;
  for (int64_t i = 0; i < a.repeat; ++i) {
    EMBER_ASSIGN_OR_RETURN(double seconds, runOnce());
    times.wall.push_back(seconds);
    const DeviceReport* simulated = model.function->deviceReport();
    times.host.push_back(seconds - (simulated ? simulated->hostSeconds : 0.0));
  }
  return times;
}

/// The end-to-end latency of a simulated run (measured or modelled host time
/// plus host-link transfers), or nothing when the device reports no cycles.
std::optional<EndToEndLatency> endToEndOf(const RunArgs& a, const CompiledModel& model,
                                          const std::string& backendName, const RunTimes& times) {
  const DeviceReport* deviceReport = model.function->deviceReport();
  if (!deviceReport || deviceReport->cycles <= 0) return std::nullopt;
  const RunStatistics* runStats = lastRunStatistics(*model.function);
  return a.hostModel.enabled
             ? modelledEndToEndLatency(*deviceReport, runStats,
                                       modelledHostSeconds(model, backendName, a.hostModel), a.hostLink)
             : endToEndLatency(*deviceReport, runStats, medianOf(times.host), a.hostLink);
}

/// The summary on stdout: each output, bound inputs, warnings, the report,
/// transfers between partitions and the end-to-end latency.
int printRun(const RunArgs& a, const Function& function, const CompiledModel& model,
             const DeviceReport* deviceReport, const std::string& backendName,
             const Signature& outputSignature, const ExecutionContext& context,
             const std::vector<std::string>& written, const std::vector<std::string>& bound, double median,
             const std::optional<EndToEndLatency>& endToEnd) {
  if (Error e = printOutputs(std::cout, outputSignature, context, written)) return fail(e);
  printBoundInputs(std::cout, bound, a.pipeline.importOptions.inputValues);
  printValueDependentWarnings(std::cout, function);
  printReport(std::cout, backendName, model.report, median, a.repeat, deviceReport);
  // Partitioned models: how the tensors between partitions travelled (docs/backend-guide.md, "Device
  // model").
  const RunStatistics* stats = lastRunStatistics(*model.function);
  if (stats && stats->partitions > 1)
    std::cout << "transfers:    " << stats->hostTransfers << " through the host (" << stats->hostTransferBytes
              << " B), " << stats->deviceHandoffs << " kept on a device, between " << stats->partitions
              << " partitions\n";
  if (endToEnd) printEndToEndLatency(std::cout, *endToEnd);
  return kExitSuccess;
}

/// Parses and checks the options; a status when `ember run` ends here (--help,
/// a usage error, an output directory that cannot be made).
std::optional<int> parseRunArgs(const std::vector<std::string>& args, RunArgs& a) {
  OptionParser parser("ember run", "MODEL.onnx [options]",
                      "Compiles MODEL.onnx for a backend, runs it on the given inputs, prints a summary of\n"
                      "each output and a report, and optionally writes outputs and a JSON report.");
  addRunOptions(parser, a);
  if (auto status = parser.parse(args)) return status;
  if (auto status = a.pipeline.validate(parser)) return status;
  if (a.maxCycles && a.pipeline.backend != "npu")
    return parser.usageError("--max-cycles needs a simulated backend (--backend npu), not '" +
                             a.pipeline.backend + "'");
  if (!a.outputDir.empty()) {
    // Fail before the work, not after it.
    std::error_code ec;
    std::filesystem::create_directories(a.outputDir, ec);
    if (ec) return fail(a.outputDir + ": cannot create output directory: " + ec.message());
  }
  return std::nullopt;
}

/// Imports the model with the given inputs that decide shapes bound into it
/// (shape specialisation); `bound` names those, and they are no longer fed.
Expected<LoadedModel> importForRun(RunArgs& a, std::vector<std::string>& bound) {
  PipelineArgs& pipeline = a.pipeline;
  Expected<std::map<std::string, Tensor>> given = readNamedInputs(a.inputArgs.inputs);
  if (!given) return given.error();
  pipeline.importOptions.inputValues = given.take();
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return pipeline.nameMemoryLimit(loaded.error());
  bound = boundInputNames(pipeline.importOptions.inputValues, *loaded->function);
  std::erase_if(a.inputArgs.inputs, [&bound](const std::string& spec) {
    return std::find(bound.begin(), bound.end(), spec.substr(0, spec.find('='))) != bound.end();
  });
  return loaded;
}

/// What the timed runs measured.
struct RunMeasurement {
  double median = 0;
  std::optional<EndToEndLatency> endToEnd;
};

/// Loads the model on a device, runs it --repeat times, writes --trace.
Expected<RunMeasurement> runOnDevice(const RunArgs& a, const CompiledModel& model,
                                     const std::string& backendName, ExecutionContext& context) {
  const std::string& modelPath = a.pipeline.model;
  std::unique_ptr<Device> device = model.createDevice();
  const std::string id = "main";
  if (Error e = device->load(id, model.function)) return e.withContext(modelPath);
  Expected<RunTimes> times = timeRuns(a, *device, id, context, model);
  if (!times) return times.error();
  RunMeasurement measured{medianOf(times->wall), endToEndOf(a, model, backendName, *times)};
  if (!a.tracePath.empty()) {
    if (Error e = model.function->writeTrace(a.tracePath)) return e.withContext("--trace");
    if (measured.endToEnd)
      if (Error e = appendEndToEndTrace(a.tracePath, *measured.endToEnd)) return e.withContext("--trace");
  }
  if (Error e = device->unload(id)) return e.withContext(modelPath);
  return measured;
}

/// --report-json: the compile and run report with the import notes.
Error writeRunReport(const RunArgs& a, const Function& function, const CompiledModel& model,
                     const std::string& backendName, const std::vector<std::string>& bound,
                     const RunMeasurement& measured) {
  const ImportNotes notes = importNotes(bound, a.pipeline.importOptions.inputValues, function);
  std::function<void(JsonWriter&)> moreKeys;
  if (measured.endToEnd) moreKeys = [&](JsonWriter& json) { writeEndToEndLatency(json, *measured.endToEnd); };
  const std::string json =
      reportJson(backendName, model.report, measured.median, a.repeat, a.threads,
                 a.pipeline.quantizationReport.get(), model.function->deviceReport(), &notes, moreKeys);
  return writeTextFile(a.reportPath, json);
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  RunArgs a;
  PipelineArgs& pipeline = a.pipeline;
  if (auto status = parseRunArgs(args, a)) return *status;
  // The npu device passes the simulator no options: the budget rides on this thread.
  const npu::ScopedCycleBudget cycleBudget(static_cast<uint64_t>(a.maxCycles));
  if (Error e = loadBackends(pipeline.backendPaths)) return fail(e);
  // The backend contract has no options channel yet; multi-threaded backends
  // read EMBER_THREADS (docs/backends/cpu.md), so --threads sets it.
  ::setenv("EMBER_THREADS", std::to_string(a.threads).c_str(), 1);
  Expected<std::unique_ptr<Backend>> backend = pipeline.createBackend();
  if (!backend) return fail(backend.error());
  const std::string backendName = (*backend)->name();

  std::vector<std::string> bound;
  Expected<LoadedModel> loaded = importForRun(a, bound);
  if (!loaded) return fail(loaded.error());
  Function& function = *loaded->function;

  // Inputs are read before compiling, so that a bad input fails fast.
  Signature inputSignature, outputSignature;
  for (const Node* in : function.inputs()) inputSignature.push_back({in->name(), in->resultType()});
  for (const auto& [name, value] : function.outputs()) outputSignature.push_back({name, value.type()});
  ExecutionContext context;
  if (Error e = prepareInputs(inputSignature, a.inputArgs, context)) return fail(e);

  Expected<CompiledModel> model = compileFunction(function, backend.take(), pipeline.compileOptions());
  if (!model) return fail(pipeline.nameMemoryLimit(model.error()).withContext(pipeline.model));
  if (Error e = checkInputs(*model, context)) return fail(e.withContext(pipeline.model));
  Expected<RunMeasurement> measured = runOnDevice(a, *model, backendName, context);
  if (!measured) return fail(measured.error());

  Expected<std::vector<std::string>> written = writeOutputs(a.outputDir, outputSignature, context);
  if (!written) return fail(written.error());
  if (!a.reportPath.empty())
    if (Error e = writeRunReport(a, function, *model, backendName, bound, *measured)) return fail(e);
  if (a.quiet) return kExitSuccess;
  return printRun(a, function, *model, model->function->deviceReport(), backendName, outputSignature, context,
                  *written, bound, measured->median, measured->endToEnd);
}

}  // namespace ember::cli
