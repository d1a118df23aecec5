// Differential testing of backends (`ember compare`, docs/backend-guide.md):
// run one model on a backend under test and on an oracle (the reference
// backend), compare every intermediate value both expose and name the first
// node that diverges; and pass bisection (as LLVM's opt-bisect): find the
// first optional compiler pass whose execution changes a model's outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Runtime.h"
#include "ember/Tensor.h"

namespace ember {

/// When two tensors agree. Floats: maxAbsError <= atol + rtol * max|expected|
/// (rtol at least 1e-3 for f16 and 8e-3 for bf16, their precision).
/// Integers, bools and quantized values (compared as raw integers):
/// maxAbsError <= atol, exact by default.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 0;
};

/// How `got` differs from `expected`.
struct TensorDiff {
  /// Element kind, shape or quantization parameters differ; then no element
  /// is compared and `typeMismatch` says how ("f32<2x3> vs f32<3x2>").
  std::string typeMismatch;
  double maxAbsError = 0;   ///< max |got - expected| (infinite where exactly one is NaN)
  double maxRelError = 0;   ///< maxAbsError / max|expected| (infinite when that is 0 and the error is not)
  double maxMagnitude = 0;  ///< max |expected|
  int64_t worstIndex = -1;  ///< flat index of the largest error; -1 when none differs
  double expectedAtWorst = 0, gotAtWorst = 0;
  int64_t numBeyondTolerance = 0;  ///< elements whose own error exceeds the tolerance
  bool withinTolerance = true;

  /// The worst index as coordinates of `dims`: "[0, 3, 1]".
  static std::string coordinates(int64_t flatIndex, const Dims& dims);
};

TensorDiff diffTensors(const Tensor& got, const Tensor& expected, const Tolerance& tolerance);

/// One side of a comparison. Compiling rewrites a function in place, so the
/// model is built afresh (into the given module) for every compilation.
struct CompareSide {
  std::function<Expected<Function*>(Module&)> makeModel;
  std::function<Expected<std::unique_ptr<Backend>>()> makeBackend;
  CompileOptions options;
  std::string label;  ///< names this side in messages ("toy", "reference")
};

/// A side whose backend is the registered backend `backendName`.
CompareSide sideForBackend(std::function<Expected<Function*>(Module&)> makeModel,
                           const std::string& backendName, CompileOptions options = {});

/// One value compared: a node's result, or a model output.
struct ValueComparison {
  std::string node;  ///< graph node name (for a model output: the output name)
  std::string op;    ///< op kind ("Sub"); empty for a model output
  unsigned result = 0;
  Type type;  ///< the oracle's type
  TensorDiff diff;
  bool diverged() const { return !diff.typeMismatch.empty() || !diff.withinTolerance; }
};

struct ModelComparison {
  /// The model outputs, each side compiled exactly as given (no value exposed).
  std::vector<ValueComparison> outputs;
  /// Every node result both sides expose, in the topological order of the
  /// test side's optimized graph.
  std::vector<ValueComparison> nodes;
  /// Node results only one side exposes (a second model with other nodes).
  std::vector<std::string> notCompared;
  /// The partitions of the test side as compiled with every node result
  /// exposed ("npu:12 nodes"): which backend computed the compared values.
  std::vector<std::string> exposedPartitions;
  /// Empty, or why intermediate values could not be compared (a backend
  /// failed to compile the model with them exposed); outputs still are.
  std::string intermediatesNote;

  /// Index into `nodes` of the first divergent node, or nothing.
  std::optional<size_t> firstDivergentNode() const;
  size_t numDivergedNodes() const;
  size_t numDivergedOutputs() const;
  bool agree() const { return numDivergedOutputs() == 0 && numDivergedNodes() == 0; }
};

/// Compiles and runs `test` and `oracle` on the same inputs and compares
/// their outputs. Then, when `intermediates`, compiles both again with every
/// node result exposed as a function output and compares those node by node,
/// matched by node name: the results of the graph as optimized, after the
/// graph optimizer and options.beforeLowering (the quantizer, which is given
/// the side's own backend) and before lowering. Errors (one line): a side
/// fails to import, compile or run, an input is missing or mistyped, or the
/// two sides' outputs differ in name or type.
Expected<ModelComparison> compareModels(const CompareSide& test, const CompareSide& oracle,
                                        const std::map<std::string, Tensor>& inputs,
                                        const Tolerance& tolerance, bool intermediates = true);

/// Compiles and runs `test` and compares its outputs with `expected` (golden
/// outputs, e.g. from PyTorch or ONNX Runtime), by name. Errors (one line): an
/// output without an expected tensor, an expected tensor that is not an
/// output, or one whose type differs from the output's.
Expected<std::vector<ValueComparison>> compareWithExpected(const CompareSide& test,
                                                           const std::map<std::string, Tensor>& inputs,
                                                           const std::map<std::string, Tensor>& expected,
                                                           const Tolerance& tolerance);

struct PassBisection {
  /// The optional pass executions of the whole pipeline (passLimit = -1).
  std::vector<std::string> passesRun;
  /// The pass limit of the baseline: 0, unless fewer passes do not compile
  /// (a quantization profile is calibrated on the optimized graph, so the
  /// quantizer refuses the graph before the graph optimizer has run); then
  /// the smallest limit that compiles, and `baselineNote` gives the error of
  /// the limit below it ("with 19: ...").
  size_t baselineLimit = 0;
  std::string baselineNote;
  /// Baseline (passLimit = 0) against the oracle, when one was given: the
  /// first output beyond tolerance, or nothing when the baseline agrees.
  std::optional<ValueComparison> baselineVersusOracle;
  /// 1-based: passLimit = culprit is the first limit whose outputs differ
  /// from the baseline, so passesRun[culprit - 1] is the pass to blame.
  std::optional<size_t> culprit;
  std::string culpritPass;
  bool culpritIsIRPass = false;
  /// The first output the culprit changed, with its error against the
  /// baseline; or, when compiling with the culprit failed, the error.
  std::optional<ValueComparison> changedOutput;
  std::string culpritCompileError;
  size_t compilations = 0;  ///< compile-and-run cycles the search took
};

/// Compiles and runs `test` with passLimit = 0 (the baseline; if that does
/// not compile, the smallest limit that does), then with passLimit = 1, 2,
/// ... (a linear scan: one wrong pass may be undone by a
/// later one, so the outcome need not be monotonic) and stops at the first
/// limit whose outputs differ from the baseline beyond `tolerance`. The scan
/// honours test.options.disabledPasses and extraGraphPasses. With `oracle`,
/// also compares the baseline with the oracle's outputs.
Expected<PassBisection> bisectPasses(const CompareSide& test, const CompareSide* oracle,
                                     const std::map<std::string, Tensor>& inputs, const Tolerance& tolerance);

}  // namespace ember
