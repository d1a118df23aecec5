// ember compile: the whole compile pipeline, then a report; -o writes the
// backend's compiled artefact (the npu backend's bundle).
#include <iostream>

#include "Commands.h"
#include "ModelIO.h"
#include "Tool.h"
#include "ValueDependentReport.h"

namespace ember::cli {

int compileCommand(const std::vector<std::string>& args) {
  PipelineArgs pipeline;
  std::string outputPath, headerPath, reportPath;
  std::vector<std::string> bindings;
  bool quiet = false;

  OptionParser parser("ember compile", "MODEL.onnx [--backend B] [options]",
                      "Compiles MODEL.onnx for a backend and prints the compile report (time and the\n"
                      "three memory regions).");
  pipeline.addTo(parser);
  parser.addString("--output", "OUT", &outputPath,
                   "write the compiled artefact (npu: the bundle 'ember sim' runs;\n"
                   "a model with several npu partitions writes OUT, OUT.2, ...)");
  parser.addAlias("-o", "--output");
  parser.addString("--header", "FILE", &headerPath,
                   "with -o on the cpu backend: write the AOT bundle's C header to FILE\n"
                   "(default: OUT with the extension .h)");
  parser.addString("--report-json", "FILE", &reportPath, "write the report as JSON to FILE");
  parser.addList("--bind", "NAME=FILE.npy", &bindings,
                 "compile for this value of model input NAME: it becomes a constant\n"
                 "(shape specialisation, for inputs that decide shapes)");
  parser.addFlag("--quiet", &quiet, "print nothing on success");
  if (auto status = parser.parse(args)) return *status;
  if (auto status = pipeline.validate(parser)) return *status;

  if (Error e = loadBackends(pipeline.backendPaths)) return fail(e);
  Expected<std::unique_ptr<Backend>> backend = pipeline.createBackend();
  if (!backend) return fail(backend.error());
  std::string backendName = (*backend)->name();
  if (!headerPath.empty()) {
    if (outputPath.empty()) return fail(makeError("--header needs -o OUT"));
    if (Error e = (*backend)->setOption("header", headerPath))
      return fail(e.withContext("--header (backend '" + backendName + "')"));
  }

  Expected<std::map<std::string, Tensor>> bound = readNamedInputs(bindings);
  if (!bound) return fail(bound.error().withContext("--bind"));
  pipeline.importOptions.boundInputs = bound.take();
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(pipeline.nameMemoryLimit(loaded.error()));
  const std::vector<std::string> boundNames =
      boundInputNames(pipeline.importOptions.boundInputs, *loaded->function);
  Expected<CompiledModel> model =
      compileFunction(*loaded->function, backend.take(), pipeline.compileOptions());
  if (!model) return fail(pipeline.nameMemoryLimit(model.error()).withContext(pipeline.model));

  if (!outputPath.empty()) {
    if (Error e = model->function->writeArtifact(outputPath))
      return fail(e.withContext("-o " + outputPath + " (backend '" + backendName + "')"));
  }
  // Before a run, an accelerator's report holds the compile-time figures.
  const DeviceReport* device = model->report.device.layers.empty() ? nullptr : &model->report.device;
  if (!reportPath.empty()) {
    const ImportNotes notes = importNotes(boundNames, pipeline.importOptions.boundInputs, *loaded->function);
    if (Error e = writeTextFile(reportPath, reportJson(backendName, model->report, std::nullopt, 1, 1,
                                                       pipeline.quantizationReport.get(), device, &notes)))
      return fail(e);
  }
  if (!quiet) {
    std::cout << "inputs:      ";
    for (const auto& [name, type] : model->inputs) std::cout << " " << name << " " << type.str();
    std::cout << "\noutputs:     ";
    for (const auto& [name, type] : model->outputs) std::cout << " " << name << " " << type.str();
    std::cout << "\n";
    printBoundInputs(std::cout, boundNames, pipeline.importOptions.boundInputs);
    printValueDependentWarnings(std::cout, *loaded->function);
    printReport(std::cout, backendName, model->report, std::nullopt, 1, device);
    if (!outputPath.empty()) std::cout << "wrote:        " << outputPath << "\n";
  }
  return kExitSuccess;
}

}  // namespace ember::cli
