// The runtime: the backend registry, the compile pipeline and a one-call
// compile-and-run API.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/IR.h"
#include "ember/Pass.h"
#include "ember/Plugin.h"

namespace ember {

/// Backends by name. Filled from plugin descriptors: the in-tree ones linked
/// into the tool, and shared libraries found on a search path.
class BackendRegistry {
 public:
  static BackendRegistry& global();

  /// Registers a descriptor; fails on an ABI mismatch or a duplicate name.
  Error add(const EmberBackendPlugin* plugin, std::string origin = "built-in");
  /// Loads every lib*.so in `dir` that exports `ember_backend_plugin`.
  Error loadDirectory(const std::string& dir);
  /// Loads one shared library.
  Error loadLibrary(const std::string& path);

  Expected<std::unique_ptr<Backend>> create(const std::string& name) const;
  struct Entry {
    std::string name, summary, origin;
  };
  std::vector<Entry> list() const;

 private:
  struct Registered {
    const EmberBackendPlugin* plugin;
    std::string origin;
  };
  std::vector<Registered> plugins_;
};

struct CompileOptions {
  bool optimizeGraph = true;    ///< graph optimizer (folding, DCE, CSE, ...)
  bool optimizeIR = true;       ///< instruction-IR optimizer (--no-ir-opt turns it off)
  bool verifyEachPass = false;  ///< run the verifier after every pass
  uint64_t alignment = 64;
  /// A graph rewrite run after the graph optimizer and before lowering, with
  /// the target backend (the quantizer: ember/Quantization.h). With fallback
  /// backends it is given a backend whose supports() is the union of the
  /// target's and the fallbacks', so the quantizer converts every node some
  /// backend can run in int8 and the partitioner places it. Optional.
  std::function<Error(Function&, const Backend&)> beforeLowering;
  /// Backends (registered names) that run the nodes the target does not
  /// support, tried in order: the runtime's partitioner splits the graph into
  /// partitions, each compiled for one backend, with the tensors between them
  /// passed explicitly. Empty: an unsupported node is an error.
  std::vector<std::string> fallbackBackends;
  /// Optional passes to skip, by name (optionalPassNames(): graph and IR
  /// passes). "lowering" is required; an unknown name is an error.
  std::set<std::string> disabledPasses;
  /// opt-bisect: only the first `passLimit` executions of optional passes run,
  /// in pipeline order (graph passes, then IR passes per compiled partition);
  /// the rest are skipped. Negative: no limit.
  int64_t passLimit = -1;
  /// Passes appended to the graph optimizer, before beforeLowering and the
  /// lowering (tests inject rewrites here). They are optional passes.
  std::vector<std::function<std::unique_ptr<FunctionPass>()>> extraGraphPasses;
  /// Refuse a model whose planned memory (constants + I/O + activations of
  /// any partition) exceeds this many bytes (0: no limit).
  uint64_t memoryLimitBytes = 0;
};

/// A node the partitioner placed on a fallback backend, and why.
struct FallbackNode {
  std::string name, op, backend, reason;
};

/// What compile() reports (the `memory` keys of --report-json and more).
struct CompileReport {
  double compileSeconds = 0;
  MemoryPlan memory;
  size_t numInstructions = 0;
  std::vector<FallbackNode> fallbackNodes;
  /// Partitions in execution order: "backend:nodes" (one entry when the
  /// target ran everything).
  std::vector<std::string> partitions;
  /// Static per-layer figures of accelerator partitions (tiles, estimates).
  DeviceReport device;
  /// The optional pass executions that ran, in order (see passLimit).
  std::vector<std::string> passesRun;
  /// Instructions of each registered vendor op (ember/VendorOp.h), over every partition.
  std::map<std::string, uint64_t> vendorOps;
};

/// What the runtime counted in a partitioned model's last run
/// (docs/backend-guide.md, "Device model").
struct RunStatistics {
  size_t partitions = 0;
  /// Intermediate tensors (written by one partition, read by a later one)
  /// that went through host memory, and their bytes.
  uint64_t hostTransfers = 0, hostTransferBytes = 0;
  /// Intermediate tensors handed to a later partition on the same device
  /// without a host copy (DeviceTensor).
  uint64_t deviceHandoffs = 0;
};

/// A compiled model: the backend's function plus the I/O signature.
struct CompiledModel {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<CompiledFunction> function;
  /// The IR the target compiled (the first target partition's when the model
  /// was partitioned; null when no node ran on the target).
  std::unique_ptr<IRFunction> ir;
  /// A partitioned model's planned IR, one per partition in execution order,
  /// with the name of the backend that compiled it (`ember dump --stage ir`);
  /// empty when the target ran the whole model (see `ir`).
  std::vector<std::pair<std::string, std::unique_ptr<IRFunction>>> partitionIRs;
  std::vector<std::pair<std::string, Type>> inputs;
  std::vector<std::pair<std::string, Type>> outputs;
  CompileReport report;

  /// The device to load and run `function` on. For a whole-model function it
  /// is the target's device; for a partitioned model, a device that loads
  /// each partition on its own backend's device and runs them there. Either
  /// way it refuses a load above the device's memoryLimitBytes().
  std::unique_ptr<Device> createDevice() const;
};

/// What the runtime counted in the last run of `function` when it is a
/// partitioned model's; null for a whole-model function (one partition, no
/// transfer).
const RunStatistics* lastRunStatistics(const CompiledFunction& function);

/// A backend whose supports() is the union of `target`'s and the registered
/// `fallbacks`' (it does not compile): what the graph rewrites before
/// lowering (the quantizer) are given, so that they convert every node some
/// backend of the chain runs. `target` must outlive the result.
Expected<std::unique_ptr<Backend>> supportUnion(const Backend& target,
                                                const std::vector<std::string>& fallbacks);

/// Every optional pass of the standard pipeline, graph passes then IR passes,
/// each name once: what CompileOptions::disabledPasses accepts.
std::vector<std::string> optionalPassNames();

/// An error naming the first of `disabled` that is not in `known` (listing
/// `known`), or "lowering" (required); success when all may be disabled.
Error checkDisabledPassNames(const std::vector<std::string>& disabled, const std::vector<std::string>& known);

/// The stages before lowering: the graph optimizer and extraGraphPasses under
/// `gate`, then beforeLowering (given the support union of the target and the
/// fallbacks). optimizeAndLower runs them first; tools that need the graph
/// after them (ember compare) run them alone.
Error runStagesBeforeLowering(Function& function, const Backend& backend, const CompileOptions& options,
                              PassGate& gate);

/// Optimizes and lowers `function` for `backend` in place (the graph stages
/// of the pipeline), running the verifier after each pass when asked.
Error optimizeAndLower(Function& function, const Backend& backend, const CompileOptions& options);

/// The whole pipeline: graph stages, IRGen, IR optimizer, memory planning,
/// backend.compile. Consumes `function` (it is rewritten in place).
Expected<CompiledModel> compileFunction(Function& function, std::unique_ptr<Backend> backend,
                                        const CompileOptions& options = {});

/// The one-call API: compiles `function` for the registered backend
/// `backendName`, checks `inputs` against the signature, runs once and
/// returns the outputs by name.
Expected<std::map<std::string, Tensor>> compileAndRun(Function& function, const std::string& backendName,
                                                      std::map<std::string, Tensor> inputs,
                                                      const CompileOptions& options = {});

/// Checks the context's inputs against the model's signature: every input
/// present, with the right element kind and shape. Names the input.
Error checkInputs(const CompiledModel& model, const ExecutionContext& context);

}  // namespace ember
