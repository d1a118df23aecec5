// The runtime's partitioner (docs/design.md, "Scale"): splits a lowered function
// into partitions, each run by one backend, with the tensors that cross a
// partition boundary passed explicitly as partition inputs and outputs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Runtime.h"

namespace ember {

/// One partition: a self-contained function whose placeholders are either
/// model inputs or tensors produced by earlier partitions (by name), and whose
/// outputs are model outputs or tensors later partitions read.
struct Partition {
  size_t backendIndex = 0;  ///< into the backend list given to partitionFunction
  std::unique_ptr<Function> function;
};

/// A model output that no partition computes: a model input passed through
/// (the optimizer removed every op between them) or a constant.
struct StorageOutput {
  std::string name;
  std::string inputName;           ///< the model input it is, when not a constant
  std::optional<Tensor> constant;  ///< its value, when a constant
};

struct PartitionPlan {
  std::vector<Partition> partitions;  ///< in execution order
  std::vector<FallbackNode> fallbackNodes;
  std::vector<StorageOutput> storageOutputs;
};

/// "i8q<1x8x8x8:0.01,-128>, f32<8>": a node's input types, for messages.
std::string inputTypesOf(const Node& node);

/// " ('npu': why; ...)": each backend's unsupportedReason for `info`, where
/// it gives one, for the "unsupported by" errors; "" when none does.
std::string unsupportedReasons(const std::vector<const Backend*>& backends, const NodeInfo& info);

/// Whether `node` is a pure view (its op has the View trait, e.g. Reshape).
bool isPureView(const Node& node);

/// The pure views of `function` connected, through other views, to a compute
/// node: no backend runs them, so supports() is not asked about them and they
/// go with that node's backend. A view between model inputs, constants and
/// outputs only is not attached: it is placed by supports() like any node.
std::unordered_set<const Node*> attachedViews(const Function& function);
/// Places every non-storage node of `function` on the first backend of
/// `backends` that supports it (backends[0] is the target), then groups the
/// nodes into as few partitions as a topological order allows. An attached
/// view goes with its producer's backend (else a consumer's), so it never
/// splits a partition. Fails, naming the node, when no backend supports a node.
Expected<PartitionPlan> partitionFunction(const Function& function,
                                          const std::vector<const Backend*>& backends);

}  // namespace ember
