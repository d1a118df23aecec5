// ONNX ops whose output shape depends on input values: NonZero, Unique,
// NonMaxSuppression. With constant operands (initializers, folded values, or
// graph inputs bound by shape specialisation) the result is computed at import
// time with its exact shape. Otherwise the op keeps its static upper bound and
// the function gets one more output, "<first output>.valid_count", the i64
// number of valid entries (docs/importer.md, "Value-dependent output shapes").

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

/// Which axis of each bounded result holds the value-dependent extent (-1:
/// not bounded), in ONNX output order; the op's last result is the count.
using BoundedAxes = std::vector<int64_t>;

/// Defines the ONNX outputs from the op's results: sliced to the count when it
/// is a constant, else at their bound with the count as an extra output.
Error finishBounded(NodeBuilder& b, const std::vector<Value>& results, const BoundedAxes& axes) {
  const Value& count = results.back();
  for (size_t i = 0; i < axes.size(); ++i) {
    Value v = results[i];
    if (count.isConstant() && axes[i] >= 0) {
      const int64_t valid = count.constant->as<int64_t>()[0];
      Dims ends = v.dims();
      ends[size_t(axes[i])] = valid;
      Attributes attrs{{"starts", std::vector<int64_t>(v.rank(), 0)},
                       {"ends", std::vector<int64_t>(ends.begin(), ends.end())},
                       {"steps", std::vector<int64_t>(v.rank(), 1)}};
      EMBER_TRY(v, b.emit(OpKind::Slice, {v}, std::move(attrs), "exact" + std::to_string(i)));
    }
    if (Error e = b.setOutput(i, std::move(v))) return e;
  }
  if (!count.isConstant() && b.numOutputs() > 0)
    b.addExtraOutput(b.proto().output(0) + ".valid_count", count);
  return Error::success();
}

Error importNonZero(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  b.preferConstant(x);
  EMBER_TRY(std::vector<Value> results, b.emitAll(OpKind::NonZero, {x}));
  return finishBounded(b, results, {1});
}

Error importUnique(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  b.preferConstant(x);
  const int64_t rank = int64_t(x.rank());
  int64_t axis = rank;  // no axis: the flattened input
  if (b.hasAttr("axis")) {
    EMBER_TRY(int64_t given, b.attrInt("axis"));
    EMBER_TRY(axis, normalizeAxis(given, rank));
  }
  EMBER_TRY(int64_t sorted, b.attrInt("sorted", 1));
  if (sorted != 0 && sorted != 1) return makeError("attribute 'sorted' must be 0 or 1, got ", sorted);
  EMBER_TRY(std::vector<Value> results,
            b.emitAll(OpKind::Unique, {x}, Attributes{{"axis", axis}, {"sorted", sorted}}));
  // Y is bounded along the axis (axis 0 when flattened); inverse_indices is exact.
  return finishBounded(b, results, {axis == rank ? 0 : axis, 0, -1, 0});
}

Error importNonMaxSuppression(NodeBuilder& b) {
  EMBER_TRY(Value boxes, b.input(0));
  EMBER_TRY(Value scores, b.input(1));
  b.preferConstant(boxes);
  b.preferConstant(scores);
  EMBER_TRY(int64_t centerPointBox, b.attrInt("center_point_box", 0));
  // The bound and thresholds are attributes of the Ember op: constants.
  int64_t maxPerClass = 0;
  double iouThreshold = 0;
  Attributes attrs;
  if (b.hasInput(2)) {
    EMBER_TRY(std::vector<int64_t> v, b.constInts(2, "max_output_boxes_per_class"));
    if (v.size() != 1) return makeError("input 'max_output_boxes_per_class' must hold one value");
    maxPerClass = v[0];
  }
  if (b.hasInput(3)) {
    EMBER_TRY(std::vector<double> v, b.constFloats(3, "iou_threshold"));
    if (v.size() != 1) return makeError("input 'iou_threshold' must hold one value");
    iouThreshold = v[0];
  }
  if (b.hasInput(4)) {
    EMBER_TRY(std::vector<double> v, b.constFloats(4, "score_threshold"));
    if (v.size() != 1) return makeError("input 'score_threshold' must hold one value");
    attrs.set("score_threshold", v[0]);
  }
  if (maxPerClass < 0) maxPerClass = 0;  // ONNX Runtime treats a negative bound as 0
  attrs.set("center_point_box", centerPointBox);
  attrs.set("max_output_boxes_per_class", maxPerClass);
  attrs.set("iou_threshold", iouThreshold);
  EMBER_TRY(std::vector<Value> results,
            b.emitAll(OpKind::NonMaxSuppression, {boxes, scores}, std::move(attrs)));
  return finishBounded(b, results, {0});
}

}  // namespace

void registerValueDependentOps(OpTable& t) {
  t["NonZero"] = importNonZero;
  t["Unique"] = importUnique;
  t["NonMaxSuppression"] = importNonMaxSuppression;
}

}  // namespace ember::onnx_import
