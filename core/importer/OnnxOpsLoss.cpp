// ONNX loss ops, composed from primitives: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (LogSoftmax, then the same NLL).

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

Expected<Value> reduceLoss(NodeBuilder& b, const Value& loss, const std::optional<Value>& weights,
                           const std::string& reduction, const Dims& targetDims);

/// The weight of each element: weight[index] (when given), 0 where ignored
/// (not `valid`); nullopt: every weight is 1.
Expected<std::optional<Value>> elementWeights(NodeBuilder& b, const std::optional<Value>& weight,
                                              const Value& index, const std::optional<Value>& valid,
                                              ElemKind kind) {
  std::optional<Value> weights;
  if (weight) {
    EMBER_TRY(weights, b.emit(OpKind::Gather, {*weight, index}, Attributes{{"axis", int64_t(0)}}, "weights"));
  }
  if (valid) {
    EMBER_TRY(weights,
              b.emit(OpKind::Select, {*valid, weights ? *weights : b.scalar(kind, 1), b.scalar(kind, 0)}, {},
                     "weights_valid"));
  }
  return weights;
}

/// The NLL of `logProb` [N, C, d...] at `target` [N, d...] with optional
/// per-class `weight` [C], `reduction` none|sum|mean and `ignore_index`.
Expected<Value> negativeLogLikelihood(NodeBuilder& b, const Value& logProb, const Value& target,
                                      const std::optional<Value>& weight, const std::string& reduction,
                                      std::optional<int64_t> ignoreIndex) {
  if (logProb.rank() < 2) return makeError("input must have rank >= 2, not ", logProb.rank());
  Dims targetDims = logProb.dims();
  targetDims.erase(targetDims.begin() + 1);
  if (target.dims() != targetDims)
    return makeError("target ", target.type.str(), " must have dims ", dimsStr(targetDims));
  if (target.type.kind != ElemKind::I64 && target.type.kind != ElemKind::I32)
    return makeError("target must be int32 or int64, not ", elemKindName(target.type.kind));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return makeError("unknown reduction '", reduction, "' (expected none, sum or mean)");
  const ElemKind kind = logProb.type.kind;

  Value index = target;
  std::optional<Value> valid;
  if (ignoreIndex) {
    // An ignored target may be out of range: gather class 0 there, then weigh it 0.
    const Value ignored = b.scalar(target.type.kind, double(*ignoreIndex));
    EMBER_TRY(Value isIgnored, b.emit(OpKind::Equal, {target, ignored}, {}, "ignored"));
    EMBER_TRY(valid, b.emit(OpKind::Not, {isIgnored}, {}, "valid"));
    EMBER_TRY(index, b.emit(OpKind::Select, {*valid, target, b.scalar(target.type.kind, 0)}, {}, "index"));
  }
  Dims expanded = targetDims;
  expanded.insert(expanded.begin() + 1, 1);
  EMBER_TRY(Value column, b.reshape(index, expanded, "index_column"));
  EMBER_TRY(Value picked,
            b.emit(OpKind::GatherElements, {logProb, column}, Attributes{{"axis", int64_t(1)}}, "picked"));
  EMBER_TRY(picked, b.reshape(picked, targetDims, "picked_flat"));

  // The weight of each element: weight[target], 0 where ignored; none: 1.
  EMBER_TRY(std::optional<Value> weights, elementWeights(b, weight, index, valid, kind));
  Value loss = picked;
  if (weights) {
    EMBER_TRY(loss, b.emit(OpKind::Mul, {loss, *weights}, {}, "weighted"));
  }
  EMBER_TRY(loss, b.emit(OpKind::Neg, {loss}, {}, reduction == "none" ? "" : "loss"));
  if (reduction == "none") return loss;
  return reduceLoss(b, loss, weights, reduction, targetDims);
}

/// The sum of the element losses, or their mean: divided by the element
/// count, or by the sum of the element weights when there are any.
Expected<Value> reduceLoss(NodeBuilder& b, const Value& loss, const std::optional<Value>& weights,
                           const std::string& reduction, const Dims& targetDims) {
  const ElemKind kind = loss.type.kind;
  std::vector<int64_t> all;
  all.reserve(targetDims.size());
  for (size_t d = 0; d < targetDims.size(); ++d) all.push_back(int64_t(d));
  const Attributes sumAll{{"axes", all}, {"keepdims", int64_t(0)}};
  EMBER_TRY(Value total, b.emit(OpKind::ReduceSum, {loss}, sumAll, reduction == "sum" ? "" : "total"));
  if (reduction == "sum") return total;
  Value count = b.scalar(kind, double(product(targetDims, 0, targetDims.size())));
  if (weights) {
    EMBER_TRY(Value full,
              b.emit(OpKind::Broadcast, {*weights}, Attributes{{"shape", targetDims}}, "weights_full"));
    EMBER_TRY(count, b.emit(OpKind::ReduceSum, {full}, sumAll, "weight_sum"));
  }
  return b.emit(OpKind::Div, {total, count});
}

Expected<std::optional<int64_t>> ignoreIndexAttr(NodeBuilder& b) {
  if (!b.hasAttr("ignore_index")) return std::optional<int64_t>();
  EMBER_TRY(int64_t index, b.attrInt("ignore_index"));
  return std::optional<int64_t>(index);
}

/// The optional class weights, input 2 of both losses.
Expected<std::optional<Value>> weightInput(NodeBuilder& b) {
  if (!b.hasInput(2)) return std::optional<Value>();
  EMBER_TRY(Value weight, b.input(2));
  return std::optional<Value>(weight);
}

Error importNegativeLogLikelihoodLoss(NodeBuilder& b) {
  EMBER_TRY(Value input, b.input(0));
  EMBER_TRY(Value target, b.input(1));
  EMBER_TRY(std::optional<Value> weight, weightInput(b));
  EMBER_TRY(std::string reduction, b.attrString("reduction", "mean"));
  EMBER_TRY(std::optional<int64_t> ignoreIndex, ignoreIndexAttr(b));
  EMBER_TRY(Value loss, negativeLogLikelihood(b, input, target, weight, reduction, ignoreIndex));
  return b.setOutput(0, loss);
}

Error importSoftmaxCrossEntropyLoss(NodeBuilder& b) {
  EMBER_TRY(Value scores, b.input(0));
  EMBER_TRY(Value labels, b.input(1));
  EMBER_TRY(std::optional<Value> weight, weightInput(b));
  if (scores.rank() < 2) return makeError("scores must have rank >= 2, not ", scores.rank());
  EMBER_TRY(std::string reduction, b.attrString("reduction", "mean"));
  EMBER_TRY(std::optional<int64_t> ignoreIndex, ignoreIndexAttr(b));
  EMBER_TRY(Value logProb,
            b.emit(OpKind::LogSoftmax, {scores}, Attributes{{"axis", int64_t(1)}}, "log_prob"));
  EMBER_TRY(Value loss, negativeLogLikelihood(b, logProb, labels, weight, reduction, ignoreIndex));
  EMBER_RETURN_IF_ERROR(b.setOutput(0, loss));
  return b.setOutput(1, logProb);
}

}  // namespace

void registerLossOps(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = importNegativeLogLikelihoodLoss;
  t["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropyLoss;
}

}  // namespace ember::onnx_import
