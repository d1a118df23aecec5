// Private helpers shared by the reference kernels: family entry points,
// broadcasting iteration, element-kind dispatch and well-defined integer and
// float->int arithmetic. Not part of the SDK.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "ember/Kernels.h"

namespace ember::kernels {

using Inputs = std::span<const ConstTensorRef>;
using Outputs = std::span<const TensorRef>;

// Family entry points. runKernel has already checked operand counts, that the
// output types match the op's type rule and that kernelSupports() holds, so
// these may rely on consistent shapes.
Error runElementwise(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runLinearAlgebra(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runPooling(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runReduction(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runDataMovement(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runGatherScatter(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runResize(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
/// GridSample (GridSample.cpp), reached through the Resize family.
Error gridSample(const Attributes& attrs, Inputs in, Outputs out);
Error runQuantized(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runQuantizedTransformer(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runValueDependent(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
Error runOnnxQuantization(OpKind kind, const Attributes& attrs, Inputs in, Outputs out);
/// RoiAlign (RoiAlign.cpp), reached through the Resize family.
Error roiAlign(const Attributes& attrs, Inputs in, Outputs out);

/// The seeded Random primitive (Random.cpp).
Error randomValues(const Attributes& attrs, Inputs in, Outputs out);

/// Axis in [-rank, rank) to [0, rank); the type rule has checked the range.
inline size_t normalizeAxis(int64_t axis, size_t rank) {
  return size_t(axis < 0 ? axis + int64_t(rank) : axis);
}

inline int64_t product(const Dims& dims, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = begin; i < dims.size() && i < end; ++i) p *= dims[i];
  return p;
}

/// Row-major strides of `in` aligned to the right of `out` (numpy broadcast):
/// 0 on axes that `in` lacks or broadcasts from size 1.
inline Dims broadcastStrides(const Dims& in, const Dims& out) {
  Dims strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t inAxis = in.size() - 1 - i;
    size_t outAxis = out.size() - 1 - i;
    strides[outAxis] = (in[inAxis] == 1 && out[outAxis] != 1) ? 0 : stride;
    stride *= in[inAxis];
  }
  return strides;
}

/// Visits every index of `dims` in row-major order and calls
/// body(linearIndex, index), index[d] being the coordinate on axis d.
template <typename Body>
void forEachIndex(const Dims& dims, Body&& body) {
  std::array<int64_t, kMaxRank> index{};
  for (int64_t i = 0, n = product(dims); i < n; ++i) {
    body(i, std::as_const(index));
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

/// Visits every index of `dims` in row-major order and calls
/// body(linearIndex, offsets) where offsets[k] = sum_d index[d] * strides[k][d].
template <size_t N, typename Body>
void forEachOffset(const Dims& dims, const std::array<Dims, N>& strides, Body&& body) {
  int64_t total = product(dims);
  size_t rank = dims.size();
  std::array<int64_t, N> offsets{};
  std::array<int64_t, 8> index{};
  for (int64_t i = 0; i < total; ++i) {
    body(i, offsets);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) {
        for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * (dims[d] - 1);
      index[d] = 0;
    }
  }
}

/// Storage type of the element kinds. Bool is one byte holding 0 or 1;
/// f16/bf16 are raw 16-bit patterns.
template <ElemKind K>
struct Storage;
template <>
struct Storage<ElemKind::F32> {
  using type = float;
};
template <>
struct Storage<ElemKind::F16> {
  using type = uint16_t;
};
template <>
struct Storage<ElemKind::BF16> {
  using type = uint16_t;
};
template <>
struct Storage<ElemKind::Int8Q> {
  using type = int8_t;
};
template <>
struct Storage<ElemKind::UInt8Q> {
  using type = uint8_t;
};
template <>
struct Storage<ElemKind::Int32Q> {
  using type = int32_t;
};
template <>
struct Storage<ElemKind::I32> {
  using type = int32_t;
};
template <>
struct Storage<ElemKind::I64> {
  using type = int64_t;
};
template <>
struct Storage<ElemKind::Bool> {
  using type = uint8_t;
};
template <>
struct Storage<ElemKind::F64> {
  using type = double;
};

/// Calls f.template operator()<T>() with T = float for F32 and double for F64
/// (f64 computes in double, never through f32); returns false for other kinds.
template <typename F>
bool visitFloat(ElemKind kind, F&& f) {
  switch (kind) {
    case ElemKind::F32:
      f.template operator()<float>();
      return true;
    case ElemKind::F64:
      f.template operator()<double>();
      return true;
    default:
      return false;
  }
}

/// Calls f.template operator()<T>() with T the arithmetic type of an F32, F64,
/// I32 or I64 kind; returns false for other kinds.
template <typename F>
bool visitNumeric(ElemKind kind, F&& f) {
  if (visitFloat(kind, f)) return true;
  switch (kind) {
    case ElemKind::I32:
      f.template operator()<int32_t>();
      return true;
    case ElemKind::I64:
      f.template operator()<int64_t>();
      return true;
    default:
      return false;
  }
}

/// An unsigned integer type of `Size` bytes, for kernels that only move data.
template <size_t Size>
using Word = std::conditional_t<
    Size == 1, uint8_t,
    std::conditional_t<Size == 2, uint16_t, std::conditional_t<Size == 4, uint32_t, uint64_t>>>;

/// Calls f.template operator()<W>() with W an unsigned word of the kind's size.
template <typename F>
void visitBySize(ElemKind kind, F&& f) {
  switch (elemSize(kind)) {
    case 1:
      f.template operator()<uint8_t>();
      break;
    case 2:
      f.template operator()<uint16_t>();
      break;
    case 4:
      f.template operator()<uint32_t>();
      break;
    default:
      f.template operator()<uint64_t>();
      break;
  }
}

// ---- Well-defined integer arithmetic (wraps like two's complement) ----------

template <typename T>
T wrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) + U(b));
}
template <typename T>
T wrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) - U(b));
}
template <typename T>
T wrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) * U(b));
}
/// Truncates toward zero; x / 0 is 0 and MIN / -1 wraps to MIN.
template <typename T>
T safeDiv(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrapSub<T>(0, a);
  return a / b;
}

/// Float to integer, truncating toward zero and saturating; NaN becomes 0.
template <typename T>
T saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  // 2^63 and 2^31 are exact doubles; compare against them, not MAX.
  constexpr double kUpper = double(std::numeric_limits<T>::max()) + 1.0;
  constexpr double kLower = double(std::numeric_limits<T>::lowest());
  if (v >= kUpper) return std::numeric_limits<T>::max();
  if (v <= kLower) return std::numeric_limits<T>::lowest();
  return T(v);
}

}  // namespace ember::kernels
