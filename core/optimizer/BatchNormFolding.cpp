// BatchNorm folding: BatchNorm(Conv(x, w, b)) over the Conv's channel axis,
// with constant parameters, becomes one Conv with scaled filters and a
// shifted bias:
//   s = scale / sqrt(var + eps);  w'[o] = w[o] * s[o];  b' = (b - mean) * s + bias.
#include <algorithm>
#include <cmath>

#include "PassUtils.h"
#include "ember/OpAttrs.h"
#include "ember/Pass.h"

namespace ember {
namespace {

class BatchNormFolding : public FunctionPass {
 public:
  std::string name() const override { return "batchnorm-folding"; }

  Expected<bool> run(Function& function) override {
    bool changed = false;
    auto uses = function.computeUses();
    auto outputs = optimizer::outputNodes(function);
    for (Node* node : function.topologicalOrder()) {
      if (node->kind() != OpKind::BatchNorm) continue;
      Node* conv = node->input(0).node;
      if (conv->kind() != OpKind::Conv || outputs.count(conv) || uses[conv].size() != 1) continue;
      if (!foldInto(function, node, conv)) continue;
      changed = true;
      uses = function.computeUses();
      outputs = optimizer::outputNodes(function);
    }
    return changed;
  }

 private:
  static bool foldInto(Function& function, Node* bn, Node* conv) {
    const Type& outType = conv->resultType();
    const int64_t rank = int64_t(outType.rank());
    const int64_t channelAxis = rank - 1;  // NHWC
    const BatchNormAttrs norm = bn->attrs<BatchNormAttrs>();
    int64_t axis = norm.axis;
    if (axis < 0) axis += rank;
    if (axis != channelAxis || !isFloat(outType.kind)) return false;
    for (size_t i = 1; i < bn->numInputs(); ++i)
      if (!bn->input(i).node->isConstant()) return false;
    const Node* filterNode = conv->input(1).node;
    const Node* biasNode = conv->input(2).node;
    if (!filterNode->isConstant() || !biasNode->isConstant()) return false;

    const int64_t channels = outType.dims[size_t(channelAxis)];
    const Tensor& scale = bn->input(1).node->payload();
    const Tensor& shift = bn->input(2).node->payload();
    const Tensor& mean = bn->input(3).node->payload();
    const Tensor& var = bn->input(4).node->payload();
    for (const Tensor* param : {&scale, &shift, &mean, &var, &biasNode->payload()})
      if (param->type().numElements() != channels) return false;
    const Tensor& filter = filterNode->payload();
    if (filter.type().rank() == 0 || filter.type().dims[0] != channels) return false;

    const double epsilon = norm.epsilon;
    Tensor newFilter(filter.type());
    Tensor newBias(biasNode->payload().type());
    const int64_t perChannel = filter.type().numElements() / std::max<int64_t>(channels, 1);
    for (int64_t o = 0; o < channels; ++o) {
      const double s = scale.elementAsDouble(o) / std::sqrt(var.elementAsDouble(o) + epsilon);
      for (int64_t k = 0; k < perChannel; ++k)
        newFilter.setElementFromDouble(o * perChannel + k, filter.elementAsDouble(o * perChannel + k) * s);
      const double b = biasNode->payload().elementAsDouble(o);
      newBias.setElementFromDouble(o, (b - mean.elementAsDouble(o)) * s + shift.elementAsDouble(o));
    }

    Node* filterConst = function.createConstant(filterNode->name() + ".folded", std::move(newFilter));
    Node* biasConst = function.createConstant(biasNode->name() + ".folded", std::move(newBias));
    Expected<Node*> folded =
        function.create(OpKind::Conv, conv->name(),
                        {conv->input(0), filterConst->result(), biasConst->result()}, conv->attrs());
    if (!folded || (*folded)->resultType() != bn->resultType()) {
      std::vector<Node*> created = {filterConst, biasConst};
      if (folded) created.insert(created.begin(), *folded);
      optimizer::eraseIfDead(function, created);
      return false;
    }
    // A copy: replacing bn leaves conv dead, and the rewrite may erase it.
    const std::string convName = conv->name();  // NOLINT(performance-unnecessary-copy-initialization)
    optimizer::replaceNode(function, bn, {(*folded)->result()});
    (*folded)->setName(function.uniqueName(convName));
    return true;
  }
};

}  // namespace

std::unique_ptr<FunctionPass> createBatchNormFoldingPass() { return std::make_unique<BatchNormFolding>(); }

}  // namespace ember
