// Rank 8 (kMaxRank): types, transposes, reductions, broadcasts and slices of
// rank-8 tensors. Expected values are numpy's (the expression is noted).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "ember/Kernels.h"

using namespace ember;

namespace {

const Dims kDims = {2, 1, 2, 3, 1, 2, 1, 2};  // 48 elements

/// t = np.arange(48.0).reshape(2, 1, 2, 3, 1, 2, 1, 2) in `kind`.
Tensor arange(ElemKind kind) {
  Tensor t(Type(kind, kDims));
  for (int64_t i = 0; i < 48; ++i) t.setElementFromDouble(i, double(i));
  return t;
}

std::vector<int64_t> asInts(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.type().numElements(); ++i) v.push_back(int64_t(t.elementAsDouble(i)));
  return v;
}

Tensor run1(OpKind kind, const Tensor& input, const Attributes& attrs) {
  std::vector<Type> types = {input.type()};
  auto resultTypes = inferResultTypes(kind, types, attrs);
  EXPECT_TRUE(resultTypes.hasValue()) << resultTypes.error().message();
  if (!resultTypes) return {};
  Tensor out((*resultTypes)[0]);
  std::vector<ConstTensorRef> in = {input.ref()};
  std::vector<TensorRef> outs = {out.ref()};
  EXPECT_TRUE(kernelSupports(kind, types, *resultTypes)) << opName(kind);
  Error e = runKernel(kind, attrs, in, outs);
  EXPECT_FALSE(e) << e.message();
  return out;
}

TEST(Rank8, TypesUpToRankEightAreValid) {
  EXPECT_EQ(kMaxRank, 8u);
  EXPECT_FALSE(checkDims(Dims(8, 2)));
  Error nine = checkDims(Dims(9, 1));
  ASSERT_TRUE(bool(nine));
  EXPECT_EQ(nine.message(), "rank 9 exceeds the maximum rank 8");
}

TEST(Rank8, TransposeReversedAndShuffled) {
  for (ElemKind kind : {ElemKind::F32, ElemKind::F64, ElemKind::I64}) {
    // t.transpose(7, 6, 5, 4, 3, 2, 1, 0)
    Tensor reversed =
        run1(OpKind::Transpose, arange(kind), {{"perm", std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1, 0}}});
    EXPECT_EQ(reversed.type().dims, (Dims{2, 1, 2, 1, 3, 2, 1, 2}));
    EXPECT_EQ(asInts(reversed),
              (std::vector<int64_t>{0, 24, 12, 36, 4,  28, 16, 40, 8, 32, 20, 44, 2,  26, 14, 38,
                                    6, 30, 18, 42, 10, 34, 22, 46, 1, 25, 13, 37, 5,  29, 17, 41,
                                    9, 33, 21, 45, 3,  27, 15, 39, 7, 31, 19, 43, 11, 35, 23, 47}))
        << elemKindName(kind);
    // t.transpose(3, 0, 7, 1, 5, 2, 6, 4)
    Tensor shuffled =
        run1(OpKind::Transpose, arange(kind), {{"perm", std::vector<int64_t>{3, 0, 7, 1, 5, 2, 6, 4}}});
    EXPECT_EQ(shuffled.type().dims, (Dims{3, 2, 2, 1, 2, 2, 1, 1}));
    EXPECT_EQ(asInts(shuffled),
              (std::vector<int64_t>{0, 12, 2,  14, 1, 13, 3,  15, 24, 36, 26, 38, 25, 37, 27, 39,
                                    4, 16, 6,  18, 5, 17, 7,  19, 28, 40, 30, 42, 29, 41, 31, 43,
                                    8, 20, 10, 22, 9, 21, 11, 23, 32, 44, 34, 46, 33, 45, 35, 47}))
        << elemKindName(kind);
  }
}

TEST(Rank8, ReduceSumOverScatteredAxes) {
  for (ElemKind kind : {ElemKind::F32, ElemKind::F64, ElemKind::I64}) {
    // t.sum(axis=(0, 3, 7), keepdims=True)
    Tensor sum = run1(OpKind::ReduceSum, arange(kind),
                      {{"axes", std::vector<int64_t>{0, 3, 7}}, {"keepdims", int64_t(1)}});
    EXPECT_EQ(sum.type().dims, (Dims{1, 1, 2, 1, 1, 2, 1, 1}));
    EXPECT_EQ(asInts(sum), (std::vector<int64_t>{198, 222, 342, 366})) << elemKindName(kind);
  }
}

TEST(Rank8, SliceWithAReversedAxis) {
  // t[1:2, :, ::-1, 1:3, :, 1:, :, :1]
  Tensor sliced = run1(OpKind::Slice, arange(ElemKind::F64),
                       {{"starts", std::vector<int64_t>{1, 0, 1, 1, 0, 1, 0, 0}},
                        {"ends", std::vector<int64_t>{2, 1, -1, 3, 1, 2, 1, 1}},
                        {"steps", std::vector<int64_t>{1, 1, -1, 1, 1, 1, 1, 1}}});
  EXPECT_EQ(sliced.type().dims, (Dims{1, 1, 2, 2, 1, 1, 1, 1}));
  EXPECT_EQ(asInts(sliced), (std::vector<int64_t>{42, 46, 30, 34}));
}

}  // namespace
