// ember dump: prints one stage's artefact. graph = as imported, optimized =
// after the graph optimizer, lowered = after lowering and the backend's
// post-lowering rewrites, ir = the planned instruction IR.
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
  PassManagerOptions options;
  options.verifyEachPass = pipeline.verifyEachPass;
  options.printAfter = printAfter;
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

}  // namespace

int dumpCommand(const std::vector<std::string>& args) {
  PipelineArgs pipeline;
  std::string stage = "graph", dotPath, printAfter;

  OptionParser parser("ember dump", "MODEL.onnx --stage graph|optimized|lowered|ir [options]",
                      "Prints the model at one stage of the pipeline: 'graph' as imported, 'optimized'\n"
                      "after the graph optimizer, 'lowered' after lowering for the backend, 'ir' as\n"
                      "planned instruction IR with buffer offsets.");
  pipeline.addTo(parser);
  parser.addString("--stage", "STAGE", &stage, "graph, optimized, lowered or ir (default: graph)");
  parser.addString("--dot", "FILE", &dotPath, "also write the graph at that stage as Graphviz DOT to FILE");
  parser.addString("--print-after", "PASS", &printAfter,
                   "print the graph to stderr after pass PASS ('*' for every pass)");
  if (auto status = parser.parse(args)) return *status;
  if (auto status = pipeline.validate(parser)) return *status;
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
    text = model->ir->str();
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
