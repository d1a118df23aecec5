// ember compare: runs a model on a backend under test and on an oracle (the
// reference backend, a second model, or a directory of expected outputs),
// names the first node whose output diverges; --bisect-passes names the
// first compiler pass that changes the outputs (ember/Compare.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "Commands.h"
#include "ModelIO.h"
#include "Tool.h"
#include "ember/Compare.h"
#include "ember/Npy.h"

namespace ember::cli {
namespace {

using Row = std::vector<std::string>;

std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string shapeOf(const Type& type) {
  if (type.dims.empty()) return "scalar";
  std::string shape;
  for (size_t i = 0; i < type.dims.size(); ++i) shape += (i ? "x" : "") + std::to_string(type.dims[i]);
  return shape;
}

/// Columns: left-aligned, two spaces apart; the first row is the header.
void printTable(std::ostream& os, const std::vector<Row>& rows, const std::string& indent = "  ") {
  std::vector<size_t> widths;
  for (const Row& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (c >= widths.size()) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  for (const Row& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size() ? std::string(widths[c] - row[c].size() + 2, ' ') : "");
    os << line << "\n";
  }
}

Row headerRow(bool withOp, bool withStatus) {
  Row row{withOp ? "node" : "output"};
  if (withOp) row.push_back("op");
  for (const char* column : {"shape", "kind", "max abs", "max rel", "worst index", "expected", "got"})
    row.push_back(column);
  if (withStatus) row.push_back("status");
  return row;
}

Row valueRow(const ValueComparison& value, bool withOp, bool withStatus) {
  std::string name = value.node + (value.result ? ":" + std::to_string(value.result) : "");
  Row row{name};
  if (withOp) row.push_back(value.op);
  row.push_back(shapeOf(value.type));
  row.push_back(std::string(elemKindName(value.type.kind)));
  const TensorDiff& d = value.diff;
  if (!d.typeMismatch.empty()) {
    row.insert(row.end(), {"type " + d.typeMismatch, "", "", "", ""});
  } else {
    bool any = d.worstIndex >= 0;
    row.push_back(formatNumber(d.maxAbsError));
    row.push_back(formatNumber(d.maxRelError));
    row.push_back(TensorDiff::coordinates(d.worstIndex, value.type.dims));
    row.push_back(any ? formatNumber(d.expectedAtWorst) : "");
    row.push_back(any ? formatNumber(d.gotAtWorst) : "");
  }
  if (withStatus) row.push_back(value.diverged() ? "DIVERGED" : "ok");
  return row;
}

void writeValue(JsonWriter& json, const ValueComparison& value) {
  const TensorDiff& d = value.diff;
  json.beginObject();
  json.key("name").value(value.node);
  if (!value.op.empty()) json.key("op").value(value.op).key("result").value(int64_t(value.result));
  json.key("kind").value(std::string(elemKindName(value.type.kind)));
  json.key("shape").beginArray();
  for (int64_t dim : value.type.dims) json.value(dim);
  json.endArray();
  json.key("diverged").value(value.diverged());
  if (!d.typeMismatch.empty()) {
    json.key("type_mismatch").value(d.typeMismatch);
  } else {
    json.key("max_abs_error").value(d.maxAbsError);
    json.key("max_rel_error").value(d.maxRelError);
    json.key("elements_beyond_tolerance").value(d.numBeyondTolerance);
    json.key("worst_index").value(d.worstIndex);
    json.key("expected").value(d.expectedAtWorst);
    json.key("got").value(d.gotAtWorst);
  }
  json.endObject();
}

/// What the command compares against: a backend, a second model, or files.
struct Oracle {
  enum class Kind { Backend, Model, ExpectedOutputs } kind = Kind::Backend;
  std::string spec;
};

Oracle classifyAgainst(const std::string& against) {
  std::error_code ec;
  if (std::filesystem::is_directory(against, ec)) return {Oracle::Kind::ExpectedOutputs, against};
  if (against.ends_with(".onnx") || std::filesystem::is_regular_file(against, ec))
    return {Oracle::Kind::Model, against};
  return {Oracle::Kind::Backend, against};
}

/// DIR/<sanitised output name>.npy for every model output (as `ember run
/// --output-dir` writes them).
Expected<std::map<std::string, Tensor>> readExpectedOutputs(const std::string& dir,
                                                            const Function& function) {
  std::map<std::string, Tensor> expected;
  for (const auto& [name, value] : function.outputs()) {
    std::string path = (std::filesystem::path(dir) / (sanitizeFileName(name) + ".npy")).string();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      return makeError("--against ", dir, ": no ", path, " for output '", name, "'");
    Expected<Tensor> tensor = readNpy(path);
    if (!tensor) return tensor.error().withContext("--against");
    // NumPy's default float64 reference data is compared in the output's float kind.
    expected.emplace(name, narrowFloat64(tensor.take(), value.type().kind));
  }
  return expected;
}

std::string toleranceText(const Tolerance& tolerance) {
  return "rtol " + formatNumber(tolerance.rtol) + ", atol " + formatNumber(tolerance.atol);
}

void printComparison(std::ostream& os, const ModelComparison& comparison, bool all) {
  os << "outputs: " << comparison.numDivergedOutputs() << " of " << comparison.outputs.size()
     << " diverged\n";
  std::vector<Row> outputs{headerRow(false, true)};
  for (const ValueComparison& output : comparison.outputs) outputs.push_back(valueRow(output, false, true));
  printTable(os, outputs);
  if (!comparison.intermediatesNote.empty())
    os << "intermediate values not compared: " << comparison.intermediatesNote << "\n";
  if (comparison.exposedPartitions.size() > 1) {
    os << "partitions with every node result exposed:";
    for (const std::string& partition : comparison.exposedPartitions) os << " [" << partition << "]";
    os << "\n";
  }
  std::optional<size_t> first = comparison.firstDivergentNode();
  if (first) {
    os << "first divergent node:\n";
    printTable(os, {headerRow(true, false), valueRow(comparison.nodes[*first], true, false)});
  } else if (comparison.numDivergedOutputs() && comparison.intermediatesNote.empty()) {
    // Exposing values keeps them alive, which changes what a backend fuses.
    os << "no node diverges with every node result exposed: the difference needs the program as "
          "compiled without them (a fusion or buffer reuse across nodes)\n";
  }
  if (all && !comparison.nodes.empty()) {
    os << "all nodes in topological order:\n";
    std::vector<Row> rows{headerRow(true, true)};
    for (const ValueComparison& node : comparison.nodes) rows.push_back(valueRow(node, true, true));
    printTable(os, rows);
  }
  if (!comparison.notCompared.empty()) {
    os << comparison.notCompared.size() << " node result(s) exposed by one side only:";
    for (size_t i = 0; i < comparison.notCompared.size() && i < 8; ++i)
      os << " " << comparison.notCompared[i];
    os << (comparison.notCompared.size() > 8 ? " ..." : "") << "\n";
  }
  const size_t compared = comparison.nodes.size();
  const size_t total = compared + comparison.notCompared.size();
  os << compared << " of " << total << " nodes compared, " << comparison.numDivergedNodes() << " diverged\n";
}

void writeComparison(JsonWriter& json, const ModelComparison& comparison) {
  json.key("outputs").beginArray();
  for (const ValueComparison& output : comparison.outputs) writeValue(json, output);
  json.endArray();
  json.key("nodes").beginArray();
  for (const ValueComparison& node : comparison.nodes) writeValue(json, node);
  json.endArray();
  json.key("first_divergent_node");
  if (auto first = comparison.firstDivergentNode())
    writeValue(json, comparison.nodes[*first]);
  else
    json.null();
  json.key("nodes_compared").value(uint64_t(comparison.nodes.size()));
  json.key("nodes_diverged").value(uint64_t(comparison.numDivergedNodes()));
  json.key("not_compared").beginArray();
  for (const std::string& node : comparison.notCompared) json.value(node);
  json.endArray();
  if (!comparison.intermediatesNote.empty())
    json.key("intermediates_note").value(comparison.intermediatesNote);
}

void printBisection(std::ostream& os, const PassBisection& bisection, const std::string& oracleLabel) {
  os << "optional pass executions: " << bisection.passesRun.size() << " (";
  for (size_t i = 0; i < bisection.passesRun.size(); ++i) os << (i ? ", " : "") << bisection.passesRun[i];
  os << ")\n";
  const std::string baseline =
      bisection.baselineLimit ? "baseline (the first " + std::to_string(bisection.baselineLimit) + " passes)"
                              : std::string("baseline (no optional pass)");
  if (bisection.baselineLimit)
    os << "baseline: the first " << bisection.baselineLimit
       << " pass executions, since fewer do not compile: " << bisection.baselineNote << "\n";
  if (!oracleLabel.empty()) {
    if (bisection.baselineVersusOracle) {
      os << baseline << " differs from " << oracleLabel
         << ": the backend itself disagrees, whatever the passes do:\n";
      printTable(os, {headerRow(false, false), valueRow(*bisection.baselineVersusOracle, false, false)});
    } else {
      os << baseline << " agrees with " << oracleLabel << "\n";
    }
  }
  if (!bisection.culprit) {
    os << "no optional pass changes the outputs (" << bisection.compilations << " compilations)\n";
    return;
  }
  os << "first pass that changes the outputs: " << bisection.culpritPass << " ("
     << (bisection.culpritIsIRPass ? "IR" : "graph") << " pass, execution " << *bisection.culprit << " of "
     << bisection.passesRun.size() << "; reproduce with --pass-limit " << *bisection.culprit << " against "
     << *bisection.culprit - 1 << ")\n";
  if (!bisection.culpritCompileError.empty())
    os << "compiling with it fails: " << bisection.culpritCompileError << "\n";
  if (bisection.changedOutput) {
    os << "first output it changes (against the baseline):\n";
    printTable(os, {headerRow(false, false), valueRow(*bisection.changedOutput, false, false)});
  }
  os << bisection.compilations << " compilations\n";
}

void writeBisection(JsonWriter& json, const PassBisection& bisection) {
  json.key("bisection").beginObject();
  json.key("passes_run").beginArray();
  for (const std::string& pass : bisection.passesRun) json.value(pass);
  json.endArray();
  json.key("baseline_pass_limit").value(uint64_t(bisection.baselineLimit));
  if (!bisection.baselineNote.empty()) json.key("baseline_note").value(bisection.baselineNote);
  json.key("baseline_differs_from_oracle");
  if (bisection.baselineVersusOracle)
    writeValue(json, *bisection.baselineVersusOracle);
  else
    json.null();
  json.key("culprit_index");
  if (bisection.culprit)
    json.value(uint64_t(*bisection.culprit));
  else
    json.null();
  json.key("culprit_pass").value(bisection.culpritPass);
  json.key("culprit_kind").value(bisection.culprit ? (bisection.culpritIsIRPass ? "IR" : "graph") : "");
  json.key("changed_output");
  if (bisection.changedOutput)
    writeValue(json, *bisection.changedOutput);
  else
    json.null();
  if (!bisection.culpritCompileError.empty()) json.key("compile_error").value(bisection.culpritCompileError);
  json.key("compilations").value(uint64_t(bisection.compilations));
  json.endObject();
}

/// The command line of `ember compare`.
struct CompareArgs {
  PipelineArgs pipeline;
  InputArgs inputArgs;
  std::string against = "reference", reportPath;
  std::optional<double> rtol, atol;
  bool all = false, bisect = false, outputsOnly = false;
};

void addCompareOptions(OptionParser& parser, CompareArgs& a) {
  a.pipeline.addTo(parser);
  parser.addString("--against", "ORACLE", &a.against,
                   "a backend (default: reference), a second model MODEL2.onnx run on the reference\n"
                   "backend (compared by output and node name), or a directory of expected outputs\n"
                   "DIR/<output>.npy (model outputs only)");
  a.inputArgs.addTo(parser);
  parser.addNonNegativeNumber("--rtol", "R", &a.rtol,
                              "relative tolerance for floats, of max|expected| (default: 1e-4)");
  parser.addNonNegativeNumber("--atol", "A", &a.atol, "absolute tolerance, all kinds (default: 0)");
  parser.addFlag("--all", &a.all, "also print every compared node in topological order");
  parser.addFlag("--outputs-only", &a.outputsOnly, "compare the model outputs only (no node is exposed)");
  parser.addFlag("--bisect-passes", &a.bisect, "name the first optional pass that changes the outputs");
  parser.addString("--report-json", "FILE", &a.reportPath, "write the comparison as JSON to FILE");
}

std::function<Expected<Function*>(Module&)> importerFor(const std::string& path,
                                                        const ImportOptions& options) {
  return [path, options](Module& module) { return importOnnxFile(path, module, options); };
}

/// What the test side is checked against: a compiled side, or expected outputs read from a directory.
struct OracleChoice {
  std::optional<CompareSide> side;
  std::map<std::string, Tensor> expectedOutputs;
};

Expected<OracleChoice> chooseOracle(const CompareArgs& a, const CompareSide& test, const Function& imported) {
  // The oracle compiles as the reference pipeline does: no pass flags.
  CompileOptions oracleOptions = a.pipeline.compileOptions();
  oracleOptions.disabledPasses.clear();
  oracleOptions.passLimit = -1;
  const Oracle oracleSpec = classifyAgainst(a.against);
  OracleChoice choice;
  switch (oracleSpec.kind) {
    case Oracle::Kind::Backend: {
      Expected<std::unique_ptr<Backend>> created = BackendRegistry::global().create(a.against);
      if (!created) return created.error().withContext("--against");
      oracleOptions.fallbackBackends.clear();
      if (a.against != "reference") oracleOptions.fallbackBackends = {"reference"};
      choice.side = sideForBackend(test.makeModel, a.against, oracleOptions);
      break;
    }
    case Oracle::Kind::Model:
      oracleOptions.fallbackBackends.clear();
      choice.side =
          sideForBackend(importerFor(a.against, a.pipeline.importOptions), "reference", oracleOptions);
      choice.side->label = "'" + a.against + "' on 'reference'";
      break;
    case Oracle::Kind::ExpectedOutputs: {
      auto read = readExpectedOutputs(a.against, imported);
      if (!read) return read.error();
      choice.expectedOutputs = read.take();
      break;
    }
  }
  return choice;
}

/// Runs the comparison (or the pass bisection), prints it and writes the JSON
/// report; returns the exit status.
int runComparison(const CompareArgs& a, const CompareSide& test, const OracleChoice& choice,
                  const std::map<std::string, Tensor>& inputs, const Tolerance& tolerance) {
  const std::optional<CompareSide>& oracle = choice.side;
  const std::string oracleLabel = oracle ? oracle->label : "'" + a.against + "'";
  JsonWriter json;
  json.beginObject();
  json.key("model").value(a.pipeline.model);
  json.key("backend").value(a.pipeline.backend);
  json.key("against").value(a.against);
  json.key("rtol").value(tolerance.rtol);
  json.key("atol").value(tolerance.atol);
  bool agree = true;
  std::cout << "compare: " << a.pipeline.model << " on " << test.label << " against " << oracleLabel << " ("
            << toleranceText(tolerance) << ")\n";
  if (a.bisect) {
    Expected<PassBisection> bisection = bisectPasses(test, oracle ? &*oracle : nullptr, inputs, tolerance);
    if (!bisection) return fail(bisection.error().withContext(a.pipeline.model));
    printBisection(std::cout, *bisection, oracle ? oracleLabel : "");
    writeBisection(json, *bisection);
    agree = !bisection->culprit && !bisection->baselineVersusOracle;
  } else if (oracle) {
    Expected<ModelComparison> comparison = compareModels(test, *oracle, inputs, tolerance, !a.outputsOnly);
    if (!comparison) return fail(comparison.error().withContext(a.pipeline.model));
    printComparison(std::cout, *comparison, a.all);
    writeComparison(json, *comparison);
    agree = comparison->agree();
  } else {
    Expected<std::vector<ValueComparison>> outputs =
        compareWithExpected(test, inputs, choice.expectedOutputs, tolerance);
    if (!outputs) return fail(outputs.error().withContext(a.pipeline.model));
    ModelComparison comparison;
    comparison.outputs = outputs.take();
    comparison.intermediatesNote = "expected outputs hold no intermediate value";
    printComparison(std::cout, comparison, a.all);
    writeComparison(json, comparison);
    agree = comparison.agree();
  }
  json.key("agree").value(agree);
  json.endObject();
  if (!a.reportPath.empty()) {
    if (Error e = writeTextFile(a.reportPath, json.str())) return fail(e);
  }
  return agree ? kExitSuccess : kExitFailure;
}

}  // namespace

int compareCommand(const std::vector<std::string>& args) {
  CompareArgs a;
  OptionParser parser(
      "ember compare", "MODEL.onnx --backend NAME [--against reference|BACKEND|MODEL2.onnx|DIR] [options]",
      "Runs MODEL.onnx on the backend under test and on an oracle with the same inputs, compares\n"
      "the model outputs, then every node result of the optimized (and quantized) graph, before\n"
      "lowering, each exposed as an extra output on both sides, and prints the first node, in\n"
      "topological order, whose output diverges: op, shape, kind, max abs error, max rel error\n"
      "(to the oracle's max magnitude) and the worst element.\n"
      "--bisect-passes instead compiles for the backend with 0, 1, 2, ... optional passes and\n"
      "names the first pass that changes the outputs.\n"
      "Floats agree when max abs <= atol + rtol * max|expected|; ints, bools and quantized values\n"
      "when max abs <= atol. Pass flags (--disable-pass, --pass-limit) apply to the backend\n"
      "under test only. Exit status: 0 all agree, 1 divergence or bad input, 2 bad command line.");
  addCompareOptions(parser, a);
  if (auto status = parser.parse(args)) return *status;
  if (auto status = a.pipeline.validate(parser)) return *status;
  Tolerance tolerance;
  if (a.rtol) tolerance.rtol = *a.rtol;
  if (a.atol) tolerance.atol = *a.atol;

  if (Error e = loadBackends(a.pipeline.backendPaths)) return fail(e);
  Expected<std::unique_ptr<Backend>> probe = a.pipeline.createBackend();
  if (!probe) return fail(probe.error());

  const PipelineArgs& pipeline = a.pipeline;
  CompareSide test;
  test.makeModel = importerFor(pipeline.model, pipeline.importOptions);
  test.makeBackend = [&pipeline] { return pipeline.createBackend(); };
  test.options = pipeline.compileOptions();
  test.label = "'" + pipeline.backend + "'";

  // Inputs are read against the model's signature before anything compiles.
  Module signatureModule;
  Expected<Function*> imported = test.makeModel(signatureModule);
  if (!imported) return fail(imported.error());
  Signature inputSignature;
  for (const Node* in : (*imported)->inputs()) inputSignature.push_back({in->name(), in->resultType()});
  ExecutionContext context;
  if (Error e = prepareInputs(inputSignature, a.inputArgs, context)) return fail(e);

  Expected<OracleChoice> oracle = chooseOracle(a, test, **imported);
  if (!oracle) return fail(oracle.error());
  return runComparison(a, test, *oracle, context.inputs(), tolerance);
}

}  // namespace ember::cli
