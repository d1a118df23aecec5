// The attribute structs generated from Ops.def (ember/OpAttrs.h): members,
// optional attributes, enums and shared structs.
#include <gtest/gtest.h>

#include "ember/Graph.h"
#include "ember/OpAttrs.h"
#include "ember/OpTable.h"

namespace ember {
namespace {

TEST(OpAttrs, ReadsEveryKindOfAttribute) {
  const Attributes attrs{{"strides", std::vector<int64_t>{2, 1}},
                         {"pads", std::vector<int64_t>{0, 1, 0, 1}},
                         {"dilations", std::vector<int64_t>{1, 1}},
                         {"group", int64_t(4)}};
  const ConvAttrs conv = ConvAttrs::from(attrs);
  EXPECT_EQ(conv.strides, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(conv.pads, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(conv.group, 4);
}

TEST(OpAttrs, OptionalAttributesAreOptionals) {
  Attributes attrs{{"sizes", std::vector<int64_t>{1, 4}},
                   {"mode", std::string("cubic")},
                   {"coordinate_transformation_mode", std::string("align_corners")},
                   {"nearest_mode", std::string("round_prefer_ceil")}};
  ResizeAttrs resize = ResizeAttrs::from(attrs);
  EXPECT_EQ(resize.mode, ResizeMode::Cubic);
  EXPECT_EQ(resize.coordinateTransformationMode, ResizeCoordinateTransformationMode::AlignCorners);
  EXPECT_EQ(resize.nearestMode, ResizeNearestMode::RoundPreferCeil);
  EXPECT_FALSE(resize.cubicCoeffA.has_value());
  EXPECT_FALSE(resize.scales.has_value());
  attrs.set("cubic_coeff_a", -0.5);
  EXPECT_EQ(ResizeAttrs::from(attrs).cubicCoeffA, -0.5);
}

TEST(OpAttrs, EnumsNameTheirValues) {
  EXPECT_EQ(toString(PadMode::Reflect), "reflect");
  EXPECT_EQ(parsePadMode("edge"), PadMode::Edge);
  EXPECT_FALSE(parsePadMode("wrap").has_value());
}

TEST(OpAttrs, NodesHandOutTheirStruct) {
  Module module;
  Function& f = module.createFunction("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  Expected<Node*> softmax = f.create(OpKind::Softmax, "softmax", {x}, Attributes{{"axis", int64_t(-1)}});
  ASSERT_TRUE(softmax) << softmax.error().message();
  EXPECT_EQ((*softmax)->attrs<SoftmaxAttrs>().axis, -1);
}

TEST(OpAttrs, OpsWithTheSameAttributesShareAStruct) {
  static_assert(std::is_same_v<ArgMinAttrs, ArgMaxAttrs>);
  static_assert(std::is_same_v<ScatterNDReduction, ScatterElementsReduction>);
  EXPECT_EQ(opFamily(OpKind::ArgMin), opFamily(OpKind::ArgMax));
}

}  // namespace
}  // namespace ember
