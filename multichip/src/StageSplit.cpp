// Pipeline stages of a quantized graph (StageSplit.h, docs/multichip.md).
#include "ember/multichip/StageSplit.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace ember::multichip {

std::vector<Node*> computeNodes(const Function& function) {
  std::vector<Node*> nodes;
  for (Node* node : function.topologicalOrder())
    if (!node->isPlaceholder() && !node->isConstant()) nodes.push_back(node);
  return nodes;
}

std::string cutTensorName(const NodeValue& value) {
  return value.resNo == 0 ? value.node->name() : value.node->name() + ":" + std::to_string(value.resNo);
}

std::vector<int64_t> cutBytes(const std::vector<Node*>& nodes) {
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  // A value produced at p and last read at q crosses every cut j with p < j <= q.
  std::vector<int64_t> difference(nodes.size() + 2, 0);
  std::map<std::pair<const Node*, unsigned>, size_t> lastRead;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const NodeValue& v : nodes[i]->inputs())
      if (position.count(v.node)) lastRead[{v.node, v.resNo}] = i;
  for (const auto& [value, last] : lastRead) {
    const size_t produced = position.at(value.first);
    const int64_t bytes = int64_t(value.first->resultType(value.second).sizeInBytes());
    difference[produced + 1] += bytes;
    difference[last + 1] -= bytes;
  }
  std::vector<int64_t> bytes(nodes.size() + 1, 0);
  int64_t running = 0;
  for (size_t j = 0; j <= nodes.size(); ++j) {
    running += difference[j];
    bytes[j] = running;
  }
  return bytes;
}

Expected<std::vector<size_t>> balanceStages(const std::vector<std::vector<double>>& stageCost,
                                            const std::vector<std::vector<double>>& boundaryCost,
                                            size_t numNodes) {
  const size_t stages = stageCost.size();
  if (stages == 0) return makeError("a pipeline needs at least one stage");
  if (numNodes < stages)
    return makeError("the model has ", numNodes, " compute nodes, fewer than the ", stages,
                     " pipeline stages");
  // prefix[k][j]: the first j nodes' time on stage k's chip.
  std::vector<std::vector<double>> prefix(stages, std::vector<double>(numNodes + 1, 0.0));
  for (size_t k = 0; k < stages; ++k)
    for (size_t j = 0; j < numNodes; ++j) prefix[k][j + 1] = prefix[k][j] + stageCost[k][j];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][j]: the smallest interval of stages 0..k covering the first j nodes.
  std::vector<std::vector<double>> best(stages, std::vector<double>(numNodes + 1, kInf));
  std::vector<std::vector<size_t>> cut(stages, std::vector<size_t>(numNodes + 1, 0));
  for (size_t j = 1; j <= numNodes; ++j) best[0][j] = prefix[0][j];
  for (size_t k = 1; k < stages; ++k) {
    for (size_t j = k + 1; j <= numNodes; ++j) {
      for (size_t i = k; i < j; ++i) {
        if (best[k - 1][i] == kInf) continue;
        const double interval =
            std::max({best[k - 1][i], prefix[k][j] - prefix[k][i], boundaryCost[k - 1][i]});
        // Ties go to the later cut, so that earlier stages take more (deterministic).
        if (interval <= best[k][j]) {
          best[k][j] = interval;
          cut[k][j] = i;
        }
      }
    }
  }
  std::vector<size_t> starts(stages + 1, 0);
  starts[stages] = numNodes;
  size_t end = numNodes;
  for (size_t k = stages - 1; k > 0; --k) {
    end = cut[k][end];
    starts[k] = end;
  }
  return starts;
}

namespace {

/// A value of the whole function -> its copy in a stage's function.
using ValueMap = std::map<std::pair<const Node*, unsigned>, NodeValue>;

/// The stage's outputs: results that nodes of other stages read, under their
/// cut name, and the model outputs it computes (an alias when already cut).
void addStageOutputs(const Function& function, const std::set<const Node*>& inStage, const ValueMap& mapped,
                     StageFunction& stage) {
  Function& sub = *stage.function;
  std::set<std::string> exported;
  for (Node* user : function.nodes()) {
    if (inStage.count(user)) continue;
    for (const NodeValue& v : user->inputs()) {
      if (!inStage.count(v.node)) continue;
      const std::string cutName = cutTensorName(v);
      if (exported.insert(cutName).second) {
        sub.addOutput(cutName, mapped.at({v.node, v.resNo}));
        stage.outputs.push_back(cutName);
      }
    }
  }
  for (const auto& [outputName, value] : function.outputs()) {
    if (!inStage.count(value.node)) continue;
    // A value already leaving as a cut tensor is not a second output of the stage.
    if (const std::string cutName = cutTensorName(value); exported.count(cutName)) {
      stage.outputAliases.push_back({outputName, cutName});
      continue;
    }
    sub.addOutput(outputName, mapped.at({value.node, value.resNo}));
    stage.outputs.push_back(outputName);
  }
}

}  // namespace

Expected<StageFunction> buildStageFunction(const Function& function, const std::vector<Node*>& nodes,
                                           const std::string& name) {
  StageFunction stage;
  stage.function = std::make_unique<Function>(name);
  Function& sub = *stage.function;
  const std::set<const Node*> inStage(nodes.begin(), nodes.end());
  ValueMap mapped;
  auto lookup = [&](const NodeValue& v) -> Expected<NodeValue> {
    const auto key = std::make_pair(static_cast<const Node*>(v.node), v.resNo);
    if (auto it = mapped.find(key); it != mapped.end()) return it->second;
    if (v.node->isConstant()) {
      Node* made = sub.createConstant(v.node->name(), v.node->payload());
      return mapped[key] = made->result(0);
    }
    const std::string wanted = v.node->isPlaceholder() ? v.node->name() : cutTensorName(v);
    Node* made = sub.createPlaceholder(wanted, v.type());
    if (made->name() != wanted)
      return makeError("stage '", name, "': input '", wanted, "' clashes with a node of the same name");
    stage.inputs.push_back(wanted);
    return mapped[key] = made->result(0);
  };
  for (Node* node : nodes) {
    std::vector<NodeValue> inputs;
    for (const NodeValue& v : node->inputs()) {
      EMBER_ASSIGN_OR_RETURN(NodeValue input, lookup(v));
      inputs.push_back(input);
    }
    Expected<Node*> made = sub.create(node->kind(), node->name(), std::move(inputs), node->attrs());
    if (!made) return made.error().withContext("stage '" + name + "'");
    for (unsigned r = 0; r < node->numResults(); ++r) mapped[{node, r}] = (*made)->result(r);
  }
  addStageOutputs(function, inStage, mapped, stage);
  EMBER_RETURN_IF_ERROR(sub.verify().withContext("stage '" + name + "'"));
  return stage;
}

}  // namespace ember::multichip
