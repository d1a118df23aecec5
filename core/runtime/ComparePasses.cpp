// Pass bisection (as LLVM's -opt-bisect-limit): the baseline runs no optional
// pass; the first pass limit whose outputs differ from the baseline names the
// pass that changed them.
#include <algorithm>

#include "CompareRun.h"
#include "ember/IR.h"

namespace ember {

using namespace compare_detail;

namespace {

/// The first output of `comparisons` that diverged, if any.
std::optional<ValueComparison> firstDiverged(const std::vector<ValueComparison>& comparisons) {
  for (const ValueComparison& value : comparisons)
    if (value.diverged()) return value;
  return std::nullopt;
}

CompileOptions withPassLimit(CompileOptions options, int64_t limit) {
  options.passLimit = limit;
  return options;
}

}  // namespace

Expected<PassBisection> bisectPasses(const CompareSide& test, const CompareSide* oracle,
                                     const std::map<std::string, Tensor>& inputs,
                                     const Tolerance& tolerance) {
  PassBisection bisection;
  auto full = compileAndRun(test, withPassLimit(test.options, -1), inputs);
  if (!full) return full.error().withContext("every pass");
  bisection.passesRun = full->report.passesRun;
  bisection.compilations = 1;
  // The baseline: the fewest passes that compile (normally none).
  Expected<SideRun> baseline = makeError("unreachable");
  for (size_t limit = 0; limit <= bisection.passesRun.size(); ++limit) {
    baseline = compileAndRun(test, withPassLimit(test.options, int64_t(limit)), inputs);
    ++bisection.compilations;
    if (baseline) {
      bisection.baselineLimit = limit;
      break;
    }
    bisection.baselineNote = "with " + std::to_string(limit) + ": " + baseline.error().message();
  }
  if (!baseline) return baseline.error().withContext("no optional pass");
  if (bisection.baselineLimit == 0) bisection.baselineNote.clear();
  const std::string baselineLabel =
      test.label + (bisection.baselineLimit
                        ? " with the first " + std::to_string(bisection.baselineLimit) + " passes"
                        : " with no optional pass");

  if (oracle) {
    auto oracleRun = compileAndRun(*oracle, oracle->options, inputs);
    if (!oracleRun) return oracleRun.error();
    auto compared = compareOutputs(*baseline, baselineLabel, *oracleRun, oracle->label, tolerance);
    if (!compared) return compared.error();
    bisection.baselineVersusOracle = firstDiverged(*compared);
  }

  const std::vector<std::string> irPasses = irPassNames();
  for (size_t limit = bisection.baselineLimit + 1; limit <= bisection.passesRun.size(); ++limit) {
    auto run = compileAndRun(test, withPassLimit(test.options, int64_t(limit)), inputs);
    ++bisection.compilations;
    std::optional<ValueComparison> changed;
    std::string compileError;
    if (!run) {
      compileError = run.error().message();
    } else {
      auto compared = compareOutputs(*run, test.label + " with " + std::to_string(limit) + " passes",
                                     *baseline, baselineLabel, tolerance);
      if (!compared) return compared.error();
      changed = firstDiverged(*compared);
    }
    if (!changed && compileError.empty()) continue;
    bisection.culprit = limit;
    // The limited run's own record, when it exists: the pass that ran last.
    bisection.culpritPass = run && run->report.passesRun.size() == limit ? run->report.passesRun.back()
                                                                         : bisection.passesRun[limit - 1];
    bisection.culpritIsIRPass =
        std::find(irPasses.begin(), irPasses.end(), bisection.culpritPass) != irPasses.end();
    bisection.changedOutput = std::move(changed);
    bisection.culpritCompileError = std::move(compileError);
    break;
  }
  return bisection;
}

}  // namespace ember
