// Tensor::hash is FNV-1a 64 over the kind byte, the dims (int64, little
// endian) and the payload, from the offset basis 1469598103934665603 (the
// standard basis without its last digit: the value keys quantization profiles
// already written, so it stays); it is pinned to values computed by an
// independent Python FNV-1a with that basis. hashTensors, the
// interleaved form, must give exactly Tensor::hash for every tensor.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "ember/Tensor.h"
#include "ember/TensorHash.h"

namespace ember {
namespace {

TEST(TensorHash, MatchesIndependentFnv1a) {
  // python: fnv1a64(bytes([0]) + int64 [2, 3] + float32 arange(6))
  std::vector<float> f32(6);
  std::iota(f32.begin(), f32.end(), 0.0f);
  Tensor a = Tensor::fromValues<float>(ElemKind::F32, {2, 3}, f32);
  EXPECT_EQ(a.hash(), 0x0c5c39a43e7d5835ull);
  // python: fnv1a64(bytes([7]) + int64 [5] + int64 [-1, 0, 1, 2**40, 7])
  std::vector<double> i64 = {-1, 0, 1, double(int64_t(1) << 40), 7};
  Tensor b = Tensor::fromValues<double>(ElemKind::I64, {5}, i64);
  EXPECT_EQ(b.hash(), 0x3b0553830378a84cull);
  const Tensor* both[] = {&a, &b};
  EXPECT_EQ(hashTensors(both), (std::vector<uint64_t>{0x0c5c39a43e7d5835ull, 0x3b0553830378a84cull}));
}

TEST(TensorHash, InterleavedEqualsOneByOne) {
  // Sizes that finish lanes at different steps, empty tensors, more tensors
  // than lanes, and equal payloads.
  std::mt19937 rng(17);
  std::vector<Tensor> tensors;
  for (int64_t n : {0, 1, 3, 31, 32, 33, 1000, 4096, 100003, 7, 0, 250, 64, 65, 129, 1000, 2, 5000})
    tensors.emplace_back(Type(ElemKind::Int8Q, {n}));
  tensors.emplace_back(Type(ElemKind::F32, {3, 5, 7}));
  for (Tensor& t : tensors) {
    auto* bytes = static_cast<unsigned char*>(t.data());
    for (size_t i = 0; i < t.sizeInBytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  }
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : tensors) pointers.push_back(&t);
  const std::vector<uint64_t> hashes = hashTensors(pointers);
  ASSERT_EQ(hashes.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) EXPECT_EQ(hashes[i], tensors[i].hash()) << "tensor " << i;
  EXPECT_TRUE(hashTensors({}).empty());
}

}  // namespace
}  // namespace ember
