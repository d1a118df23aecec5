// Constant folding: evaluates every primitive whose inputs are all Constants
// with the reference kernels and replaces it by one Constant per result.
#include "PassUtils.h"
#include "ember/Kernels.h"
#include "ember/Pass.h"

namespace ember {
namespace {

// Folding must not turn a cheap op (Broadcast, Tile) into a huge weight.
constexpr size_t kMaxFoldedBytes = size_t(64) << 20;

class ConstantFolding : public FunctionPass {
 public:
  std::string name() const override { return "constant-folding"; }

  Expected<bool> run(Function& function) override {
    bool changed = false;
    // Topological order: a folded node's users see Constant inputs when visited.
    for (Node* node : function.topologicalOrder()) {
      if (node->info().category != OpCategory::Primitive || node->numInputs() == 0) continue;
      bool allConstant = true;
      std::vector<Type> inputTypes;
      for (const NodeValue& input : node->inputs()) {
        allConstant = allConstant && input.node->isConstant();
        inputTypes.push_back(input.type());
      }
      if (!allConstant) continue;
      size_t resultBytes = 0;
      for (const Type& type : node->resultTypes()) resultBytes += type.sizeInBytes();
      if (resultBytes > kMaxFoldedBytes) continue;
      if (!kernelSupports(node->kind(), inputTypes, node->resultTypes())) continue;

      std::vector<ConstTensorRef> inputs;
      inputs.reserve(node->numInputs());
      for (const NodeValue& input : node->inputs()) inputs.push_back(input.node->payload().ref());
      std::vector<Tensor> results;
      std::vector<TensorRef> outputs;
      results.reserve(node->numResults());
      outputs.reserve(node->numResults());
      for (const Type& type : node->resultTypes()) results.emplace_back(type);
      for (Tensor& result : results) outputs.push_back(result.ref());
      if (Error error = runKernel(node->kind(), node->attrs(), inputs, outputs))
        return makeError("constant folding of node '", node->name(), "' (", opName(node->kind()),
                         "): ", error.message());

      std::vector<NodeValue> replacements;
      for (size_t i = 0; i < results.size(); ++i) {
        std::string base = results.size() == 1 ? node->name() : node->name() + "." + std::to_string(i);
        replacements.push_back(function.createConstant(base, std::move(results[i])));
      }
      // Dead constant inputs are left for DCE; only the folded node goes.
      for (unsigned i = 0; i < replacements.size(); ++i)
        function.replaceAllUsesWith(node->result(i), replacements[i]);
      const std::string name = node->name();
      function.erase(node);
      // A single result keeps the folded node's name, so reports still match the model.
      if (replacements.size() == 1) replacements[0].node->setName(function.uniqueName(name));
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<FunctionPass> createConstantFoldingPass() { return std::make_unique<ConstantFolding>(); }

}  // namespace ember
