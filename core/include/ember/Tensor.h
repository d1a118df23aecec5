// Tensors: a Type plus storage. TensorRef is the non-owning view that kernels
// and backends read and write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "ember/Type.h"

namespace ember {

/// A non-owning, mutable view of a dense row-major tensor.
struct TensorRef {
  Type type;
  void* data = nullptr;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
  int64_t numElements() const { return type.numElements(); }
};

/// A non-owning, read-only view of a dense row-major tensor.
struct ConstTensorRef {
  Type type;
  const void* data = nullptr;

  ConstTensorRef() = default;
  ConstTensorRef(Type t, const void* d) : type(std::move(t)), data(d) {}
  ConstTensorRef(const TensorRef& r) : type(r.type), data(r.data) {}

  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
  int64_t numElements() const { return type.numElements(); }
};

/// An owning tensor with 64-byte aligned, zero-initialised storage (but see
/// forOverwrite). Payloads of 2 MiB or more are mapped on their own, with
/// transparent huge pages requested (core/support/Tensor.cpp).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Type type);
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  /// Storage left unwritten (only the alignment padding is zeroed), for a
  /// caller that overwrites every element at once: zero-filling a large
  /// constant just before copying over it doubles its memory traffic.
  static Tensor forOverwrite(Type type);

  const Type& type() const { return type_; }
  size_t sizeInBytes() const { return type_.sizeInBytes(); }
  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data());
  }

  TensorRef ref() { return TensorRef{type_, data()}; }
  ConstTensorRef ref() const { return ConstTensorRef{type_, data()}; }

  /// Reinterprets with new dims of the same element count (no copy).
  void reshape(Dims dims);
  /// Bitwise equality of type and contents.
  bool bitwiseEqual(const Tensor& other) const;
  /// Stable 64-bit hash of type and contents.
  uint64_t hash() const;

  /// Builds a tensor from a list of values, converting to `kind`.
  template <typename T>
  static Tensor fromValues(ElemKind kind, Dims dims, std::span<const T> values);
  /// Reads element i as double, whatever the kind (quantized: raw integer).
  double elementAsDouble(int64_t i) const;
  /// Writes element i from a double, converting to the kind.
  void setElementFromDouble(int64_t i, double v);

 private:
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  Type type_;
  std::unique_ptr<std::byte, FreeAligned> storage_;
};

/// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t b);
/// From double in one rounding, as numpy's astype: going through float would
/// round twice (1 + 2^-11 + 2^-40 must become 1 + 2^-10, not 1).
uint16_t doubleToHalf(double d);
uint16_t doubleToBFloat16(double d);

template <typename T>
Tensor Tensor::fromValues(ElemKind kind, Dims dims, std::span<const T> values) {
  Tensor t(Type(kind, std::move(dims)));
  assert(int64_t(values.size()) == t.type().numElements());
  for (size_t i = 0; i < values.size(); ++i) t.setElementFromDouble(int64_t(i), double(values[i]));
  return t;
}

}  // namespace ember
