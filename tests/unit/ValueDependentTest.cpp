// Value-dependent output shapes (NonZero, Unique, NonMaxSuppression): the
// reference kernels at their static bound against numpy's np.nonzero /
// np.unique and ONNX's NonMaxSuppression example, and the importer's two
// behaviours: exact shapes for constant (or bound) operands, the bound plus a
// "<output>.valid_count" output otherwise.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <vector>

#include "ember/Importer.h"
#include "ember/Kernels.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

std::vector<int64_t> i64s(const Tensor& t) {
  return std::vector<int64_t>(t.as<int64_t>(), t.as<int64_t>() + t.type().numElements());
}

/// Runs `kind` on `inputs`, results at the type rule's types.
std::vector<Tensor> run(OpKind kind, const std::vector<Tensor>& inputs, const Attributes& attrs = {}) {
  std::vector<Type> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  auto resultTypes = inferResultTypes(kind, types, attrs);
  EXPECT_TRUE(bool(resultTypes)) << resultTypes.error().message();
  std::vector<Tensor> results;
  for (const Type& t : *resultTypes) results.emplace_back(t);
  std::vector<ConstTensorRef> in;
  for (const Tensor& t : inputs) in.push_back(t.ref());
  std::vector<TensorRef> out;
  for (Tensor& t : results) out.push_back(t.ref());
  Error e = runKernel(kind, attrs, in, out);
  EXPECT_FALSE(e) << e.message();
  return results;
}

Tensor f32(Dims dims, std::vector<float> values) {
  return Tensor::fromValues<float>(ElemKind::F32, std::move(dims), values);
}

TEST(ValueDependentKernels, NonZeroPadsPastTheCountWithZeros) {
  // np.nonzero([[0, 1, 0], [2, 0, 3]]) = [[0, 1, 1], [1, 0, 2]]
  auto r = run(OpKind::NonZero, {f32({2, 3}, {0, 1, 0, 2, 0, 3})});
  EXPECT_EQ(r[0].type(), Type(ElemKind::I64, {2, 6}));
  EXPECT_EQ(i64s(r[0]), (std::vector<int64_t>{0, 1, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0}));
  EXPECT_EQ(i64s(r[1]), std::vector<int64_t>{3});
}

TEST(ValueDependentKernels, UniqueFlattenedSortedAndInFirstSeenOrder) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  // np.unique(x, return_index, return_inverse, return_counts)
  auto sorted = run(OpKind::Unique, {x}, {{"axis", int64_t(1)}, {"sorted", int64_t(1)}});
  EXPECT_EQ(std::vector<float>(sorted[0].as<float>(), sorted[0].as<float>() + 4),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(i64s(sorted[1]), (std::vector<int64_t>{1, 0, 3, 4, 0, 0}));
  EXPECT_EQ(i64s(sorted[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(i64s(sorted[3]), (std::vector<int64_t>{2, 1, 2, 1, 0, 0}));
  EXPECT_EQ(i64s(sorted[4]), std::vector<int64_t>{4});
  // ONNX's unsorted example: values in order of first occurrence.
  auto firstSeen = run(OpKind::Unique, {x}, {{"axis", int64_t(1)}, {"sorted", int64_t(0)}});
  EXPECT_EQ(std::vector<float>(firstSeen[0].as<float>(), firstSeen[0].as<float>() + 4),
            (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(i64s(firstSeen[1]), (std::vector<int64_t>{0, 1, 3, 4, 0, 0}));
  EXPECT_EQ(i64s(firstSeen[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(i64s(firstSeen[3]), (std::vector<int64_t>{1, 2, 2, 1, 0, 0}));
}

TEST(ValueDependentKernels, UniqueRowsAlongAnAxis) {
  // np.unique([[1,0,0],[1,0,0],[2,3,4]], axis=0, ...)
  std::vector<int64_t> values = {1, 0, 0, 1, 0, 0, 2, 3, 4};
  auto r = run(OpKind::Unique, {Tensor::fromValues<int64_t>(ElemKind::I64, {3, 3}, values)},
               {{"axis", int64_t(0)}, {"sorted", int64_t(1)}});
  EXPECT_EQ(i64s(r[0]), (std::vector<int64_t>{1, 0, 0, 2, 3, 4, 0, 0, 0}));
  EXPECT_EQ(i64s(r[1]), (std::vector<int64_t>{0, 2, 0}));
  EXPECT_EQ(i64s(r[2]), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(i64s(r[3]), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(i64s(r[4]), std::vector<int64_t>{2});
}

TEST(ValueDependentKernels, NonMaxSuppressionSuppressesByIoU) {
  // ONNX's nonmaxsuppression_suppress_by_IOU example.
  Tensor boxes = f32({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101});
  Tensor scores = f32({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
  auto r = run(OpKind::NonMaxSuppression, {boxes, scores},
               {{"center_point_box", int64_t(0)},
                {"max_output_boxes_per_class", int64_t(3)},
                {"iou_threshold", 0.5},
                {"score_threshold", 0.0}});
  EXPECT_EQ(r[0].type(), Type(ElemKind::I64, {3, 3}));
  EXPECT_EQ(i64s(r[0]), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  EXPECT_EQ(i64s(r[1]), std::vector<int64_t>{3});
}

// ---- Importer ----------------------------------------------------------------

std::string nonZeroModel() {
  test::OnnxModel m;
  m.input("x", {int64_t(2), int64_t(3)});
  m.node("NonZero", {"x"}, {"y"}, "nz");
  m.output("y");
  return m.bytes();
}

TEST(ValueDependentImport, WithoutAValueTheOutputIsBoundedAndCounted) {
  Module module;
  auto fn = importOnnxBytes(nonZeroModel(), "nz.onnx", module);
  ASSERT_TRUE(bool(fn)) << fn.error().message();
  const auto& outputs = (*fn)->outputs();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].first, "y");
  EXPECT_EQ(outputs[0].second.type(), Type(ElemKind::I64, {2, 6}));
  EXPECT_EQ(outputs[1].first, "y.valid_count");
  EXPECT_EQ(outputs[1].second.type(), Type(ElemKind::I64, {}));
  EXPECT_EQ(outputs[0].second.node->kind(), OpKind::NonZero);
}

TEST(ValueDependentImport, AGivenValueIsBoundAndTheShapeIsExact) {
  Module module;
  ImportOptions options;
  options.inputValues.emplace("x", f32({2, 3}, {0, 1, 0, 2, 0, 3}));
  auto fn = importOnnxBytes(nonZeroModel(), "nz.onnx", module, options);
  ASSERT_TRUE(bool(fn)) << fn.error().message();
  EXPECT_TRUE((*fn)->inputs().empty());  // x was bound
  const auto& outputs = (*fn)->outputs();
  ASSERT_EQ(outputs.size(), 1u);
  const Node* y = outputs[0].second.node;
  ASSERT_TRUE(y->isConstant());
  EXPECT_EQ(y->resultType(), Type(ElemKind::I64, {2, 3}));
  EXPECT_EQ(i64s(y->payload()), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
}

}  // namespace
}  // namespace ember
