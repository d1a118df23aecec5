// Type rules: result shapes and kinds per Ops.def (ONNX semantics, NHWC), and
// one-line errors for invalid operands. Expected shapes are worked out by hand.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "ember/Graph.h"

using namespace ember;

namespace {

Type f32(Dims d) { return Type(ElemKind::F32, std::move(d)); }

std::vector<Type> infer(OpKind kind, std::vector<Type> inputs, const Attributes& attrs = {}) {
  auto r = inferResultTypes(kind, inputs, attrs);
  EXPECT_TRUE(r.hasValue()) << opName(kind) << ": " << r.error().message();
  return r ? *r : std::vector<Type>{};
}

Type infer1(OpKind kind, std::vector<Type> inputs, const Attributes& attrs = {}) {
  auto r = infer(kind, std::move(inputs), attrs);
  return r.empty() ? Type() : r[0];
}

/// The error message of a rule that must fail.
std::string error(OpKind kind, std::vector<Type> inputs, const Attributes& attrs = {}) {
  auto r = inferResultTypes(kind, inputs, attrs);
  EXPECT_FALSE(r.hasValue()) << opName(kind) << " unexpectedly accepted";
  std::string message = r ? "" : r.error().message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << "messages are one line";
  return message;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

Attributes convAttrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations,
                     int64_t group) {
  return Attributes{{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
}

}  // namespace

TEST(TypeRules, BinaryBroadcastAndKinds) {
  EXPECT_EQ(infer1(OpKind::Add, {f32({2, 1, 3}), f32({4, 1})}), f32({2, 4, 3}));
  EXPECT_EQ(infer1(OpKind::Less, {f32({3}), f32({})}), Type(ElemKind::Bool, {3}));
  EXPECT_EQ(infer1(OpKind::Equal, {Type(ElemKind::Bool, {2}), Type(ElemKind::Bool, {2})}),
            Type(ElemKind::Bool, {2}));
  EXPECT_EQ(infer1(OpKind::Div, {Type(ElemKind::I64, {2}), Type(ElemKind::I64, {1})}),
            Type(ElemKind::I64, {2}));
  EXPECT_CONTAINS(error(OpKind::Add, {f32({2, 3}), f32({4})}), "do not broadcast");
  EXPECT_CONTAINS(error(OpKind::Add, {f32({2}), Type(ElemKind::I32, {2})}), "element kinds differ");
  EXPECT_CONTAINS(error(OpKind::Mul, {Type(ElemKind::Bool, {2}), Type(ElemKind::Bool, {2})}),
                  "element kind bool");
  EXPECT_CONTAINS(error(OpKind::And, {f32({2}), f32({2})}), "expected bool");
  EXPECT_CONTAINS(error(OpKind::Less, {Type(ElemKind::Bool, {2}), Type(ElemKind::Bool, {2})}),
                  "element kind bool");
}

TEST(TypeRules, QuantizedArithmeticIsRejectedButDataMovementKeepsScale) {
  Type q(ElemKind::Int8Q, {1, 4, 4, 8}, 0.05f, -3);
  EXPECT_CONTAINS(error(OpKind::Add, {q, q}), "not supported yet");
  EXPECT_CONTAINS(error(OpKind::Relu, {q}), "quantized");
  EXPECT_CONTAINS(error(OpKind::AvgPool, {q},
                        {{"kernel", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"ceil_mode", int64_t(0)},
                         {"count_include_pad", int64_t(0)}}),
                  "quantized");
  EXPECT_EQ(infer1(OpKind::Transpose, {q}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}),
            Type(ElemKind::Int8Q, {1, 8, 4, 4}, 0.05f, -3));
  EXPECT_EQ(infer1(OpKind::Reshape, {q}, {{"shape", std::vector<int64_t>{16, 8}}}),
            Type(ElemKind::Int8Q, {16, 8}, 0.05f, -3));
  EXPECT_EQ(infer1(OpKind::MaxPool, {q},
                   {{"kernel", std::vector<int64_t>{2, 2}},
                    {"strides", std::vector<int64_t>{2, 2}},
                    {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                    {"dilations", std::vector<int64_t>{1, 1}},
                    {"ceil_mode", int64_t(0)}}),
            Type(ElemKind::Int8Q, {1, 2, 2, 8}, 0.05f, -3));
  EXPECT_EQ(infer1(OpKind::Gather, {q, Type(ElemKind::I32, {3})}, {{"axis", int64_t(3)}}),
            Type(ElemKind::Int8Q, {1, 4, 4, 3}, 0.05f, -3));
  Type other(ElemKind::Int8Q, {1, 4, 4, 8}, 0.1f, -3);
  EXPECT_CONTAINS(error(OpKind::Concat, {q, other}, {{"axis", int64_t(3)}}), "quantization differs");
}

TEST(TypeRules, ConvShapesAndChannelChecks) {
  // 224x224, 7x7 stride 2 pad 3: (224 + 6 - 7) / 2 + 1 = 112.
  EXPECT_EQ(infer1(OpKind::Conv, {f32({1, 224, 224, 3}), f32({64, 7, 7, 3}), f32({64})},
                   convAttrs({2, 2}, {3, 3, 3, 3}, {1, 1}, 1)),
            f32({1, 112, 112, 64}));
  // Dilation 2, asymmetric pads: H: (10 + 1 + 0 - 2*2 - 1)/1 + 1 = 7; W: (8 + 0 + 2 - 5)/3 + 1 = 2.
  EXPECT_EQ(infer1(OpKind::Conv, {f32({2, 10, 8, 4}), f32({6, 3, 3, 2}), f32({6})},
                   convAttrs({1, 3}, {1, 0, 0, 2}, {2, 2}, 2)),
            f32({2, 7, 2, 6}));
  EXPECT_EQ(error(OpKind::Conv, {f32({1, 8, 8, 4}), f32({8, 3, 3, 3}), f32({8})},
                  convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
            "Conv: filter has 3 input channels per group, input has 4 channels (group 1)");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({1, 8, 8, 4}), f32({3, 3, 3, 2}), f32({3})},
                        convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)),
                  "not divisible by group 2");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({1, 8, 8, 4}), f32({8, 3, 3, 4}), f32({7})},
                        convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
                  "bias must be [8]");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({1, 2, 2, 4}), f32({8, 3, 3, 4}), f32({8})},
                        convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
                  "exceeds the padded size");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({1, 8, 8, 4}), f32({8, 3, 3, 4}), f32({8})},
                        convAttrs({0, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
                  "'strides' values must be >= 1");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({1, 8, 8, 4}), f32({8, 3, 3, 4}), f32({8})},
                        convAttrs({1, 1}, {0, 0, 0}, {1, 1}, 1)),
                  "'pads' must have 4 values");
  EXPECT_CONTAINS(error(OpKind::Conv, {f32({8, 8, 4}), f32({8, 3, 3, 4}), f32({8})},
                        convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
                  "input must have rank 4");
}

TEST(TypeRules, ConvTransposeShape) {
  Attributes attrs = convAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
  attrs.set("output_padding", std::vector<int64_t>{1, 0});
  // OH = (2-1)*2 - 2 + 1*(2-1) + 1 + 1 = 3; OW = (5-1)*2 - 2 + 1 + 1 + 0 = 8. O = 3 * group 2.
  EXPECT_EQ(infer1(OpKind::ConvTranspose, {f32({1, 2, 5, 4}), f32({4, 2, 2, 3}), f32({6})}, attrs),
            f32({1, 3, 8, 6}));
  EXPECT_CONTAINS(error(OpKind::ConvTranspose, {f32({1, 2, 5, 4}), f32({5, 2, 2, 3}), f32({6})}, attrs),
                  "filter has 5 input channels, input has 4");
  attrs.set("output_padding", std::vector<int64_t>{2, 0});
  EXPECT_CONTAINS(error(OpKind::ConvTranspose, {f32({1, 2, 5, 4}), f32({4, 2, 2, 3}), f32({6})}, attrs),
                  "output_padding");
}

TEST(TypeRules, PoolCeilMode) {
  auto pool = [](std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                 int64_t ceil) {
    return Attributes{{"kernel", kernel},
                      {"strides", strides},
                      {"pads", pads},
                      {"dilations", std::vector<int64_t>{1, 1}},
                      {"ceil_mode", ceil}};
  };
  // 112 -> 3x3 s2 p1: floor((112 + 2 - 3) / 2) + 1 = 56.
  EXPECT_EQ(infer1(OpKind::MaxPool, {f32({1, 112, 112, 64})}, pool({3, 3}, {2, 2}, {1, 1, 1, 1}, 0)),
            f32({1, 56, 56, 64}));
  // 5 -> k2 s2: floor 2, ceil 3.
  EXPECT_EQ(infer1(OpKind::MaxPool, {f32({1, 5, 6, 1})}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, 1)),
            f32({1, 3, 3, 1}));
  // H = 3, k2 s2 p1/p1 ceil: ceil(3/2) + 1 = 3, but the third window starts in
  // the end padding (2*2 >= 3 + 1) and is dropped -> 2.
  EXPECT_EQ(infer1(OpKind::MaxPool, {f32({1, 3, 3, 1})}, pool({2, 2}, {2, 2}, {1, 1, 1, 1}, 1)),
            f32({1, 2, 2, 1}));
  EXPECT_CONTAINS(error(OpKind::MaxPool, {f32({1, 3, 3, 1})}, pool({2, 2}, {2, 2}, {1, 1, 1, 1}, 2)),
                  "0 or 1");
}

TEST(TypeRules, MatMul) {
  EXPECT_EQ(infer1(OpKind::MatMul, {f32({2, 1, 4, 3}), f32({5, 3, 7})}), f32({2, 5, 4, 7}));
  EXPECT_EQ(infer1(OpKind::MatMul, {Type(ElemKind::I64, {4, 3}), Type(ElemKind::I64, {3, 2})}),
            Type(ElemKind::I64, {4, 2}));
  EXPECT_EQ(error(OpKind::MatMul, {f32({4, 3}), f32({2, 7})}),
            "MatMul: lhs has 3 columns, rhs has 2 rows (f32<4x3> x f32<2x7>)");
  EXPECT_CONTAINS(error(OpKind::MatMul, {f32({3}), f32({3, 2})}), "rank >= 2");
  EXPECT_CONTAINS(error(OpKind::MatMul, {f32({2, 4, 3}), f32({3, 3, 2})}), "do not broadcast");
}

TEST(TypeRules, ReductionsArgAndTopK) {
  Attributes axes{{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(0)}};
  EXPECT_EQ(infer1(OpKind::ReduceSum, {f32({2, 3, 4, 5})}, axes), f32({2, 5}));
  axes.set("keepdims", int64_t(1));
  EXPECT_EQ(infer1(OpKind::ReduceMax, {f32({2, 3, 4, 5})}, axes), f32({2, 1, 1, 5}));
  EXPECT_CONTAINS(error(OpKind::ReduceMin, {f32({2, 3})},
                        {{"axes", std::vector<int64_t>{1, 0}}, {"keepdims", int64_t(0)}}),
                  "sorted");
  EXPECT_CONTAINS(
      error(OpKind::ReduceProd, {f32({2, 3})}, {{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t(0)}}),
      "out of range");
  EXPECT_CONTAINS(
      error(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t(0)}}),
      "must not be empty");
  EXPECT_EQ(infer1(OpKind::ArgMax, {f32({2, 3, 4})},
                   {{"axis", int64_t(-2)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(0)}}),
            Type(ElemKind::I64, {2, 4}));
  auto topk = infer(OpKind::TopK, {Type(ElemKind::I32, {3, 10})},
                    {{"k", int64_t(4)}, {"axis", int64_t(1)}, {"largest", int64_t(1)}});
  ASSERT_EQ(topk.size(), 2u);
  EXPECT_EQ(topk[0], Type(ElemKind::I32, {3, 4}));
  EXPECT_EQ(topk[1], Type(ElemKind::I64, {3, 4}));
  EXPECT_CONTAINS(error(OpKind::TopK, {f32({3, 10})},
                        {{"k", int64_t(11)}, {"axis", int64_t(1)}, {"largest", int64_t(1)}}),
                  "k = 11");
}

TEST(TypeRules, DataMovementShapes) {
  EXPECT_CONTAINS(error(OpKind::Transpose, {f32({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}),
                  "not a permutation");
  EXPECT_CONTAINS(error(OpKind::Reshape, {f32({2, 3})}, {{"shape", std::vector<int64_t>{4, 2}}}),
                  "cannot reshape");
  // Slice: [1:6:2] of 7 -> 3 elements; [5:0:-2] -> 5,3,1 = 3; [0:0:1] -> 0.
  Attributes slice{{"starts", std::vector<int64_t>{1, 5, 0}},
                   {"ends", std::vector<int64_t>{6, 0, 0}},
                   {"steps", std::vector<int64_t>{2, -2, 1}}};
  EXPECT_EQ(infer1(OpKind::Slice, {f32({7, 6, 3})}, slice), f32({3, 3, 0}));
  slice.set("starts", std::vector<int64_t>{1, 6, 0});
  EXPECT_CONTAINS(error(OpKind::Slice, {f32({7, 6, 3})}, slice), "reads outside");
  slice.set("steps", std::vector<int64_t>{2, 0, 1});
  EXPECT_CONTAINS(error(OpKind::Slice, {f32({7, 6, 3})}, slice), "step on axis 1 is 0");
  EXPECT_EQ(infer1(OpKind::Concat, {f32({2, 3}), f32({2, 5})}, {{"axis", int64_t(-1)}}), f32({2, 8}));
  EXPECT_CONTAINS(error(OpKind::Concat, {f32({2, 3}), f32({3, 5})}, {{"axis", int64_t(1)}}),
                  "does not match");
  EXPECT_CONTAINS(error(OpKind::Concat, {}, {{"axis", int64_t(0)}}), "at least one operand");
  Attributes pad{
      {"pads", std::vector<int64_t>{1, -1, 2, 0}}, {"mode", std::string("constant")}, {"value", 0.0}};
  EXPECT_EQ(infer1(OpKind::Pad, {f32({3, 4})}, pad), f32({6, 3}));
  pad.set("mode", std::string("reflect"));
  pad.set("pads", std::vector<int64_t>{3, 0, 0, 0});
  EXPECT_CONTAINS(error(OpKind::Pad, {f32({3, 4})}, pad), "reflect pad 3");
  pad.set("mode", std::string("wrap"));
  EXPECT_CONTAINS(error(OpKind::Pad, {f32({3, 4})}, pad), "unknown mode 'wrap'");
  EXPECT_EQ(infer1(OpKind::Tile, {f32({2, 3})}, {{"repeats", std::vector<int64_t>{3, 1}}}), f32({6, 3}));
  EXPECT_EQ(infer1(OpKind::Broadcast, {f32({3, 1})}, {{"shape", std::vector<int64_t>{2, 1, 4}}}),
            f32({2, 3, 4}));
  EXPECT_EQ(infer1(OpKind::Gather, {f32({5, 6, 7}), Type(ElemKind::I64, {2, 3})}, {{"axis", int64_t(1)}}),
            f32({5, 2, 3, 7}));
  EXPECT_CONTAINS(error(OpKind::Gather, {f32({5, 6}), f32({2})}, {{"axis", int64_t(0)}}), "indices");
  EXPECT_CONTAINS(error(OpKind::Gather, {f32({5, 6}), Type(ElemKind::I32, {2})}, {{"axis", int64_t(2)}}),
                  "axis 2 is out of range");
}

TEST(TypeRules, SelectCastAndUnary) {
  EXPECT_EQ(infer1(OpKind::Select, {Type(ElemKind::Bool, {2, 1}), f32({3}), f32({})}), f32({2, 3}));
  EXPECT_CONTAINS(error(OpKind::Select, {f32({2}), f32({2}), f32({2})}), "cond");
  EXPECT_EQ(infer1(OpKind::Cast, {f32({2})}, {{"to", std::string("i64")}}), Type(ElemKind::I64, {2}));
  EXPECT_CONTAINS(error(OpKind::Cast, {f32({2})}, {{"to", std::string("f128")}}),
                  "unknown element kind 'f128'");
  EXPECT_CONTAINS(error(OpKind::Cast, {f32({2})}, {{"to", std::string("i8q")}}), "not supported");
  EXPECT_CONTAINS(error(OpKind::Exp, {Type(ElemKind::I32, {2})}), "element kind i32");
  EXPECT_CONTAINS(error(OpKind::Not, {f32({2})}), "expected bool");
  EXPECT_EQ(infer1(OpKind::Clip, {f32({2})}, {{"min", 0.0}, {"max", 6.0}}), f32({2}));
  EXPECT_CONTAINS(error(OpKind::Clip, {f32({2})}, {{"min", 0.0}}), "attribute 'max'");
}

TEST(TypeRules, Resize) {
  Attributes attrs{{"sizes", std::vector<int64_t>{1, 8, 8, 3}},
                   {"mode", std::string("linear")},
                   {"coordinate_transformation_mode", std::string("half_pixel")},
                   {"nearest_mode", std::string("floor")}};
  EXPECT_EQ(infer1(OpKind::Resize, {f32({1, 4, 4, 3})}, attrs), f32({1, 8, 8, 3}));
  attrs.set("mode", std::string("cubic"));
  EXPECT_EQ(infer1(OpKind::Resize, {f32({1, 4, 4, 3})}, attrs), f32({1, 8, 8, 3}));
  EXPECT_CONTAINS(error(OpKind::Resize, {Type(ElemKind::I32, {1, 4, 4, 3})}, attrs), "element kind i32");
  attrs.set("mode", std::string("area"));
  EXPECT_CONTAINS(error(OpKind::Resize, {f32({1, 4, 4, 3})}, attrs), "unknown mode 'area'");
  attrs.set("mode", std::string("nearest"));
  attrs.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  EXPECT_CONTAINS(error(OpKind::Resize, {f32({1, 4, 4, 3})}, attrs), "tf_crop_and_resize");
  attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  attrs.set("scales", std::vector<double>{1, 2, 2});
  EXPECT_CONTAINS(error(OpKind::Resize, {f32({1, 4, 4, 3})}, attrs), "'scales' must have 4 values");
}

TEST(TypeRules, HighLevelNodes) {
  Attributes gemm{{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", int64_t(0)}, {"trans_b", int64_t(1)}};
  EXPECT_EQ(infer1(OpKind::Gemm, {f32({4, 3}), f32({5, 3}), f32({5})}, gemm), f32({4, 5}));
  EXPECT_CONTAINS(error(OpKind::Gemm, {f32({4, 3}), f32({5, 3}), f32({4})}, gemm), "does not broadcast");
  Attributes bn{{"epsilon", 1e-5}, {"axis", int64_t(3)}};
  EXPECT_EQ(infer1(OpKind::BatchNorm, {f32({1, 4, 4, 8}), f32({8}), f32({8}), f32({8}), f32({8})}, bn),
            f32({1, 4, 4, 8}));
  EXPECT_CONTAINS(error(OpKind::BatchNorm, {f32({1, 4, 4, 8}), f32({8}), f32({4}), f32({8}), f32({8})}, bn),
                  "bias must be [8]");
  EXPECT_EQ(infer1(OpKind::LayerNorm, {f32({2, 5, 16}), f32({16}), f32({16})},
                   {{"epsilon", 1e-5}, {"axis", int64_t(-1)}}),
            f32({2, 5, 16}));
  EXPECT_EQ(infer1(OpKind::Softmax, {f32({2, 5})}, {{"axis", int64_t(1)}}), f32({2, 5}));
  EXPECT_EQ(infer1(OpKind::ReduceMean, {f32({2, 5})},
                   {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}}),
            f32({2, 1}));
  EXPECT_EQ(infer1(OpKind::PRelu, {f32({1, 4, 4, 8}), f32({8})}), f32({1, 4, 4, 8}));
  EXPECT_CONTAINS(error(OpKind::PRelu, {f32({8}), f32({1, 8})}), "does not broadcast");
  EXPECT_CONTAINS(error(OpKind::Gelu, {f32({8})}, {{"approximate", std::string("fast")}}), "none or tanh");
}

TEST(TypeRules, StorageAndIRKinds) {
  EXPECT_CONTAINS(error(OpKind::Placeholder, {}), "no type rule");
  EXPECT_CONTAINS(error(OpKind::Constant, {}), "no type rule");
  EXPECT_CONTAINS(error(OpKind::AllocActivation, {}), "no type rule");
  EXPECT_TRUE(infer(OpKind::DeallocActivation, {f32({2})}).empty());
  EXPECT_EQ(infer1(OpKind::Copy, {Type(ElemKind::UInt8Q, {3}, 0.5f, 2)}),
            Type(ElemKind::UInt8Q, {3}, 0.5f, 2));
}

TEST(TypeRules, MalformedNodesAreErrorsNotCrashes) {
  // Every op kind with 0..4 operands of a few types and no attributes: each
  // rule must return (a value or an error) without crashing.
  std::vector<Type> samples = {f32({}), f32({2, 3}), Type(ElemKind::Bool, {2, 3}), f32({1, 4, 4, 2}),
                               Type(ElemKind::I64, {7})};
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    OpKind kind = OpKind(k);
    for (size_t count = 0; count <= 4; ++count)
      for (const Type& sample : samples) {
        std::vector<Type> inputs(count, sample);
        auto r = inferResultTypes(kind, inputs, {});
        if (!r) {
          EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
        }
      }
  }
  // Extreme attribute values (run under UBSan to catch overflow).
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  for (int64_t v : {big, small, int64_t(1) << 40, int64_t(-1), int64_t(0)}) {
    std::vector<int64_t> two = {v, v}, four = {v, v, v, v};
    Attributes conv = convAttrs(two, four, two, v);
    conv.set("output_padding", two);
    Type x = f32({1, 1 << 10, 1 << 10, 4});
    (void)inferResultTypes(OpKind::Conv, std::vector<Type>{x, f32({4, 3, 3, 4}), f32({4})}, conv);
    (void)inferResultTypes(OpKind::ConvTranspose, std::vector<Type>{x, f32({4, 3, 3, 4}), f32({4})}, conv);
    Attributes pool{
        {"kernel", two}, {"strides", two}, {"pads", four}, {"dilations", two}, {"ceil_mode", int64_t(1)}};
    (void)inferResultTypes(OpKind::MaxPool, std::vector<Type>{x}, pool);
    (void)inferResultTypes(OpKind::Tile, std::vector<Type>{f32({1 << 20, 2})}, {{"repeats", two}});
    (void)inferResultTypes(OpKind::Slice, std::vector<Type>{f32({5, 5})},
                           {{"starts", two}, {"ends", std::vector<int64_t>{big, small}}, {"steps", two}});
    (void)inferResultTypes(OpKind::Pad, std::vector<Type>{f32({5, 5})},
                           {{"pads", four}, {"mode", std::string("reflect")}, {"value", 0.0}});
    (void)inferResultTypes(OpKind::TopK, std::vector<Type>{f32({5, 5})},
                           {{"k", v}, {"axis", v}, {"largest", int64_t(1)}});
    (void)inferResultTypes(OpKind::Gather, std::vector<Type>{f32({5, 5}), Type(ElemKind::I32, {2})},
                           {{"axis", v}});
    (void)inferResultTypes(OpKind::Reshape, std::vector<Type>{f32({5, 5})}, {{"shape", two}});
    (void)inferResultTypes(OpKind::Broadcast, std::vector<Type>{f32({5, 1})}, {{"shape", two}});
  }
  EXPECT_CONTAINS(error(OpKind::Add, {f32({-1}), f32({1})}), "operand 0");
  // Wrong operand counts name the op.
  EXPECT_EQ(error(OpKind::Conv, {f32({1, 4, 4, 2})}), "Conv: expected 3 operands, got 1");
  // Mistyped attribute.
  EXPECT_CONTAINS(error(OpKind::Transpose, {f32({2, 3})}, {{"perm", int64_t(1)}}), "attribute 'perm'");
}
