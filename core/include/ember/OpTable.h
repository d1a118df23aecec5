// What Ops.def declares about each op besides its operands' names and its
// attributes: the op's family and the element kinds its reference kernel
// implements per operand. Readers (kernel dispatch, passes, reports) ask
// these instead of keeping their own lists of ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/Graph.h"
#include "ember/Type.h"

namespace ember {

/// What kind of computation an op is. A primitive's family picks its
/// reference kernel (core/kernels/KernelDispatch.cpp).
enum class OpFamily : uint8_t {
  Storage,               ///< graph leaves: Placeholder, Constant
  ElementwiseUnary,      ///< one input, one value per element
  ElementwiseBinary,     ///< two inputs, numpy broadcasting
  ElementwiseTernary,    ///< Select
  LinearAlgebra,         ///< MatMul, Conv, Det, Gemm, Einsum
  Pooling,               ///< windows over NHWC
  Reduction,             ///< over axes (ReduceSum, ArgMax, TopK)
  DataMovement,          ///< moves elements without arithmetic
  GatherScatter,         ///< element- and slice-indexed gathers and scatters
  Resampling,            ///< interpolation: Resize, GridSample, RoiAlign
  ValueDependent,        ///< output sizes depend on the values (docs/importer.md)
  OnnxQuantization,      ///< ONNX's QuantizeLinear family (round half to even)
  Random,                ///< seeded random values
  Quantized,             ///< Ember's int8 primitives (docs/quantization.md)
  QuantizedTransformer,  ///< integer-only softmax, layer norm, GELU
  Vendor,                ///< a vendor op a backend plugin registered
  Normalization,         ///< high-level normalisations (BatchNorm, Softmax)
  IRBookkeeping,         ///< instruction-IR buffer lifetimes
};

std::string_view opFamilyName(OpFamily family);

/// A set of element kinds, one bit per ElemKind.
using ElemKindSet = uint32_t;
constexpr ElemKindSet elemKindBit(ElemKind kind) { return ElemKindSet(1) << unsigned(kind); }

// The named element-kind sets Ops.def's operand declarations and the type
// rules are written in; each is defined here only.
/// What the float reference kernels compute (templates over float and double).
inline constexpr ElemKindSet kFloatKinds = elemKindBit(ElemKind::F32) | elemKindBit(ElemKind::F64);
/// Half-precision storage kinds: cast and moved, not computed on by the reference kernels.
inline constexpr ElemKindSet kHalfKinds = elemKindBit(ElemKind::F16) | elemKindBit(ElemKind::BF16);
inline constexpr ElemKindSet kIntKinds = elemKindBit(ElemKind::I32) | elemKindBit(ElemKind::I64);
inline constexpr ElemKindSet kNumericKinds = kFloatKinds | kIntKinds;
inline constexpr ElemKindSet kBoolKinds = elemKindBit(ElemKind::Bool);
inline constexpr ElemKindSet kCastableKinds = kNumericKinds | kBoolKinds | kHalfKinds;
inline constexpr ElemKindSet kQuant8Kinds = elemKindBit(ElemKind::Int8Q) | elemKindBit(ElemKind::UInt8Q);
inline constexpr ElemKindSet kAnyKinds = (elemKindBit(ElemKind::F64) << 1) - 1;

inline bool contains(ElemKindSet set, ElemKind kind) { return (set & elemKindBit(kind)) != 0; }
/// "f32, f64, i32, i64".
std::string elemKindSetStr(ElemKindSet set);
/// The set a name of Ops.def's operand syntax stands for ("numeric|bool"); nullopt for an unknown name.
std::optional<ElemKindSet> elemKindSetFromName(std::string_view names);

OpFamily opFamily(OpKind kind);
/// Whether Ops.def declares the element kinds of `operand` (the last operand
/// stands for every variadic one). Every primitive's operands do.
bool declaresOperandKinds(OpKind kind, size_t operand);
/// The element kinds the reference kernel of `kind` implements for `operand`
/// (kAnyKinds when undeclared or out of range: the type rule decides).
ElemKindSet operandElemKinds(OpKind kind, size_t operand);
inline bool acceptsElemKind(OpKind kind, size_t operand, ElemKind elemKind) {
  return contains(operandElemKinds(kind, operand), elemKind);
}

}  // namespace ember
