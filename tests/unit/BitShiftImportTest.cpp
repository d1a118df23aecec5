// BitShift on uint8 (ONNX's u8q with scale 1, offset 0), imported with both
// inputs bound so the graph folds to a constant: compared with C's unsigned
// shifts, including shifts of 8 or more (0) and broadcasting.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "ember/Importer.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

std::vector<test::OnnxDim> onnxDims(const std::vector<int64_t>& dims) { return {dims.begin(), dims.end()}; }

std::string bitShiftModel(const std::string& direction, const std::vector<int64_t>& xDims,
                          const std::vector<int64_t>& yDims) {
  test::OnnxModel m(11);
  m.input("x", onnxDims(xDims), onnx::TensorProto::UINT8);
  m.input("y", onnxDims(yDims), onnx::TensorProto::UINT8);
  test::attr(m.node("BitShift", {"x", "y"}, {"z"}, "shift"), "direction", direction);
  m.output("z");
  return m.bytes();
}

Tensor u8(Dims dims, const std::vector<int>& values) {
  Tensor t(Type(ElemKind::UInt8Q, std::move(dims), 1.0f, 0));
  for (size_t i = 0; i < values.size(); ++i) t.setElementFromDouble(int64_t(i), values[i]);
  return t;
}

std::vector<int> shiftFolded(const std::string& direction, const Tensor& x, const Tensor& y) {
  Module module;
  ImportOptions options;
  options.boundInputs.emplace("x", x);
  options.boundInputs.emplace("y", y);
  auto fn =
      importOnnxBytes(bitShiftModel(direction, x.type().dims, y.type().dims), "shift.onnx", module, options);
  EXPECT_TRUE(bool(fn)) << fn.error().message();
  if (!fn) return {};
  const Node* z = (*fn)->outputs().at(0).second.node;
  if (!z->isConstant()) {
    ADD_FAILURE() << "BitShift with bound inputs did not fold";
    return {};
  }
  EXPECT_EQ(z->resultType().kind, ElemKind::UInt8Q);
  std::vector<int> result;
  for (int64_t i = 0; i < z->payload().type().numElements(); ++i)
    result.push_back(int(z->payload().elementAsDouble(i)));
  return result;
}

const std::vector<int> kValues = {0, 1, 3, 127, 128, 200, 255, 255, 77, 5};
const std::vector<int> kShifts = {0, 1, 7, 1, 1, 3, 7, 8, 9, 255};

std::vector<int> cShift(bool left) {
  std::vector<int> expected;
  for (size_t i = 0; i < kValues.size(); ++i) {
    const unsigned x = unsigned(kValues[i]), s = unsigned(kShifts[i]);
    expected.push_back(s >= 8 ? 0 : int((left ? x << s : x >> s) & 0xFFu));
  }
  return expected;
}

TEST(BitShiftImport, LeftKeepsTheLowEightBits) {
  EXPECT_EQ(shiftFolded("LEFT", u8({10}, kValues), u8({10}, kShifts)), cShift(true));
}

TEST(BitShiftImport, RightFloors) {
  EXPECT_EQ(shiftFolded("RIGHT", u8({10}, kValues), u8({10}, kShifts)), cShift(false));
}

TEST(BitShiftImport, ShiftBroadcasts) {
  EXPECT_EQ(shiftFolded("LEFT", u8({2, 2}, {1, 2, 3, 255}), u8({2}, {2, 8})),
            (std::vector<int>{4, 0, 12, 0}));
}

TEST(BitShiftImport, BadDirectionIsAnError) {
  Module module;
  auto fn = importOnnxBytes(bitShiftModel("UP", {2}, {2}), "shift.onnx", module);
  ASSERT_FALSE(bool(fn));
  EXPECT_NE(fn.error().message().find("direction"), std::string::npos) << fn.error().message();
}

}  // namespace
}  // namespace ember
