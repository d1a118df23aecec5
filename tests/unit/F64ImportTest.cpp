// DOUBLE in ONNX files: inputs, outputs and initializers (double_data and
// raw_data) import as f64 and keep all 53 bits; a truncated double_data is an
// error naming the initializer.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Runtime.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

/// y = (x + a) * b on DOUBLE [3]: a in double_data, b in raw_data.
onnx::ModelProto addMulModel(const std::vector<double>& a, const std::vector<double>& b) {
  test::OnnxModel m(13, "f64", 7);
  m.input("x", {int64_t(3)}, onnx::TensorProto::DOUBLE);
  m.output("y", {int64_t(3)}, onnx::TensorProto::DOUBLE);
  onnx::TensorProto& ta = m.initializer("a", {int64_t(a.size())}, onnx::TensorProto::DOUBLE);
  for (double v : a) ta.add_double_data(v);
  std::string raw(b.size() * sizeof(double), '\0');
  std::memcpy(raw.data(), b.data(), raw.size());
  m.initializer("b", {int64_t(b.size())}, onnx::TensorProto::DOUBLE).set_raw_data(raw);
  m.node("Add", {"x", "a"}, {"s"});
  m.node("Mul", {"s", "b"}, {"y"});
  return m.model();
}

TEST(F64Import, DoubleDataAndRawDataKeepEveryBit) {
  registerBuiltinBackends();
  const std::vector<double> a = {0.1, 1.0 + 0x1p-40, -3.0};
  const std::vector<double> b = {0.3, 2.0, 1e-300};
  Module module;
  auto function = importOnnxBytes(addMulModel(a, b).SerializeAsString(), "f64.onnx", module);
  ASSERT_TRUE(function) << function.error().message();
  ASSERT_EQ((*function)->inputs().size(), 1u);
  EXPECT_EQ((*function)->inputs()[0]->resultType(), Type(ElemKind::F64, {3}));

  Tensor x(Type(ElemKind::F64, {3}));
  const std::vector<double> xs = {0.2, 1.0, 3.0};
  std::memcpy(x.data(), xs.data(), 24);
  auto outputs = compileAndRun(**function, "reference", {{"x", x}});
  ASSERT_TRUE(outputs) << outputs.error().message();
  const Tensor& y = outputs->at("y");
  ASSERT_EQ(y.type(), Type(ElemKind::F64, {3}));
  // IEEE double, the same two roundings numpy's (x + a) * b makes.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(y.as<double>()[i], (xs[size_t(i)] + a[size_t(i)]) * b[size_t(i)]) << i;
  EXPECT_EQ(y.as<double>()[1], (2.0 + 0x1p-40) * 2.0);  // lost in f32
}

TEST(F64Import, ShortDoubleDataNamesTheInitializer) {
  onnx::ModelProto model = addMulModel({0.1, 0.2, 0.3}, {1, 2, 3});
  model.mutable_graph()->mutable_initializer(0)->mutable_double_data()->RemoveLast();
  Module module;
  auto function = importOnnxBytes(model.SerializeAsString(), "short.onnx", module);
  ASSERT_FALSE(function);
  const std::string& message = function.error().message();
  EXPECT_NE(message.find("'a'"), std::string::npos) << message;
  EXPECT_NE(message.find("double_data holds 2 values but the shape has 3 elements"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace ember
