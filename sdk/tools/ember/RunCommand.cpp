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

int runCommand(const std::vector<std::string>& args) {
  PipelineArgs pipeline;
  InputArgs inputArgs;
  std::string outputDir, reportPath, tracePath;
  int64_t threads = 1, repeat = 1, maxCycles = 0;
  bool quiet = false;
  HostLinkOptions hostLink;
  HostModelOptions hostModel;

  OptionParser parser("ember run", "MODEL.onnx [options]",
                      "Compiles MODEL.onnx for a backend, runs it on the given inputs, prints a summary of\n"
                      "each output and a report, and optionally writes outputs and a JSON report.");
  pipeline.addTo(parser);
  parser.addList("--input", "NAME=FILE.npy", &inputArgs.inputs,
                 "value of model input NAME (FILE.npy alone for a one-input model)");
  parser.addFlag("--random-inputs", &inputArgs.randomInputs, "fill inputs without --input with random data");
  parser.addInt("--seed", "N", &inputArgs.seed, "seed of --random-inputs (default: 0)");
  parser.addString("--output-dir", "DIR", &outputDir, "write each output to DIR/<name>.npy");
  parser.addInt("--threads", "N", &threads, "worker threads of the cpu backend (default: 1)", 1, 1024);
  parser.addInt("--repeat", "N", &repeat, "time N runs after one warm-up run; report the median", 1, 1000000);
  parser.addString("--report-json", "FILE", &reportPath, "write the report as JSON to FILE");
  parser.addString("--trace", "FILE.json", &tracePath,
                   "write the accelerator's timeline of the last run (Chrome trace-event JSON, Perfetto)");
  parser.addFlag("--quiet", &quiet, "print nothing on success");
  parser.addInt("--max-cycles", "N", &maxCycles,
                "npu: stop with an error once a simulated run passes N cycles (default: no limit)", 1);
  hostLink.addTo(parser);
  hostModel.addTo(parser);
  if (auto status = parser.parse(args)) return *status;
  if (auto status = pipeline.validate(parser)) return *status;
  if (maxCycles && pipeline.backend != "npu")
    return parser.usageError("--max-cycles needs a simulated backend (--backend npu), not '" +
                             pipeline.backend + "'");
  // The npu device passes the simulator no options: the budget rides on this thread.
  const npu::ScopedCycleBudget cycleBudget(static_cast<uint64_t>(maxCycles));

  if (!outputDir.empty()) {
    // Fail before the work, not after it.
    std::error_code ec;
    std::filesystem::create_directories(outputDir, ec);
    if (ec) return fail(outputDir + ": cannot create output directory: " + ec.message());
  }
  if (Error e = loadBackends(pipeline.backendPaths)) return fail(e);
  // The backend contract has no options channel yet; multi-threaded backends
  // read EMBER_THREADS (docs/backends/cpu.md), so --threads sets it.
  ::setenv("EMBER_THREADS", std::to_string(threads).c_str(), 1);
  Expected<std::unique_ptr<Backend>> backend = pipeline.createBackend();
  if (!backend) return fail(backend.error());
  std::string backendName = (*backend)->name();

  // Shape specialisation: the importer binds given inputs that decide shapes.
  Expected<std::map<std::string, Tensor>> given = readNamedInputs(inputArgs.inputs);
  if (!given) return fail(given.error());
  pipeline.importOptions.inputValues = given.take();
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(pipeline.nameMemoryLimit(loaded.error()));
  Function& function = *loaded->function;
  const std::vector<std::string> bound = boundInputNames(pipeline.importOptions.inputValues, function);
  std::erase_if(inputArgs.inputs, [&bound](const std::string& spec) {
    return std::find(bound.begin(), bound.end(), spec.substr(0, spec.find('='))) != bound.end();
  });

  // Inputs are read before compiling, so that a bad input fails fast.
  Signature inputSignature, outputSignature;
  for (const Node* in : function.inputs()) inputSignature.push_back({in->name(), in->resultType()});
  for (const auto& [name, value] : function.outputs()) outputSignature.push_back({name, value.type()});
  ExecutionContext context;
  if (Error e = prepareInputs(inputSignature, inputArgs, context)) return fail(e);

  Expected<CompiledModel> model = compileFunction(function, backend.take(), pipeline.compileOptions());
  if (!model) return fail(pipeline.nameMemoryLimit(model.error()).withContext(pipeline.model));
  if (Error e = checkInputs(*model, context)) return fail(e.withContext(pipeline.model));

  std::unique_ptr<Device> device = model->createDevice();
  const std::string id = "main";
  if (Error e = device->load(id, model->function)) return fail(e.withContext(pipeline.model));
  auto runOnce = [&]() -> Expected<double> {
    auto start = std::chrono::steady_clock::now();
    if (Error e = device->run(id, context))
      return e.withContext(maxCycles ? pipeline.model + ": --max-cycles " + std::to_string(maxCycles)
                                     : pipeline.model);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (repeat > 1) {
    Expected<double> warmUp = runOnce();
    if (!warmUp) return fail(warmUp.error());
  }
  std::vector<double> times, hostTimes;
  for (int64_t i = 0; i < repeat; ++i) {
    Expected<double> seconds = runOnce();
    if (!seconds) return fail(seconds.error());
    times.push_back(*seconds);
    // The host's share of the run: what the simulator did not take (docs/cli.md, "End-to-end latency").
    const DeviceReport* simulated = model->function->deviceReport();
    hostTimes.push_back(*seconds - (simulated ? simulated->hostSeconds : 0.0));
  }
  std::sort(times.begin(), times.end());
  double median = times.size() % 2 ? times[times.size() / 2]
                                   : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  const DeviceReport* deviceReport = model->function->deviceReport();
  std::optional<EndToEndLatency> endToEnd;
  if (deviceReport && deviceReport->cycles > 0) {
    std::sort(hostTimes.begin(), hostTimes.end());
    const double hostMedian =
        hostTimes.size() % 2 ? hostTimes[hostTimes.size() / 2]
                             : 0.5 * (hostTimes[hostTimes.size() / 2 - 1] + hostTimes[hostTimes.size() / 2]);
    const RunStatistics* runStats = lastRunStatistics(*model->function);
    endToEnd = hostModel.enabled
                   ? modelledEndToEndLatency(*deviceReport, runStats,
                                             modelledHostSeconds(*model, backendName, hostModel), hostLink)
                   : endToEndLatency(*deviceReport, runStats, hostMedian, hostLink);
  }
  if (!tracePath.empty()) {
    if (Error e = model->function->writeTrace(tracePath)) return fail(e.withContext("--trace"));
    if (endToEnd)
      if (Error e = appendEndToEndTrace(tracePath, *endToEnd)) return fail(e.withContext("--trace"));
  }
  if (Error e = device->unload(id)) return fail(e.withContext(pipeline.model));

  std::vector<std::string> written;
  if (!outputDir.empty()) {
    Expected<std::vector<std::string>> paths = writeOutputs(outputDir, outputSignature, context);
    if (!paths) return fail(paths.error());
    written = paths.take();
  }
  if (!reportPath.empty()) {
    const ImportNotes notes = importNotes(bound, pipeline.importOptions.inputValues, function);
    std::function<void(JsonWriter&)> moreKeys;
    if (endToEnd) moreKeys = [&](JsonWriter& json) { writeEndToEndLatency(json, *endToEnd); };
    const std::string json = reportJson(backendName, model->report, median, repeat, threads,
                                        pipeline.quantizationReport.get(), deviceReport, &notes, moreKeys);
    if (Error e = writeTextFile(reportPath, json)) return fail(e);
  }

  if (!quiet) {
    for (size_t i = 0; i < outputSignature.size(); ++i) {
      const std::string& name = outputSignature[i].first;
      const Tensor* tensor = context.output(name);
      if (!tensor) return fail("the backend produced no output '" + name + "'");
      std::cout << "output ";
      printTensorSummary(std::cout, name, *tensor);
      if (i < written.size()) std::cout << "  written to " << written[i] << "\n";
    }
    printBoundInputs(std::cout, bound, pipeline.importOptions.inputValues);
    printValueDependentWarnings(std::cout, function);
    printReport(std::cout, backendName, model->report, median, repeat, deviceReport);
    // Partitioned models: how the tensors between partitions travelled (docs/backend-guide.md, "Device
    // model").
    const RunStatistics* stats = lastRunStatistics(*model->function);
    if (stats && stats->partitions > 1)
      std::cout << "transfers:    " << stats->hostTransfers << " through the host ("
                << stats->hostTransferBytes << " B), " << stats->deviceHandoffs
                << " kept on a device, between " << stats->partitions << " partitions\n";
    if (endToEnd) printEndToEndLatency(std::cout, *endToEnd);
  }
  return kExitSuccess;
}

}  // namespace ember::cli
