// Graph passes and the pass manager (LLVM style: one pass, one job, a name).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/PassGate.h"

namespace ember {

class Backend;

/// A graph pass. run() returns whether it changed the function.
class FunctionPass {
 public:
  virtual ~FunctionPass() = default;
  virtual std::string name() const = 0;
  virtual Expected<bool> run(Function& function) = 0;
  /// A required pass (lowering) runs whatever the PassGate says.
  virtual bool isRequired() const { return false; }
};

struct PassManagerOptions {
  bool verifyEachPass = false;
  /// Print the function after this pass ("*" for all) to stderr.
  std::string printAfter;
  /// Decides which optional passes run and records them (null: all run).
  PassGate* gate = nullptr;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}
  void add(std::unique_ptr<FunctionPass> pass) { passes_.push_back(std::move(pass)); }
  /// Runs all passes once, in order. Errors name the failing pass.
  Error run(Function& function);
  /// The names of the passes added, in order.
  std::vector<std::string> passNames() const;

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<FunctionPass>> passes_;
};

// The graph passes (core/optimizer), each in its own file.
std::unique_ptr<FunctionPass> createDeadCodeEliminationPass();
std::unique_ptr<FunctionPass> createCommonSubexpressionEliminationPass();
std::unique_ptr<FunctionPass> createConstantFoldingPass();
std::unique_ptr<FunctionPass> createTransposeSinkingPass();
std::unique_ptr<FunctionPass> createBatchNormFoldingPass();
/// Lowers high-level nodes that backend.shouldLower accepts into primitives.
std::unique_ptr<FunctionPass> createLoweringPass(const Backend& backend);

/// The graph-optimizer pipeline before lowering.
void addGraphOptimizationPasses(PassManager& pm);

}  // namespace ember
