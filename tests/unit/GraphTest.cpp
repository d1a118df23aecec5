// The graph: creation through type rules, verification, ordering, printing.
#include <gtest/gtest.h>

#include "ember/Graph.h"

using namespace ember;

namespace {

Tensor filled(Dims dims, float value) {
  Tensor t(Type(ElemKind::F32, std::move(dims)));
  for (int64_t i = 0; i < t.type().numElements(); ++i) t.as<float>()[i] = value;
  return t;
}

TEST(OpInfo, ParsesDeclarations) {
  const OpInfo& conv = opInfo(OpKind::Conv);
  EXPECT_EQ(conv.name, "Conv");
  EXPECT_EQ(conv.category, OpCategory::Primitive);
  ASSERT_EQ(conv.operandNames.size(), 3u);
  EXPECT_EQ(conv.operandNames[1], "filter");
  ASSERT_EQ(conv.attributes.size(), 4u);
  EXPECT_EQ(conv.attributes[3].name, "group");
  EXPECT_EQ(conv.attributes[3].kind, AttrKind::Int);
  EXPECT_TRUE(opInfo(OpKind::Concat).variadic);
  EXPECT_TRUE(opInfo(OpKind::Add).has(DataParallel));
  EXPECT_FALSE(opInfo(OpKind::MatMul).has(DataParallel));
  EXPECT_TRUE(opInfo(OpKind::Resize).attributes[1].optional);
  EXPECT_EQ(opKindFromName("Softmax"), OpKind::Softmax);
  EXPECT_FALSE(opKindFromName("NoSuchOp").has_value());
}

TEST(Function, CreateInfersTypes) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  Node* c = f.createConstant("c", filled({3}, 1.0f));
  auto add = f.create(OpKind::Add, "add", {x, c});
  ASSERT_TRUE(add) << add.error().message();
  EXPECT_EQ((*add)->resultType(), Type(ElemKind::F32, {2, 3}));
  auto less = f.create(OpKind::Less, "less", {*add, c});
  ASSERT_TRUE(less);
  EXPECT_EQ((*less)->resultType().kind, ElemKind::Bool);
  f.addOutput("y", *add);
  EXPECT_FALSE(f.verify()) << f.verify().message();
}

TEST(Function, CreateRejectsBadInputsWithNodeName) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  Node* y = f.createPlaceholder("y", Type(ElemKind::F32, {4}));
  auto add = f.create(OpKind::Add, "bad_add", {x, y});
  ASSERT_FALSE(add);
  EXPECT_NE(add.error().message().find("node 'bad_add' (Add)"), std::string::npos) << add.error().message();
  auto missingAttr = f.create(OpKind::Transpose, "t", {x});
  ASSERT_FALSE(missingAttr);
  EXPECT_NE(missingAttr.error().message().find("missing attribute 'perm'"), std::string::npos);
  auto unknownAttr = f.create(OpKind::Relu, "r", {x}, {{"alpha", 1.0}});
  ASSERT_FALSE(unknownAttr);
  EXPECT_NE(unknownAttr.error().message().find("unknown attribute 'alpha'"), std::string::npos);
  auto arity = f.create(OpKind::Add, "a", {x});
  ASSERT_FALSE(arity);
  EXPECT_NE(arity.error().message().find("expects 2 operand(s), got 1"), std::string::npos);
}

TEST(Function, VerifierCatchesStaleTypes) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  Node* other = f.createPlaceholder("z", Type(ElemKind::F32, {5}));
  Node* relu = *f.create(OpKind::Relu, "relu", {x});
  f.addOutput("y", relu);
  ASSERT_FALSE(f.verify());
  relu->setInput(0, other);  // the result type no longer follows from the operand
  Error e = f.verify();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("node 'relu' (Relu)"), std::string::npos) << e.message();
}

TEST(Function, TopologicalOrderAndRewrites) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4}));
  Node* a = *f.create(OpKind::Relu, "a", {x});
  Node* b = *f.create(OpKind::Neg, "b", {a});
  Node* c = *f.create(OpKind::Exp, "c", {x});
  f.addOutput("out", b);
  auto order = f.topologicalOrder();
  auto pos = [&](Node* n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  EXPECT_LT(pos(x), pos(a));
  EXPECT_LT(pos(a), pos(b));

  f.replaceAllUsesWith(a, c);
  EXPECT_EQ(b->input(0).node, c);
  EXPECT_EQ(f.computeUses()[a].size(), 0u);
  f.erase(a);
  EXPECT_EQ(f.numNodes(), 3u);
  EXPECT_FALSE(f.verify());
  // The erased name is free again.
  EXPECT_EQ(f.uniqueName("a"), "a");
  EXPECT_EQ(f.uniqueName("b"), "b_1");
}

TEST(Function, PrintsTextAndDot) {
  Function f("main");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 2}));
  Node* t = *f.create(OpKind::Transpose, "t", {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  f.addOutput("y", t);
  std::string text = f.str();
  EXPECT_NE(text.find("%t = Transpose(%x) {perm=[1,0]} : f32<2x1>"), std::string::npos) << text;
  EXPECT_NE(text.find("output \"y\" = %t"), std::string::npos);
  std::string dot = f.dot();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("-> out0"), std::string::npos);
}

TEST(Type, BroadcastAndChecks) {
  EXPECT_EQ(*broadcastDims({2, 1, 3}, {4, 1}), (Dims{2, 4, 3}));
  EXPECT_FALSE(broadcastDims({2, 3}, {4}));
  EXPECT_TRUE(checkDims({-1}));
  EXPECT_FALSE(checkDims({1, 2, 3, 4, 5, 6, 7, 8}));  // kMaxRank is 8
  EXPECT_TRUE(checkDims({1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(checkDims({int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_FALSE(checkDims({}));
  EXPECT_EQ(Type(ElemKind::F32, {2, 3, 4}).strides(), (Dims{12, 4, 1}));
  EXPECT_EQ(Type(ElemKind::Int8Q, {1, 10}, 0.5f, -3).str(), "i8q<1x10:0.5,-3>");
}

TEST(Tensor, HalfConversionsRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(halfToFloat(floatToHalf(f)), f) << f;
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(70000.0f), 0x7c00);  // overflow to infinity
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.5f)), 1.5f);
}

}  // namespace
