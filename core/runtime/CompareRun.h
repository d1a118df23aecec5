// Internal to the Compare*.cpp files: compile and run one side of a
// comparison, expose node results as outputs, and compare two runs' outputs.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/Compare.h"

namespace ember::compare_detail {

/// What one compile-and-run of a side produced.
struct SideRun {
  std::vector<std::pair<std::string, Type>> outputs;  ///< the compiled signature, model order
  std::map<std::string, Tensor> values;               ///< every output by name
  CompileReport report;
};

/// A node result added as a function output so that it can be compared.
struct ExposedValue {
  std::string output;  ///< the function output carrying it
  std::string node, op;
  unsigned result = 0;
};

/// Builds the side's model, compiles it with `options` for the side's
/// backend and runs it once. With `exposed`, every node result of the graph
/// after the graph optimizer and options.beforeLowering (the quantizer) is
/// first added as an output, and listed there.
Expected<SideRun> compileAndRun(const CompareSide& side, const CompileOptions& options,
                                const std::map<std::string, Tensor>& inputs,
                                std::vector<ExposedValue>* exposed = nullptr);

/// Adds every result of every non-storage node as a function output (a node
/// result that already is a model output keeps that output). Returns them in
/// topological order.
std::vector<ExposedValue> exposeNodeResults(Function& function);

/// Compares the model outputs of two runs, in `test`'s order. Fails when
/// their names or declared types differ.
Expected<std::vector<ValueComparison>> compareOutputs(const SideRun& test, const std::string& testLabel,
                                                      const SideRun& oracle, const std::string& oracleLabel,
                                                      const Tolerance& tolerance);

}  // namespace ember::compare_detail
