// ember dump: prints one stage's artefact. graph = as imported, optimized =
// after the graph optimizer, lowered = after lowering and the backend's
// post-lowering rewrites, ir = the planned instruction IR.
#include <algorithm>
#include <iostream>

#include "Commands.h"
#include "Tool.h"
#include "ember/Pass.h"

namespace ember::cli {
namespace {

/// The graph stages of the compile pipeline (as in core/runtime's
/// optimizeAndLower), run with a PassManager that honours --print-after.
Error runGraphStages(Function& function, const Backend& backend, const PipelineArgs& pipeline, bool lower,
                     const std::string& printAfter) {
  EMBER_RETURN_IF_ERROR(function.verify());
  // --disable-pass and --pass-limit, counted as the compile pipeline counts them.
  CompileOptions compileOptions = pipeline.compileOptions();
  PassGate gate(compileOptions.disabledPasses, compileOptions.passLimit);
  PassManagerOptions options;
  options.verifyEachPass = pipeline.verifyEachPass;
  options.printAfter = printAfter;
  options.gate = &gate;
  PassManager pm(options);
  if (!pipeline.noGraphOpt) addGraphOptimizationPasses(pm);
  if (lower) {
    pm.add(createLoweringPass(backend));
    pm.add(createConstantFoldingPass());
    pm.add(createCommonSubexpressionEliminationPass());
    pm.add(createDeadCodeEliminationPass());
  }
  EMBER_RETURN_IF_ERROR(pm.run(function));
  if (lower)
    EMBER_RETURN_IF_ERROR(backend.transformPostLowering(function).withContext("transformPostLowering"));
  return function.verify();
}

/// --list-passes: without a model, every optional pass name; with one, the
/// optional pass executions of its compilation, numbered as --pass-limit counts.
int listPasses(PipelineArgs& pipeline) {
  const std::vector<std::string> irPasses = irPassNames();
  auto kindOf = [&irPasses](const std::string& name) {
    return std::find(irPasses.begin(), irPasses.end(), name) != irPasses.end() ? "IR" : "graph";
  };
  if (pipeline.model.empty()) {
    for (const std::string& name : optionalPassNames()) std::cout << name << "  " << kindOf(name) << "\n";
    return kExitSuccess;
  }
  if (Error e = loadBackends(pipeline.backendPaths)) return fail(e);
  Expected<std::unique_ptr<Backend>> backend = pipeline.createBackend();
  if (!backend) return fail(backend.error());
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(loaded.error());
  Expected<CompiledModel> model =
      compileFunction(*loaded->function, backend.take(), pipeline.compileOptions());
  if (!model) return fail(model.error().withContext(pipeline.model));
  const std::vector<std::string>& ran = model->report.passesRun;
  for (size_t i = 0; i < ran.size(); ++i)
    std::cout << i + 1 << "  " << ran[i] << "  " << kindOf(ran[i]) << "\n";
  return kExitSuccess;
}

}  // namespace

int dumpCommand(const std::vector<std::string>& args) {
  PipelineArgs pipeline;
  std::string stage = "graph", dotPath, printAfter;

  OptionParser parser("ember dump",
                      "MODEL.onnx --stage graph|optimized|lowered|ir [options]\n"
                      "       ember dump --list-passes [MODEL.onnx] [options]",
                      "Prints the model at one stage of the pipeline: 'graph' as imported, 'optimized'\n"
                      "after the graph optimizer, 'lowered' after lowering for the backend, 'ir' as\n"
                      "planned instruction IR with buffer offsets.");
  pipeline.addTo(parser, /*modelRequired=*/false);
  bool listPassesOnly = false;
  parser.addString("--stage", "STAGE", &stage, "graph, optimized, lowered or ir (default: graph)");
  parser.addString("--dot", "FILE", &dotPath, "also write the graph at that stage as Graphviz DOT to FILE");
  parser.addString("--print-after", "PASS", &printAfter,
                   "print the graph to stderr after pass PASS ('*' for every pass)");
  parser.addFlag("--list-passes", &listPassesOnly,
                 "print the optional passes (graph or IR); with MODEL.onnx, the numbered pass\n"
                 "executions of its compilation, as --pass-limit counts them");
  if (auto status = parser.parse(args)) return *status;
  if (auto status = pipeline.validate(parser)) return *status;
  if (listPassesOnly) return listPasses(pipeline);
  if (pipeline.model.empty()) return parser.usageError("missing MODEL.onnx");
  if (stage != "graph" && stage != "optimized" && stage != "lowered" && stage != "ir")
    return parser.usageError("unknown stage '" + stage + "' (expected graph, optimized, lowered or ir)");

  if (Error e = loadBackends(pipeline.backendPaths)) return fail(e);
  Expected<std::unique_ptr<Backend>> backend = pipeline.createBackend();
  if (!backend) return fail(backend.error());

  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(loaded.error());
  Function& function = *loaded->function;

  std::string text;
  if (stage == "optimized" || stage == "lowered" || (stage == "ir" && !printAfter.empty())) {
    if (Error e = runGraphStages(function, **backend, pipeline, stage != "optimized", printAfter))
      return fail(e.withContext(pipeline.model));
  }
  if (stage == "ir") {
    // The real pipeline: graph stages (a fixpoint if already run), IRGen, IR
    // optimizer, memory planning.
    Expected<CompiledModel> model = compileFunction(function, backend.take(), pipeline.compileOptions());
    if (!model) return fail(model.error().withContext(pipeline.model));
    text = compiledIRText(*model);
  } else {
    text = function.str();
  }
  if (!dotPath.empty()) {
    if (Error e = writeTextFile(dotPath, function.dot())) return fail(e);
  }
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << "\n";
  return kExitSuccess;
}

}  // namespace ember::cli
