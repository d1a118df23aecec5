// Tests of .npy reading and writing against bytes produced by NumPy 1.24.
//
// The k* literals below were generated once with /usr/bin/python3:
//   b = io.BytesIO(); np.save(b, array)                 # or
//   np.lib.format.write_array(b, array, version=(2, 0))  # for kV2 / kV3
// with the arrays named next to each test. They are NumPy's bytes, not ours.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/Npy.h"

namespace ember {
namespace {

// np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1
const std::string kF32(
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }       "
    "                                                   \012\000\000\200\277\000\000\000\277"
    "\000\000\000\000\000\000\000\077\000\000\200\077\000\000\300\077",
    152);
// np.array([1.5, -2.25, 1e-3], dtype=np.float64)
const std::string kF64(
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\000\000\000\000\000\000\370\077"
    "\000\000\000\000\000\000\002\300\374\251\361\322MbP\077",
    152);
// np.array([1, -2, 3000000000], dtype=np.int64)
const std::string kI64(
    "\223NUMPY\001\000v\000{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\001\000\000\000\000\000\000\000"
    "\376\377\377\377\377\377\377\377\000^\320\262\000\000\000\000",
    152);
// np.array(7, dtype=np.int32)
const std::string kI32Scalar(
    "\223NUMPY\001\000v\000{'descr': '<i4', 'fortran_order': False, 'shape': (), }           "
    "                                                   \012\007\000\000\000",
    132);
// np.array([-128, 0, 127], dtype=np.int8)
const std::string kI8(
    "\223NUMPY\001\000v\000{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\200\000\177",
    131);
// np.array([0, 200, 255], dtype=np.uint8)
const std::string kU8(
    "\223NUMPY\001\000v\000{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\000\310\377",
    131);
// np.array([True, False, True])
const std::string kBool(
    "\223NUMPY\001\000v\000{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\001\000\001",
    131);
// np.array([1.0, -0.5, 65504], dtype=np.float16)
const std::string kF16(
    "\223NUMPY\001\000v\000{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }         "
    "                                                   \012\000<\000\270\377{",
    134);
// np.zeros((0, 3), dtype=np.float32)
const std::string kEmpty(
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }       "
    "                                                   \012",
    128);
// np.asfortranarray(np.arange(4, dtype=np.float32).reshape(2, 2))
const std::string kFortran(
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }        "
    "                                                   \012\000\000\000\000\000\000\000@\000"
    "\000\200\077\000\000@@",
    144);
// np.array([1, 2], dtype='>f4')
const std::string kBigEndian(
    "\223NUMPY\001\000v\000{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }         "
    "                                                   \012\077\200\000\000@\000\000\000",
    136);
// np.array([1, 'a'], dtype=object) with allow_pickle=True, header only
const std::string kObject(
    "\223NUMPY\001\000v\000{'descr': '|O', 'fortran_order': False, 'shape': (2,), }          "
    "                                                   \012",
    128);
// np.array(['ab', 'c'])
const std::string kUnicode(
    "\223NUMPY\001\000v\000{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }         "
    "                                                   \012a\000\000\000b\000\000\000c\000"
    "\000\000\000\000\000\000",
    144);
// np.array([1, 2], dtype=np.float32), versions 2.0 and 3.0
const std::string kV2(
    "\223NUMPY\002\000t\000\000\000{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } "
    "                                                         \012\000\000\200\077\000\000"
    "\000@",
    136);
const std::string kV3(
    "\223NUMPY\003\000t\000\000\000{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } "
    "                                                         \012\000\000\200\077\000\000"
    "\000@",
    136);
// np.zeros((1,) * 9, dtype=np.float32), written by hand: numpy allows rank 9, Ember stops at 8
const std::string kRank9(
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, "
    "1, 1, 1, 1), }                                     \012\000\000\000\000",
    132);
// np.array([1j], dtype=np.complex64)
const std::string kComplex(
    "\223NUMPY\001\000v\000{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }         "
    "                                                   \012\000\000\000\000\000\000\200\077",
    136);
// np.array([1], dtype=np.uint16)
const std::string kU16(
    "\223NUMPY\001\000v\000{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }         "
    "                                                   \012\001\000",
    130);

/// Parses bytes that must be valid.
Tensor parseOk(const std::string& bytes) {
  Expected<Tensor> t = parseNpy(bytes, "test.npy");
  EXPECT_TRUE(t.hasValue()) << t.error().message();
  if (!t) return Tensor();
  return t.take();
}

/// Parses bytes that must fail; returns the message.
std::string parseError(const std::string& bytes) {
  Expected<Tensor> t = parseNpy(bytes, "bad.npy");
  EXPECT_FALSE(t.hasValue());
  if (t) return "";
  return t.error().message();
}

/// A version-1.0 file with an arbitrary header text and data.
std::string npyWithHeader(const std::string& header, const std::string& data = "") {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xFF);
  out += char(header.size() >> 8);
  return out + header + data;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.type().numElements(); ++i) v.push_back(t.elementAsDouble(i));
  return v;
}

TEST(NpyRead, Float32FromNumpy) {
  Tensor t = parseOk(kF32);
  EXPECT_EQ(t.type().kind, ElemKind::F32);
  EXPECT_EQ(t.type().dims, (Dims{2, 3}));
  EXPECT_EQ(values(t), (std::vector<double>{-1, -0.5, 0, 0.5, 1, 1.5}));
}

TEST(NpyRead, Float64IsReadAsFloat64) {
  Tensor t = parseOk(kF64);
  EXPECT_EQ(t.type().kind, ElemKind::F64);
  EXPECT_EQ(t.type().dims, (Dims{3}));
  EXPECT_EQ(t.as<double>()[0], 1.5);
  EXPECT_EQ(t.as<double>()[1], -2.25);
  EXPECT_EQ(t.as<double>()[2], 1e-3);
}

TEST(NpyRead, Int64AndInt32Scalar) {
  Tensor t = parseOk(kI64);
  EXPECT_EQ(t.type().kind, ElemKind::I64);
  EXPECT_EQ(t.as<int64_t>()[0], 1);
  EXPECT_EQ(t.as<int64_t>()[1], -2);
  EXPECT_EQ(t.as<int64_t>()[2], 3000000000);

  Tensor s = parseOk(kI32Scalar);
  EXPECT_EQ(s.type().kind, ElemKind::I32);
  EXPECT_EQ(s.type().rank(), 0u);
  EXPECT_EQ(s.as<int32_t>()[0], 7);
}

TEST(NpyRead, ByteTypes) {
  Tensor i8 = parseOk(kI8);
  EXPECT_EQ(i8.type().kind, ElemKind::Int8Q);
  EXPECT_EQ(i8.type().scale, 1.0f);
  EXPECT_EQ(i8.type().offset, 0);
  EXPECT_EQ(values(i8), (std::vector<double>{-128, 0, 127}));

  Tensor u8 = parseOk(kU8);
  EXPECT_EQ(u8.type().kind, ElemKind::UInt8Q);
  EXPECT_EQ(values(u8), (std::vector<double>{0, 200, 255}));

  Tensor b = parseOk(kBool);
  EXPECT_EQ(b.type().kind, ElemKind::Bool);
  EXPECT_EQ(values(b), (std::vector<double>{1, 0, 1}));
}

TEST(NpyRead, Float16) {
  Tensor t = parseOk(kF16);
  EXPECT_EQ(t.type().kind, ElemKind::F16);
  const uint16_t* h = t.as<uint16_t>();
  EXPECT_EQ(halfToFloat(h[0]), 1.0f);
  EXPECT_EQ(halfToFloat(h[1]), -0.5f);
  EXPECT_EQ(halfToFloat(h[2]), 65504.0f);
}

TEST(NpyRead, EmptyArray) {
  Tensor t = parseOk(kEmpty);
  EXPECT_EQ(t.type().dims, (Dims{0, 3}));
  EXPECT_EQ(t.type().numElements(), 0);
}

TEST(NpyRead, Versions2And3) {
  for (const std::string* bytes : {&kV2, &kV3}) {
    Tensor t = parseOk(*bytes);
    EXPECT_EQ(t.type().dims, (Dims{2}));
    EXPECT_EQ(values(t), (std::vector<double>{1, 2}));
  }
}

TEST(NpyRead, UnsupportedArraysNameFileAndReason) {
  EXPECT_EQ(parseError(kFortran), "bad.npy: Fortran-order arrays are not supported");
  EXPECT_NE(parseError(kBigEndian).find("big-endian"), std::string::npos);
  EXPECT_NE(parseError(kObject).find("object arrays"), std::string::npos);
  EXPECT_NE(parseError(kUnicode).find("string arrays"), std::string::npos);
  EXPECT_NE(parseError(kComplex).find("complex"), std::string::npos);
  EXPECT_NE(parseError(kU16).find("unsupported dtype '<u2'"), std::string::npos);
  EXPECT_NE(parseError(kRank9).find("rank"), std::string::npos);
  for (const std::string* bytes : {&kFortran, &kBigEndian, &kObject, &kUnicode, &kComplex, &kU16, &kRank9})
    EXPECT_EQ(parseError(*bytes).rfind("bad.npy: ", 0), 0u);
}

TEST(NpyRead, MalformedHeaders) {
  auto expectError = [](const std::string& bytes, const std::string& fragment) {
    std::string message = parseError(bytes);
    EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;
    EXPECT_EQ(message.rfind("bad.npy: ", 0), 0u) << message;
  };
  const std::string f32x2(8, '\0');
  expectError("", "bad magic");
  expectError("\x93NUMP", "bad magic");
  expectError("GARBAGE-GARBAGE-GARBAGE", "bad magic");
  expectError(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "version 4.0");
  expectError(std::string("\x93NUMPY\x01\x00", 8), "truncated header");
  expectError(std::string("\x93NUMPY\x01\x00\xff\x7f{}", 12), "truncated header");
  expectError(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), "exceeds the limit");
  expectError(npyWithHeader("{'descr': '<f4', 'shape': (2,), }\n", f32x2), "no 'fortran_order'");
  expectError(npyWithHeader("{'fortran_order': False, 'shape': (2,), }\n", f32x2), "no 'descr'");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False}\n", f32x2), "no 'shape'");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", f32x2),
              "unexpected key 'x'");
  expectError(npyWithHeader("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}\n", f32x2), "malformed");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}\n", f32x2),
              "True or False");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n", f32x2),
              "negative dimension");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x)}\n", f32x2),
              "expected a dimension");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,\n", f32x2), "malformed");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}\n"),
              "too large");
  expectError(
      npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000, 4000000, 4000000)}\n"),
      "bad shape");
  expectError(npyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}\n", f32x2),
              "structured");
  expectError(
      npyWithHeader(std::string("{'descr': '<f4',\0 'fortran_order': False, 'shape': (2,)}\n", 58), f32x2),
      "NUL");
  expectError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk\n", f32x2),
              "unexpected text");
  expectError(npyWithHeader("{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}\n", f32x2),
              "unsupported dtype");
  expectError(npyWithHeader("{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}\n", f32x2),
              "unsupported dtype");
}

TEST(NpyRead, DataLengthMustMatchShape) {
  std::string truncated = kF32.substr(0, kF32.size() - 1);
  std::string message = parseError(truncated);
  EXPECT_NE(message.find("truncated data"), std::string::npos) << message;
  EXPECT_NE(message.find("24 bytes"), std::string::npos) << message;
  EXPECT_NE(parseError(kF32 + "x").find("trailing bytes"), std::string::npos);
}

TEST(NpyRead, NoPrefixOrByteFlipCrashes) {
  // Every truncation of a valid file fails cleanly.
  for (size_t n = 0; n < kF32.size(); ++n) EXPECT_FALSE(parseNpy(kF32.substr(0, n), "x.npy").hasValue()) << n;
  // Flipping any header byte either still parses or fails with a message.
  for (size_t i = 0; i < 128; ++i) {
    for (char c : {'\0', '\'', ',', '(', ')', '9', '\xff'}) {
      std::string bytes = kF32;
      bytes[i] = c;
      Expected<Tensor> t = parseNpy(bytes, "x.npy");
      if (!t) {
        EXPECT_FALSE(t.error().message().empty());
      }
    }
  }
}

TEST(NpyWrite, ByteIdenticalToNumpy) {
  for (const std::string* bytes : {&kF32, &kI64, &kI32Scalar, &kI8, &kU8, &kBool, &kF16, &kEmpty}) {
    Tensor t = parseOk(*bytes);
    EXPECT_EQ(serializeNpy(t), *bytes) << t.type().str();
  }
}

TEST(NpyWrite, RoundTripThroughFileEveryKind) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ember_npy_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.npy").string();
  const std::vector<double> data{-3, 0, 1, 2, 5, 7};
  for (ElemKind kind : {ElemKind::F32, ElemKind::F16, ElemKind::I64, ElemKind::I32, ElemKind::Int8Q,
                        ElemKind::UInt8Q, ElemKind::Bool}) {
    std::vector<double> input = data;
    if (kind == ElemKind::UInt8Q) input[0] = 250;
    if (kind == ElemKind::Bool)
      for (double& v : input) v = v > 0;
    Tensor t = Tensor::fromValues<double>(kind, {1, 2, 3}, input);
    ASSERT_FALSE(writeNpy(path, t)) << elemKindName(kind);
    Expected<Tensor> back = readNpy(path);
    ASSERT_TRUE(back.hasValue()) << back.error().message();
    EXPECT_EQ(back->type().kind, kind);
    EXPECT_EQ(back->type().dims, (Dims{1, 2, 3}));
    EXPECT_EQ(values(*back), input) << elemKindName(kind);
  }
  // BF16 has no NumPy dtype: written widened to f32. Int32Q as its raw i32.
  Tensor bf = Tensor::fromValues<double>(ElemKind::BF16, {2}, std::vector<double>{1.5, -2});
  Expected<Tensor> bfBack = parseNpy(serializeNpy(bf), "bf16");
  ASSERT_TRUE(bfBack.hasValue());
  EXPECT_EQ(bfBack->type().kind, ElemKind::F32);
  EXPECT_EQ(values(*bfBack), (std::vector<double>{1.5, -2}));
  Tensor q32(Type(ElemKind::Int32Q, {2}, 0.25f, 0));
  q32.as<int32_t>()[1] = -9;
  Expected<Tensor> qBack = parseNpy(serializeNpy(q32), "i32q");
  ASSERT_TRUE(qBack.hasValue());
  EXPECT_EQ(qBack->type().kind, ElemKind::I32);
  EXPECT_EQ(qBack->as<int32_t>()[1], -9);
  std::filesystem::remove_all(dir);
}

TEST(NpyFile, MissingFileNamesPath) {
  Expected<Tensor> t = readNpy("/nonexistent/dir/input.npy");
  ASSERT_FALSE(t.hasValue());
  EXPECT_NE(t.error().message().find("/nonexistent/dir/input.npy"), std::string::npos);
}

TEST(NpyFile, WriteToBadPathFails) {
  Tensor t(Type(ElemKind::F32, {1}));
  Error e = writeNpy("/nonexistent/dir/out.npy", t);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(e.message().find("/nonexistent/dir/out.npy"), std::string::npos);
}

}  // namespace
}  // namespace ember
