// The per-node comparison of `ember compare`: both sides compiled as given
// (model outputs), then again with every node result exposed (intermediates),
// compared node by node in topological order.
#include <set>

#include "CompareRun.h"

namespace ember {

using namespace compare_detail;

CompareSide sideForBackend(std::function<Expected<Function*>(Module&)> makeModel,
                           const std::string& backendName, CompileOptions options) {
  CompareSide side;
  side.makeModel = std::move(makeModel);
  side.makeBackend = [backendName] { return BackendRegistry::global().create(backendName); };
  side.options = std::move(options);
  side.label = "'" + backendName + "'";
  return side;
}

std::optional<size_t> ModelComparison::firstDivergentNode() const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].diverged()) return i;
  return std::nullopt;
}

size_t ModelComparison::numDivergedNodes() const {
  size_t count = 0;
  for (const ValueComparison& node : nodes) count += node.diverged();
  return count;
}

size_t ModelComparison::numDivergedOutputs() const {
  size_t count = 0;
  for (const ValueComparison& output : outputs) count += output.diverged();
  return count;
}

namespace {

/// A side compiled and run with every node result exposed.
struct InstrumentedRun {
  SideRun run;
  std::vector<ExposedValue> exposed;
};

Expected<InstrumentedRun> runInstrumented(const CompareSide& side,
                                          const std::map<std::string, Tensor>& inputs) {
  InstrumentedRun result;
  auto run = compileAndRun(side, side.options, inputs, &result.exposed);
  if (!run) return run.error();
  result.run = run.take();
  return result;
}

std::string nodeKey(const ExposedValue& value) { return value.node + "#" + std::to_string(value.result); }

/// Matches the exposed values by node name and result number, in the test
/// side's order.
void compareExposed(const InstrumentedRun& test, const InstrumentedRun& oracle, const Tolerance& tolerance,
                    ModelComparison& comparison) {
  std::map<std::string, const ExposedValue*> oracleByKey;
  for (const ExposedValue& value : oracle.exposed) oracleByKey.emplace(nodeKey(value), &value);
  std::set<std::string> matched;
  for (const ExposedValue& value : test.exposed) {
    auto it = oracleByKey.find(nodeKey(value));
    if (it == oracleByKey.end() || it->second->op != value.op) {
      comparison.notCompared.push_back(value.node + " (" + value.op + ")");
      continue;
    }
    matched.insert(it->first);
    ValueComparison compared;
    compared.node = value.node;
    compared.op = value.op;
    compared.result = value.result;
    const Tensor& expected = oracle.run.values.at(it->second->output);
    compared.type = expected.type();
    compared.diff = diffTensors(test.run.values.at(value.output), expected, tolerance);
    comparison.nodes.push_back(std::move(compared));
  }
  for (const ExposedValue& value : oracle.exposed)
    if (!matched.count(nodeKey(value))) comparison.notCompared.push_back(value.node + " (" + value.op + ")");
}

}  // namespace

Expected<ModelComparison> compareModels(const CompareSide& test, const CompareSide& oracle,
                                        const std::map<std::string, Tensor>& inputs,
                                        const Tolerance& tolerance, bool intermediates) {
  ModelComparison comparison;
  auto testRun = compileAndRun(test, test.options, inputs);
  if (!testRun) return testRun.error();
  auto oracleRun = compileAndRun(oracle, oracle.options, inputs);
  if (!oracleRun) return oracleRun.error();
  auto outputs = compareOutputs(*testRun, test.label, *oracleRun, oracle.label, tolerance);
  if (!outputs) return outputs.error();
  comparison.outputs = outputs.take();
  if (!intermediates) return comparison;

  // A backend that cannot compile the exposed values (an accelerator with a
  // limit on outputs) still has its outputs compared: say why, do not fail.
  auto testExposed = runInstrumented(test, inputs);
  if (!testExposed) {
    comparison.intermediatesNote = "with every node result exposed: " + testExposed.error().message();
    return comparison;
  }
  auto oracleExposed = runInstrumented(oracle, inputs);
  if (!oracleExposed) {
    comparison.intermediatesNote = "with every node result exposed: " + oracleExposed.error().message();
    return comparison;
  }
  comparison.exposedPartitions = testExposed->run.report.partitions;
  compareExposed(*testExposed, *oracleExposed, tolerance, comparison);
  return comparison;
}

Expected<std::vector<ValueComparison>> compareWithExpected(const CompareSide& test,
                                                           const std::map<std::string, Tensor>& inputs,
                                                           const std::map<std::string, Tensor>& expected,
                                                           const Tolerance& tolerance) {
  auto testRun = compileAndRun(test, test.options, inputs);
  if (!testRun) return testRun.error();
  // The expected tensors as a run, so that names and types are checked alike.
  SideRun golden;
  for (const auto& [name, tensor] : expected) {
    golden.outputs.push_back({name, tensor.type()});
    golden.values.emplace(name, tensor);
  }
  return compareOutputs(*testRun, test.label, golden, "the expected outputs", tolerance);
}

}  // namespace ember
