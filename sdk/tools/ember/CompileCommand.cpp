// ember compile: the whole compile pipeline, then a report; -o writes the
// backend's compiled artefact (the npu backend's bundle).
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string_view>

#include "Commands.h"
#include "ModelIO.h"
#include "Tool.h"
#include "ValueDependentReport.h"

namespace ember::cli {

namespace {

struct CompileArgs {
  PipelineArgs pipeline;
  std::string outputPath, headerPath, reportPath;
  std::vector<std::string> bindings;
  bool quiet = false;
  bool timeReport = false;
};

/// Wall time per phase of the command, printed by --time-report (as
/// -ftime-report does for a C++ compiler): where a slow compile goes.
class PhaseTimes {
 public:
  /// Ends the current phase, named `name`.
  void lap(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    phases_.emplace_back(name, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  void print(std::ostream& out) const {
    double total = 0;
    for (const auto& [name, seconds] : phases_) total += seconds;
    out << "time report (wall seconds):\n";
    for (const auto& [name, seconds] : phases_)
      out << "  " << name << std::string(12 - std::min<size_t>(11, std::string_view(name).size()), ' ')
          << std::fixed << std::setprecision(3) << seconds << "\n";
    out << "  total       " << std::fixed << std::setprecision(3) << total << "\n";
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<const char*, double>> phases_;
};

/// Parses `ember compile`'s arguments into `a`; an exit status when it is done
/// (--help, or a bad argument).
std::optional<int> parseCompileArgs(const std::vector<std::string>& args, CompileArgs& a) {
  OptionParser parser("ember compile", "MODEL.onnx [--backend B] [options]",
                      "Compiles MODEL.onnx for a backend and prints the compile report (time and the\n"
                      "three memory regions).");
  a.pipeline.addTo(parser);
  parser.addString("--output", "OUT", &a.outputPath,
                   "write the compiled artefact (npu: the bundle 'ember sim' runs;\n"
                   "a model with several npu partitions writes OUT, OUT.2, ...)");
  parser.addAlias("-o", "--output");
  parser.addString("--header", "FILE", &a.headerPath,
                   "with -o on the cpu backend: write the AOT bundle's C header to FILE\n"
                   "(default: OUT with the extension .h)");
  parser.addString("--report-json", "FILE", &a.reportPath, "write the report as JSON to FILE");
  parser.addList("--bind", "NAME=FILE.npy", &a.bindings,
                 "compile for this value of model input NAME: it becomes a constant\n"
                 "(shape specialisation, for inputs that decide shapes)");
  parser.addFlag("--quiet", &a.quiet, "print nothing on success");
  parser.addFlag("--time-report", &a.timeReport,
                 "print the wall time of each phase (backend set-up, import, compile, write) to stderr");
  if (auto status = parser.parse(args)) return status;
  return a.pipeline.validate(parser);
}

/// The backend of --backend, told where --header goes.
Expected<std::unique_ptr<Backend>> compileBackend(const CompileArgs& a) {
  if (Error e = loadBackends(a.pipeline.backendPaths)) return e;
  Expected<std::unique_ptr<Backend>> backend = a.pipeline.createBackend();
  if (!backend || a.headerPath.empty()) return backend;
  if (a.outputPath.empty()) return makeError("--header needs -o OUT");
  if (Error e = (*backend)->setOption("header", a.headerPath))
    return e.withContext("--header (backend '" + (*backend)->name() + "')");
  return backend;
}

/// What `ember compile` prints on success: the signature, the bound inputs,
/// value-dependent shapes and the compile report.
void printCompileSummary(const CompileArgs& a, const std::string& backendName, const CompiledModel& model,
                         const Function& imported, const std::vector<std::string>& boundNames,
                         const DeviceReport* device) {
  std::cout << "inputs:      ";
  for (const auto& [name, type] : model.inputs) std::cout << " " << name << " " << type.str();
  std::cout << "\noutputs:     ";
  for (const auto& [name, type] : model.outputs) std::cout << " " << name << " " << type.str();
  std::cout << "\n";
  printBoundInputs(std::cout, boundNames, a.pipeline.importOptions.boundInputs);
  printValueDependentWarnings(std::cout, imported);
  printReport(std::cout, backendName, model.report, std::nullopt, 1, device);
  if (!a.outputPath.empty()) std::cout << "wrote:        " << a.outputPath << "\n";
}

}  // namespace

int compileCommand(const std::vector<std::string>& args) {
  CompileArgs a;
  PhaseTimes times;
  if (auto status = parseCompileArgs(args, a)) return *status;
  PipelineArgs& pipeline = a.pipeline;
  Expected<std::unique_ptr<Backend>> backend = compileBackend(a);
  if (!backend) return fail(backend.error());
  const std::string backendName = (*backend)->name();

  Expected<std::map<std::string, Tensor>> bound = readNamedInputs(a.bindings);
  if (!bound) return fail(bound.error().withContext("--bind"));
  pipeline.importOptions.boundInputs = bound.take();
  times.lap("set-up");
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(pipeline.nameMemoryLimit(loaded.error()));
  times.lap("import");
  const std::vector<std::string> boundNames =
      boundInputNames(pipeline.importOptions.boundInputs, *loaded->function);
  Expected<CompiledModel> model =
      compileFunction(*loaded->function, backend.take(), pipeline.compileOptions());
  if (!model) return fail(pipeline.nameMemoryLimit(model.error()).withContext(pipeline.model));
  times.lap("compile");

  if (!a.outputPath.empty()) {
    if (Error e = model->function->writeArtifact(a.outputPath))
      return fail(e.withContext("-o " + a.outputPath + " (backend '" + backendName + "')"));
    times.lap("write");
  }
  // Before a run, an accelerator's report holds the compile-time figures.
  const DeviceReport* device = model->report.device.layers.empty() ? nullptr : &model->report.device;
  if (!a.reportPath.empty()) {
    const ImportNotes notes = importNotes(boundNames, pipeline.importOptions.boundInputs, *loaded->function);
    if (Error e = writeTextFile(a.reportPath, reportJson(backendName, model->report, std::nullopt, 1, 1,
                                                         pipeline.quantizationReport.get(), device, &notes)))
      return fail(e);
  }
  if (!a.quiet) printCompileSummary(a, backendName, *model, *loaded->function, boundNames, device);
  times.lap("report");
  if (a.timeReport) times.print(std::cerr);
  return kExitSuccess;
}

}  // namespace ember::cli
