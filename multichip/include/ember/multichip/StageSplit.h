// Splitting a model into pipeline stages (docs/multichip.md): the compute
// nodes of the quantized graph in topological order, cut into contiguous
// stages whose costs (the NPU cost model's cycles on each stage's chip, and
// the transfer of the tensors cut between neighbours) are balanced; then each
// stage as a self-contained function whose placeholders are model inputs or
// tensors cut from earlier stages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"

namespace ember::multichip {

/// The nodes a stage may hold: every node but placeholders and constants, in
/// the function's deterministic topological order.
std::vector<Node*> computeNodes(const Function& function);

/// For j in [0, nodes.size()], the bytes of the tensors produced by a node
/// before j and read by node j or later: what a stage boundary before node j
/// would transfer (model outputs go to the host, not across the cut).
std::vector<int64_t> cutBytes(const std::vector<Node*>& nodes);

/// Balances `stageCost.size()` contiguous stages over `numNodes` nodes.
/// stageCost[k][j] is node j's time (ns) on stage k's chip; boundaryCost[k][j]
/// the time (ns) to send the tensors cut before node j from stage k to k+1.
/// Minimises the largest stage or boundary time (the pipeline's interval);
/// returns the first node of each stage plus numNodes at the end. Every
/// stage gets at least one node.
Expected<std::vector<size_t>> balanceStages(const std::vector<std::vector<double>>& stageCost,
                                            const std::vector<std::vector<double>>& boundaryCost,
                                            size_t numNodes);

/// A stage as its own function, and the tensors it exchanges.
struct StageFunction {
  std::unique_ptr<Function> function;
  std::vector<std::string> inputs;   ///< model inputs and cut tensors it reads, by name
  std::vector<std::string> outputs;  ///< cut tensors later stages read and model outputs it computes
  /// Model outputs that are also cut tensors: (model output, the cut name it leaves under).
  std::vector<std::pair<std::string, std::string>> outputAliases;
};

/// Builds the function of the stage holding `nodes` (a subset of `function`'s
/// compute nodes): values from other nodes become placeholders named by
/// cutTensorName; constants are copied; results read outside the set, and the
/// model outputs it computes, become outputs.
Expected<StageFunction> buildStageFunction(const Function& function, const std::vector<Node*>& nodes,
                                           const std::string& name);

/// The name under which a value cut between stages travels.
std::string cutTensorName(const NodeValue& value);

}  // namespace ember::multichip
