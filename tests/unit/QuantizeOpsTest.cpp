// ONNX's quantization primitives (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger) against values computed with numpy
// from ONNX's formulas: rounding halves to even, saturation, per-axis
// parameters and zero points.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <vector>

#include "ember/Importer.h"
#include "ember/Kernels.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

Type u8(Dims d) { return Type(ElemKind::UInt8Q, std::move(d), 1.0f, 0); }
Type i8(Dims d) { return Type(ElemKind::Int8Q, std::move(d), 1.0f, 0); }

template <typename T>
Tensor filled(const Type& type, std::vector<T> values) {
  Tensor t(type);
  for (size_t i = 0; i < values.size(); ++i) t.setElementFromDouble(int64_t(i), double(values[i]));
  return t;
}

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

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.type().numElements(); ++i) v.push_back(t.elementAsDouble(i));
  return v;
}

TEST(QuantizeOps, QuantizeLinearRoundsHalvesToEvenAndSaturates) {
  Tensor x = filled<float>(Type(ElemKind::F32, {7}), {-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 300, -300});
  auto y = run(OpKind::QuantizeLinear,
               {x, filled<float>(Type(ElemKind::F32, {}), {1}), filled<int>(u8({}), {128})},
               {{"axis", int64_t(1)}});
  EXPECT_EQ(y[0].type(), u8({7}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{126, 128, 128, 130, 130, 255, 0}));
}

TEST(QuantizeOps, QuantizeLinearPerAxis) {
  Tensor x = filled<float>(Type(ElemKind::F32, {2, 3}), {1, 2, 3, 4, 5, 6});
  auto y = run(OpKind::QuantizeLinear,
               {x, filled<float>(Type(ElemKind::F32, {2}), {1, 2}), filled<int>(u8({2}), {0, 10})},
               {{"axis", int64_t(0)}});
  // row 1: rint([2, 2.5, 3]) + 10
  EXPECT_EQ(values(y[0]), (std::vector<double>{1, 2, 3, 12, 12, 13}));
}

TEST(QuantizeOps, DequantizeLinearInt8) {
  auto y = run(OpKind::DequantizeLinear,
               {filled<int>(i8({3}), {-128, 0, 127}), filled<float>(Type(ElemKind::F32, {}), {0.5f}),
                filled<int>(i8({}), {-1})},
               {{"axis", int64_t(1)}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{-63.5, 0.5, 64}));
}

TEST(QuantizeOps, DynamicQuantizeLinearMatchesOnnxFormula) {
  Tensor x = filled<float>(Type(ElemKind::F32, {6}), {0, 2, -3, -2.5f, 1.34f, 0.5f});
  auto r = run(OpKind::DynamicQuantizeLinear, {x});
  EXPECT_EQ(values(r[0]), (std::vector<double>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(r[1].as<float>()[0], 0.019607844f);
  EXPECT_EQ(values(r[2]), std::vector<double>{153});
}

TEST(QuantizeOps, MatMulIntegerWithPerColumnZeroPoints) {
  // numpy: (a - 1) @ (b - [0, 2])
  auto y = run(OpKind::MatMulInteger, {filled<int>(u8({2, 3}), {1, 2, 3, 200, 0, 255}),
                                       filled<int>(i8({3, 2}), {1, -2, 3, 4, -128, 127}),
                                       filled<int>(u8({}), {1}), filled<int>(i8({2}), {0, 2})});
  EXPECT_EQ(y[0].type(), Type(ElemKind::I32, {2, 2}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{-253, 252, -32316, 30952}));
}

TEST(QuantizeOps, TypeRulesRejectAScaledQuantizedOperand) {
  std::vector<Type> in = {Type(ElemKind::UInt8Q, {2}, 0.5f, 3), Type(ElemKind::F32, {}),
                          Type(ElemKind::UInt8Q, {}, 1.0f, 0)};
  auto r = inferResultTypes(OpKind::DequantizeLinear, in, {{"axis", int64_t(1)}});
  ASSERT_FALSE(bool(r));
  EXPECT_NE(r.error().message().find("scale 1 and offset 0"), std::string::npos) << r.error().message();
}

/// Imports Cast(constant `values`) to ONNX type `to`; the result folds to a constant.
Tensor castConstant(const std::vector<float>& values, int32_t to) {
  test::OnnxModel m;
  m.floats("x", {int64_t(values.size())}, values);
  test::attr(m.node("Cast", {"x"}, {"y"}), "to", int64_t(to));
  m.output("y");
  Module module;
  auto fn = importOnnxBytes(m.bytes(), "cast.onnx", module);
  EXPECT_TRUE(bool(fn)) << fn.error().message();
  if (!fn) return Tensor();
  const Node* y = (*fn)->outputs()[0].second.node;
  EXPECT_TRUE(y->isConstant());
  return y->payload();
}

TEST(QuantizeOps, OnnxCastToUint8AndInt8TruncatesThenSaturates) {
  // numpy: np.clip(np.trunc(x), 0, 255) and np.clip(np.trunc(x), -128, 127)
  Tensor u = castConstant({-3.7f, 0.5f, 2.9f, 254.9f, 300.0f}, onnx::TensorProto::UINT8);
  EXPECT_EQ(u.type(), u8({5}));
  EXPECT_EQ(values(u), (std::vector<double>{0, 0, 2, 254, 255}));
  Tensor i = castConstant({-3.7f, -200.0f, 2.9f, 127.5f}, onnx::TensorProto::INT8);
  EXPECT_EQ(values(i), (std::vector<double>{-3, -128, 2, 127}));
}

}  // namespace
}  // namespace ember
