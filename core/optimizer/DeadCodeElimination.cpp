// DCE: removes every node that does not feed a function output.
// Placeholders are the function's signature and always stay.
#include <unordered_set>

#include "ember/Pass.h"

namespace ember {
namespace {

class DeadCodeElimination : public FunctionPass {
 public:
  std::string name() const override { return "dce"; }

  Expected<bool> run(Function& function) override {
    std::unordered_set<const Node*> live;
    std::vector<Node*> worklist;
    for (const auto& [name, value] : function.outputs())
      if (live.insert(value.node).second) worklist.push_back(value.node);
    while (!worklist.empty()) {
      Node* node = worklist.back();
      worklist.pop_back();
      for (const NodeValue& input : node->inputs())
        if (live.insert(input.node).second) worklist.push_back(input.node);
    }
    // Users come after their inputs in topological order, so erasing in
    // reverse order never erases a node that still has a use.
    const std::vector<Node*> order = function.topologicalOrder();
    bool changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* node = *it;
      if (node->isPlaceholder() || live.count(node)) continue;
      function.erase(node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<FunctionPass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

}  // namespace ember
