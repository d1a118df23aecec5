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

/// "name#result#n": the n-th value of that node name and result number in
/// topological order, so that a name used twice still matches one to one.
std::vector<std::string> nodeKeys(const std::vector<ExposedValue>& values) {
  std::map<std::string, int> seen;
  std::vector<std::string> keys;
  for (const ExposedValue& value : values) {
    std::string key = value.node + "#" + std::to_string(value.result);
    keys.push_back(key + "#" + std::to_string(seen[key]++));
  }
  return keys;
}

/// Matches the exposed values by node name and result number, in the test
/// side's order.
void compareExposed(const InstrumentedRun& test, const InstrumentedRun& oracle, const Tolerance& tolerance,
                    ModelComparison& comparison) {
  const std::vector<std::string> testKeys = nodeKeys(test.exposed), oracleKeys = nodeKeys(oracle.exposed);
  std::map<std::string, const ExposedValue*> oracleByKey;
  for (size_t i = 0; i < oracle.exposed.size(); ++i) oracleByKey.emplace(oracleKeys[i], &oracle.exposed[i]);
  std::set<std::string> matched;
  for (size_t i = 0; i < test.exposed.size(); ++i) {
    const ExposedValue& value = test.exposed[i];
    auto it = oracleByKey.find(testKeys[i]);
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
  for (size_t i = 0; i < oracle.exposed.size(); ++i)
    if (!matched.count(oracleKeys[i]))
      comparison.notCompared.push_back(oracle.exposed[i].node + " (" + oracle.exposed[i].op + ")");
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
