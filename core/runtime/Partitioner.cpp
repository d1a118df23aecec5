// Partitioning by backend support, and the function that runs the partitions.
#include "Partitioner.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace {

std::string valueKey(NodeValue v) {
  return v.resNo == 0 ? v.node->name() : v.node->name() + ":" + std::to_string(v.resNo);
}

/// The nodes of each partition, in a topological order that stays on one
/// backend as long as some ready node allows it (fewer transfers).
std::vector<std::pair<size_t, std::vector<Node*>>> groupNodes(
    const Function& function, const std::unordered_map<const Node*, size_t>& placement) {
  std::vector<Node*> order = function.topologicalOrder();
  std::unordered_map<const Node*, size_t> position, pending;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  auto uses = function.computeUses();
  for (Node* node : order) {
    if (!placement.count(node)) continue;
    std::set<const Node*> producers;
    for (const NodeValue& v : node->inputs())
      if (placement.count(v.node)) producers.insert(v.node);
    pending[node] = producers.size();
  }
  // Ready nodes by topological position, so the result is deterministic.
  std::set<size_t> ready;
  for (auto& [node, count] : pending)
    if (count == 0) ready.insert(position[node]);

  std::vector<std::pair<size_t, std::vector<Node*>>> groups;
  while (!ready.empty()) {
    size_t pick = *ready.begin();
    if (!groups.empty()) {
      for (size_t candidate : ready)
        if (placement.at(order[candidate]) == groups.back().first) {
          pick = candidate;
          break;
        }
    }
    Node* node = order[pick];
    ready.erase(pick);
    size_t backend = placement.at(node);
    if (groups.empty() || groups.back().first != backend) groups.push_back({backend, {}});
    groups.back().second.push_back(node);
    std::set<const Node*> released;
    for (const Use& use : uses[node]) {
      if (!placement.count(use.user) || !released.insert(use.user).second) continue;
      if (--pending[use.user] == 0) ready.insert(position[use.user]);
    }
  }
  return groups;
}

}  // namespace

std::string inputTypesOf(const Node& node) {
  std::string types;
  for (const NodeValue& v : node.inputs()) types += (types.empty() ? "" : ", ") + v.type().str();
  return types;
}

/// Whether `node` is a pure view (a View op such as Reshape): IRGen makes it
/// a view of its input, so it runs no kernel and may sit in any partition.
bool isPureView(const Node& node) { return node.info().has(View); }

std::unordered_set<const Node*> attachedViews(const Function& function) {
  std::unordered_set<const Node*> attached;
  auto isCompute = [](const Node* n) { return n->info().category != OpCategory::Storage && !isPureView(*n); };
  const std::vector<Node*> order = function.topologicalOrder();
  // Downstream of a compute node, then upstream of one, through views.
  for (const Node* node : order)
    if (isPureView(*node) && (isCompute(node->input(0).node) || attached.count(node->input(0).node)))
      attached.insert(node);
  auto uses = function.computeUses();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* node = *it;
    if (!isPureView(*node) || attached.count(node)) continue;
    for (const Use& use : uses[const_cast<Node*>(node)])
      if (isCompute(use.user) || attached.count(use.user)) {
        attached.insert(node);
        break;
      }
  }
  return attached;
}

namespace {

/// Places each attached view with the compute it connects, so that it never
/// splits a partition: with its producer's backend, else with a consumer's.
void placeViews(const Function& function, const std::unordered_set<const Node*>& attached,
                const std::vector<Node*>& order, std::unordered_map<const Node*, size_t>& placement) {
  for (Node* node : order)
    if (attached.count(node)) {
      auto producer = placement.find(node->input(0).node);
      if (producer != placement.end()) placement[node] = producer->second;
    }
  auto uses = function.computeUses();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (!attached.count(node) || placement.count(node)) continue;
    for (const Use& use : uses[node]) {
      auto consumer = placement.find(use.user);
      if (consumer == placement.end()) continue;
      placement[node] = consumer->second;
      break;
    }
  }
}

/// ": why" when `backend` gives a reason for not taking `info`, else "".
std::string detailOf(const Backend& backend, const NodeInfo& info) {
  std::string why = backend.unsupportedReason(info);
  return why.empty() ? why : ": " + why;
}

/// Places every compute node on the first backend that supports it (a node
/// off backend 0 is reported as a fallback, with backend 0's reason); views
/// attached to compute wait.
Error placeNodes(const std::vector<Node*>& order, const std::unordered_set<const Node*>& attached,
                 const std::vector<const Backend*>& backends,
                 std::unordered_map<const Node*, size_t>& placement, PartitionPlan& plan) {
  for (Node* node : order) {
    if (node->info().category == OpCategory::Storage || attached.count(node)) continue;
    NodeInfo info = NodeInfo::of(*node);
    size_t chosen = backends.size();
    for (size_t b = 0; b < backends.size() && chosen == backends.size(); ++b)
      if (backends[b]->supports(info)) chosen = b;
    if (chosen == backends.size()) {
      std::string names;
      for (const Backend* b : backends) names += (names.empty() ? "'" : ", '") + b->name() + "'";
      return makeError("node '", node->name(), "' (", node->info().name, "): unsupported by backends ", names,
                       " for inputs (", inputTypesOf(*node), ")", unsupportedReasons(backends, info));
    }
    placement[node] = chosen;
    if (chosen != 0)
      plan.fallbackNodes.push_back({node->name(), std::string(node->info().name), backends[chosen]->name(),
                                    "'" + backends[0]->name() + "' does not support " +
                                        std::string(node->info().name) + " on (" + inputTypesOf(*node) + ")" +
                                        detailOf(*backends[0], info)});
  }
  return Error::success();
}

/// Partition p as a function of its own: its nodes, a Placeholder per value
/// it reads from elsewhere, an output per value a later partition reads (under
/// its value key) and the model outputs it computes.
Expected<std::unique_ptr<Function>> buildPartition(const Function& function, size_t p,
                                                   const std::vector<Node*>& nodes,
                                                   const std::unordered_map<const Node*, size_t>& partitionOf,
                                                   std::unordered_map<const Node*, std::vector<Use>>& uses) {
  auto sub = std::make_unique<Function>(function.name() + "." + std::to_string(p));
  std::map<std::pair<const Node*, unsigned>, NodeValue> mapped;
  auto lookup = [&](NodeValue v) -> NodeValue {
    auto key = std::make_pair(static_cast<const Node*>(v.node), v.resNo);
    auto it = mapped.find(key);
    if (it != mapped.end()) return it->second;
    Node* made = v.node->isConstant() ? sub->createConstant(v.node->name(), v.node->sharedPayload())
                                      : sub->createPlaceholder(valueKey(v), v.type());
    return mapped[key] = NodeValue(made, made->isConstant() ? v.resNo : 0);
  };
  for (Node* node : nodes) {
    std::vector<NodeValue> inputs;
    inputs.reserve(node->numInputs());
    for (const NodeValue& v : node->inputs()) inputs.push_back(lookup(v));
    Expected<Node*> made = sub->create(node->kind(), node->name(), std::move(inputs), node->attrs());
    if (!made) return made.error().withContext("partitioning");
    for (unsigned r = 0; r < node->numResults(); ++r) mapped[{node, r}] = NodeValue(*made, r);
  }
  // Results read by a later partition leave under their value key.
  std::set<std::string> exported;
  for (Node* node : nodes) {
    for (const Use& use : uses[node]) {
      auto other = partitionOf.find(use.user);
      if (other == partitionOf.end() || other->second == p) continue;
      NodeValue v = use.user->input(use.operand);
      if (exported.insert(valueKey(v)).second) sub->addOutput(valueKey(v), mapped.at({v.node, v.resNo}));
    }
  }
  for (const auto& [name, value] : function.outputs())
    if (partitionOf.count(value.node) && partitionOf.at(value.node) == p && !exported.count(name))
      sub->addOutput(name, mapped.at({value.node, value.resNo}));
  EMBER_RETURN_IF_ERROR(sub->verify().withContext("partition " + std::to_string(p)));
  return sub;
}

}  // namespace

std::string unsupportedReasons(const std::vector<const Backend*>& backends, const NodeInfo& info) {
  std::string reasons;
  for (const Backend* b : backends)
    if (std::string why = b->unsupportedReason(info); !why.empty())
      reasons += (reasons.empty() ? "" : "; ") + ("'" + b->name() + "': " + why);
  return reasons.empty() ? reasons : " (" + reasons + ")";
}

Expected<PartitionPlan> partitionFunction(const Function& function,
                                          const std::vector<const Backend*>& backends) {
  assert(!backends.empty());
  PartitionPlan plan;
  std::unordered_map<const Node*, size_t> placement;
  const std::vector<Node*> order = function.topologicalOrder();
  // Views attached to compute go with it; a view between model inputs,
  // constants and outputs only is placed by supports() like any node.
  const std::unordered_set<const Node*> attached = attachedViews(function);
  EMBER_RETURN_IF_ERROR(placeNodes(order, attached, backends, placement, plan));
  placeViews(function, attached, order, placement);
  for (const auto& [name, value] : function.outputs()) {
    if (placement.count(value.node)) continue;
    if (value.node->isConstant())
      plan.storageOutputs.push_back({name, "", value.node->payload()});
    else
      plan.storageOutputs.push_back({name, value.node->name(), std::nullopt});
  }

  auto groups = groupNodes(function, placement);
  std::unordered_map<const Node*, size_t> partitionOf;
  for (size_t p = 0; p < groups.size(); ++p)
    for (Node* node : groups[p].second) partitionOf[node] = p;
  auto uses = function.computeUses();
  for (size_t p = 0; p < groups.size(); ++p) {
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Function> sub,
                           buildPartition(function, p, groups[p].second, partitionOf, uses));
    plan.partitions.push_back({groups[p].first, std::move(sub)});
  }
  return plan;
}

}  // namespace ember
