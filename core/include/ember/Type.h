// Element kinds and tensor types: every value in Ember has a static shape and
// an explicit element kind (docs/design.md, "Rules").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/Error.h"

namespace ember {

/// The element kinds of docs/design.md. Quantized kinds carry scale and offset in
/// the Type.
enum class ElemKind : uint8_t {
  F32,
  F16,
  BF16,
  Int8Q,   ///< int8 quantized: real = scale * (q - offset)
  UInt8Q,  ///< uint8 quantized
  Int32Q,  ///< int32 quantized (bias), offset 0
  I32,
  I64,
  Bool,
  /// IEEE double: a storage and compute kind of the reference kernels; other
  /// backends may decline it (appended last so existing kind numbers stay).
  F64,
};

/// Maximum tensor rank (ONNX's node tests reach rank 7).
inline constexpr size_t kMaxRank = 8;

/// Bytes of one element of `kind`.
size_t elemSize(ElemKind kind);
/// Short name: "f32", "i8q", "u8q", "i32q", "i32", "i64", "bool", "f16", "bf16", "f64".
std::string_view elemKindName(ElemKind kind);
std::optional<ElemKind> elemKindFromName(std::string_view name);
bool isQuantized(ElemKind kind);
bool isFloat(ElemKind kind);  ///< f32, f16, bf16, f64

using Dims = std::vector<int64_t>;

/// A tensor type: element kind, static shape (rank <= kMaxRank, rank 0 is a scalar)
/// and, for quantized kinds, scale and offset.
struct Type {
  ElemKind kind = ElemKind::F32;
  Dims dims;
  float scale = 1.0f;
  int32_t offset = 0;

  Type() = default;
  Type(ElemKind k, Dims d) : kind(k), dims(std::move(d)) {}
  Type(ElemKind k, Dims d, float s, int32_t o) : kind(k), dims(std::move(d)), scale(s), offset(o) {}

  size_t rank() const { return dims.size(); }
  /// Product of dims (1 for a scalar). Types are validated on creation, so
  /// this never overflows for a verified type.
  int64_t numElements() const;
  size_t sizeInBytes() const { return size_t(numElements()) * elemSize(kind); }
  /// Row-major strides in elements.
  Dims strides() const;
  /// Same kind and quantization, other dims.
  Type withDims(Dims d) const { return Type(kind, std::move(d), scale, offset); }
  Type withKind(ElemKind k) const { return Type(k, dims); }

  /// "f32<1x3x224x224>", "i8q<1x10:0.05,-3>".
  std::string str() const;

  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }
};

/// Validates dims: rank <= kMaxRank, non-negative, product fits in int64 and
/// below `maxElements`. Used by the importer and every shape rule.
Error checkDims(const Dims& dims, int64_t maxElements = int64_t(1) << 40);

/// Validates dims as checkDims does (no element limit) and that the tensor's
/// storage fits in `maxBytes`; the product is overflow-checked, so any shape
/// from a file may be passed. The message names the type and the limit.
Error checkTensorBytes(const Type& type, int64_t maxBytes);

/// Numpy broadcast of two shapes, or an error naming both.
Expected<Dims> broadcastDims(const Dims& a, const Dims& b);

std::string dimsStr(const Dims& dims);  ///< "1x3x224x224" ("scalar" for rank 0)

}  // namespace ember
