// .npy '<f8' arrays are f64 tensors: read exactly, written byte-identical to
// numpy's np.save (the bytes below are np.save's output, noted per constant).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ember/Npy.h"

using namespace ember;

namespace {

/// A format 1.0 header as np.save writes it when the dict fits in 117 bytes:
/// magic, version, 16-bit length 118, the dict padded with spaces, newline.
std::string header(const std::string& dict) {
  std::string padded = dict;
  padded.resize(117, ' ');
  return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + padded + "\n";
}

std::string rawDoubles(const std::vector<double>& v) {
  std::string s(v.size() * 8, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// np.save(f, np.array([1.5, -2.25, 1e-3, 0.1]))
const std::vector<double> kValues = {1.5, -2.25, 1e-3, 0.1};
const std::string kNumpyF64 =
    header("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }") + rawDoubles(kValues);

TEST(F64Npy, ReadsFloat64Exactly) {
  Expected<Tensor> t = parseNpy(kNumpyF64, "x.npy");
  ASSERT_TRUE(t.hasValue()) << t.error().message();
  EXPECT_EQ(t->type().kind, ElemKind::F64);
  EXPECT_EQ(t->type().dims, (Dims{4}));
  EXPECT_EQ(std::vector<double>(t->as<double>(), t->as<double>() + 4), kValues);
  // 0.1 keeps its 53 bits: an f32 detour would give 0.10000000149011612.
  EXPECT_EQ(t->elementAsDouble(3), 0.1);
}

TEST(F64Npy, WritesWhatNumpyWrites) {
  Tensor t(Type(ElemKind::F64, {4}));
  std::memcpy(t.data(), kValues.data(), 32);
  EXPECT_EQ(serializeNpy(t), kNumpyF64);
  Expected<Tensor> back = parseNpy(serializeNpy(t), "round-trip.npy");
  ASSERT_TRUE(back.hasValue()) << back.error().message();
  EXPECT_TRUE(back->bitwiseEqual(t));
}

TEST(F64Npy, NarrowingForAFloatInputRoundsLikeNumpyAstype) {
  Tensor t = *parseNpy(kNumpyF64, "x.npy");
  Tensor f = narrowFloat64(t, ElemKind::F32);
  ASSERT_EQ(f.type(), Type(ElemKind::F32, {4}));
  // np.array([1.5, -2.25, 1e-3, 0.1]).astype(np.float32)
  EXPECT_EQ(std::vector<float>(f.as<float>(), f.as<float>() + 4),
            (std::vector<float>{1.5f, -2.25f, 1e-3f, 0.1f}));
  Tensor h = narrowFloat64(t, ElemKind::F16);
  EXPECT_EQ(h.type().kind, ElemKind::F16);
  EXPECT_EQ(halfToFloat(h.as<uint16_t>()[1]), -2.25f);
  // Not float64, or not a float target: unchanged, for the caller's kind check.
  EXPECT_EQ(narrowFloat64(t, ElemKind::I64).type().kind, ElemKind::F64);
  EXPECT_TRUE(narrowFloat64(f, ElemKind::F16).bitwiseEqual(f));
}

TEST(F64Npy, RankEightRoundTripAndRankNineIsAnError) {
  // np.save(f, np.arange(4.0).reshape(2, 1, 1, 1, 1, 1, 1, 2))
  const std::string rank8 =
      header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1, 1, 1, 1, 1, 1, 2), }") +
      rawDoubles({0, 1, 2, 3});
  Expected<Tensor> t = parseNpy(rank8, "r8.npy");
  ASSERT_TRUE(t.hasValue()) << t.error().message();
  EXPECT_EQ(t->type().dims, (Dims{2, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_EQ(serializeNpy(*t), rank8);

  const std::string rank9 =
      header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1, 1, 1, 1, 1, 1, 1, 2), }") +
      rawDoubles({0, 1, 2, 3});
  Expected<Tensor> bad = parseNpy(rank9, "r9.npy");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_NE(bad.error().message().find("r9.npy"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("8"), std::string::npos) << bad.error().message();
}

}  // namespace
