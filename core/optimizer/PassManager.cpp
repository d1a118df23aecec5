// Runs passes in order, optionally verifying and printing after each.
#include <iostream>

#include "ember/Pass.h"

namespace ember {

Error PassManager::run(Function& function) {
  for (const auto& pass : passes_) {
    const std::string name = pass->name();
    if (options_.gate && !pass->isRequired() && !options_.gate->shouldRun(name)) continue;
    Expected<bool> changed = pass->run(function);
    if (!changed) return makeError("pass '", name, "': ", changed.error().message());
    if (options_.verifyEachPass) {
      if (Error error = function.verify()) return makeError("after pass '", name, "': ", error.message());
    }
    if (options_.printAfter == "*" || options_.printAfter == name)
      std::cerr << "// after " << name << "\n" << function.str();
  }
  return Error::success();
}

std::vector<std::string> PassManager::passNames() const {
  std::vector<std::string> names;
  names.reserve(passes_.size());
  for (const auto& pass : passes_) names.push_back(pass->name());
  return names;
}

void addGraphOptimizationPasses(PassManager& pm) {
  // Fold first so that transpose sinking and BatchNorm folding see constants,
  // then clean up what those rewrites leave behind.
  pm.add(createConstantFoldingPass());
  pm.add(createDeadCodeEliminationPass());
  pm.add(createTransposeSinkingPass());
  pm.add(createBatchNormFoldingPass());
  pm.add(createCommonSubexpressionEliminationPass());
  pm.add(createConstantFoldingPass());
  pm.add(createDeadCodeEliminationPass());
}

}  // namespace ember
