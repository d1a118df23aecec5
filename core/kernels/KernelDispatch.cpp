// runKernel and kernelSupports: checks a call against the op's type rule and
// the element kinds each kernel implements, then dispatches to a family.
#include <algorithm>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/VendorOp.h"

namespace ember {
namespace {

using kernels::Inputs;
using kernels::Outputs;

enum class Family {
  None,
  Elementwise,
  LinearAlgebra,
  Pooling,
  Reduction,
  DataMovement,
  GatherScatter,
  Resize,
  Quantized,
  QuantizedTransformer,  // integer-only Softmax, LayerNorm, GELU (QuantizedTransformer.cpp)
  ValueDependent,
  OnnxQuantization,
  Random,
  Vendor  // a registered vendor op: its def's reference kernel (ember/VendorOp.h)
};

Family familyOf(OpKind kind) {
  switch (kind) {
    case OpKind::MatMul:
    case OpKind::Conv:
    case OpKind::ConvTranspose:
    case OpKind::Det:
      return Family::LinearAlgebra;
    case OpKind::MaxPool:
    case OpKind::AvgPool:
      return Family::Pooling;
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
    case OpKind::TopK:
      return Family::Reduction;
    case OpKind::Transpose:
    case OpKind::Reshape:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Pad:
    case OpKind::Tile:
    case OpKind::Broadcast:
    case OpKind::Gather:
    case OpKind::Copy:
      return Family::DataMovement;
    case OpKind::GatherElements:
    case OpKind::ScatterElements:
    case OpKind::GatherND:
    case OpKind::ScatterND:
      return Family::GatherScatter;
    case OpKind::Resize:
    case OpKind::GridSample:
    case OpKind::RoiAlign:
      return Family::Resize;
    case OpKind::Quantize:
    case OpKind::Dequantize:
    case OpKind::Requantize:
    case OpKind::QuantizedConv:
    case OpKind::QuantizedMatMul:
    case OpKind::QuantizedAdd:
    case OpKind::QuantizedAvgPool:
    case OpKind::Lookup:
      return Family::Quantized;
    case OpKind::QuantizedSoftmax:
    case OpKind::QuantizedLayerNorm:
    case OpKind::QuantizedGelu:
      return Family::QuantizedTransformer;
    case OpKind::NonZero:
    case OpKind::Unique:
    case OpKind::NonMaxSuppression:
      return Family::ValueDependent;
    case OpKind::QuantizeLinear:
    case OpKind::DequantizeLinear:
    case OpKind::DynamicQuantizeLinear:
    case OpKind::MatMulInteger:
      return Family::OnnxQuantization;
    case OpKind::Random:
      return Family::Random;
    case OpKind::VendorOp:
      return Family::Vendor;
    default:
      // Every other primitive is elementwise (Ops.def groups them so).
      return opInfo(kind).category == OpCategory::Primitive ? Family::Elementwise : Family::None;
  }
}

using KindSet = unsigned;
constexpr KindSet bit(ElemKind k) { return 1u << unsigned(k); }
constexpr KindSet kF32 = bit(ElemKind::F32);
/// f32 and f64: the float kernels are templates over float and double.
constexpr KindSet kFloat = kF32 | bit(ElemKind::F64);
constexpr KindSet kNumeric = kFloat | bit(ElemKind::I32) | bit(ElemKind::I64);
constexpr KindSet kBool = bit(ElemKind::Bool);
constexpr KindSet kCastable = kNumeric | kBool | bit(ElemKind::F16) | bit(ElemKind::BF16);
constexpr KindSet kAny = ~0u;
constexpr KindSet kQuant8 = bit(ElemKind::Int8Q) | bit(ElemKind::UInt8Q);

/// The element kinds the reference kernel of `kind` implements, keyed on its
/// first operand (the type rule ties the other operands' kinds to it).
KindSet supportedKinds(OpKind kind) {
  switch (kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Less:
    case OpKind::LessEqual:
    case OpKind::Greater:
    case OpKind::GreaterEqual:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Relu:
    case OpKind::Clip:
    case OpKind::MatMul:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
    case OpKind::TopK:
    case OpKind::Mod:
    case OpKind::Pow:
      return kNumeric;
    case OpKind::Equal:
      return kNumeric | kBool;
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Not:
    case OpKind::Select:
      return kBool;  // the condition; values may be any kind
    case OpKind::Cast:
      return kCastable;
    case OpKind::MaxPool:
      return kNumeric | bit(ElemKind::Int8Q) | bit(ElemKind::UInt8Q);
    case OpKind::Transpose:
    case OpKind::Reshape:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Pad:
    case OpKind::Tile:
    case OpKind::Broadcast:
    case OpKind::Gather:
    case OpKind::Copy:
    case OpKind::GatherElements:
    case OpKind::ScatterElements:
    case OpKind::GatherND:
    case OpKind::ScatterND:
    case OpKind::NonZero:
    case OpKind::Random:
      return kAny;
    case OpKind::Unique:
      return kNumeric | kBool;
    // Linear Resize takes float kinds only (type rule), so this excludes
    // f16/bf16, which the kernel cannot interpolate.
    case OpKind::Resize:
      return kNumeric | kBool;
    // The quantized primitives: their type rules pin every other operand.
    case OpKind::Quantize:
    case OpKind::RoiAlign:
      return kF32;
    case OpKind::Dequantize:
      return kQuant8 | bit(ElemKind::Int32Q);
    case OpKind::QuantizeLinear:
    case OpKind::DynamicQuantizeLinear:
      return kF32;
    case OpKind::DequantizeLinear:
      return kQuant8 | bit(ElemKind::I32);
    case OpKind::MatMulInteger:
      return kQuant8;
    case OpKind::Requantize:
    case OpKind::QuantizedConv:
    case OpKind::QuantizedMatMul:
    case OpKind::QuantizedAdd:
    case OpKind::QuantizedAvgPool:
    case OpKind::Lookup:
    case OpKind::QuantizedSoftmax:
    case OpKind::QuantizedLayerNorm:
    case OpKind::QuantizedGelu:
      return kQuant8;
    default:
      return familyOf(kind) == Family::None ? 0 : kFloat;
  }
}

bool kindsSupported(OpKind kind, std::span<const Type> inputs, std::span<const Type> results) {
  if (inputs.empty() || results.empty()) return false;
  if (!(supportedKinds(kind) & bit(inputs[0].kind))) return false;
  if (kind == OpKind::Cast) return (kCastable & bit(results[0].kind)) != 0;
  return true;
}

/// Linear and cubic Resize interpolate f32 and f64; nearest moves elements of any kind.
bool resizeSupported(const Attributes& attrs, const Type& input) {
  return attrs.getString("mode", "nearest") == "nearest" || input.kind == ElemKind::F32 ||
         input.kind == ElemKind::F64;
}

std::string typesStr(std::span<const Type> types) {
  std::string s;
  for (const Type& t : types) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

}  // namespace

bool kernelSupports(OpKind kind, std::span<const Type> inputTypes, std::span<const Type> resultTypes) {
  // Which vendor op, and so whether it runs, is in the attributes (the overload below).
  if (size_t(kind) >= kNumOpKinds || familyOf(kind) == Family::None || kind == OpKind::VendorOp) return false;
  const OpInfo& info = opInfo(kind);
  size_t operands = info.operandNames.size();
  bool countsOk = info.variadic ? inputTypes.size() >= operands : inputTypes.size() == operands;
  if (!countsOk || resultTypes.size() != info.numResults) return false;
  return kindsSupported(kind, inputTypes, resultTypes);
}

bool kernelSupports(OpKind kind, std::span<const Type> inputTypes, std::span<const Type> resultTypes,
                    const Attributes& attrs) {
  if (kind != OpKind::VendorOp) return kernelSupports(kind, inputTypes, resultTypes);
  // A registered vendor op's reference kernel runs whatever its type rule accepts.
  auto expected = inferResultTypes(kind, inputTypes, attrs);
  return expected && std::equal(expected->begin(), expected->end(), resultTypes.begin(), resultTypes.end());
}

Error runKernel(OpKind kind, const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                std::span<const TensorRef> outputs) {
  if (size_t(kind) >= kNumOpKinds) return makeError("runKernel: unknown op kind ", unsigned(kind));
  if (kind == OpKind::VendorOp) return runVendorOpKernel(attrs, inputs, outputs);
  Family family = familyOf(kind);
  if (family == Family::None) return makeError(opName(kind), ": has no reference kernel (not a primitive)");

  // The type rule validates operand counts, attributes and shapes, so the
  // kernels below can rely on them.
  std::vector<Type> inputTypes;
  inputTypes.reserve(inputs.size());
  for (const ConstTensorRef& t : inputs) inputTypes.push_back(t.type);
  auto expected = inferResultTypes(kind, inputTypes, attrs);
  if (!expected) return expected.error();
  if (expected->size() != outputs.size())
    return makeError(opName(kind), ": expected ", expected->size(), " outputs, got ", outputs.size());
  std::vector<Type> resultTypes;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].type != (*expected)[i])
      return makeError(opName(kind), ": output ", i, " is ", outputs[i].type.str(),
                       " but the type rule gives ", (*expected)[i].str());
    if (outputs[i].data == nullptr && outputs[i].numElements() > 0)
      return makeError(opName(kind), ": output ", i, " has no storage");
    resultTypes.push_back(outputs[i].type);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].data == nullptr && inputs[i].numElements() > 0)
      return makeError(opName(kind), ": input ", i, " has no storage");
  if (!kernelSupports(kind, inputTypes, resultTypes) ||
      (kind == OpKind::Resize && !resizeSupported(attrs, inputTypes[0])))
    return makeError(opName(kind), ": no reference kernel for (", typesStr(inputTypes), ") -> (",
                     typesStr(resultTypes), ")");

  switch (family) {
    case Family::Elementwise:
      return kernels::runElementwise(kind, attrs, inputs, outputs);
    case Family::LinearAlgebra:
      return kernels::runLinearAlgebra(kind, attrs, inputs, outputs);
    case Family::Pooling:
      return kernels::runPooling(kind, attrs, inputs, outputs);
    case Family::Reduction:
      return kernels::runReduction(kind, attrs, inputs, outputs);
    case Family::DataMovement:
      return kernels::runDataMovement(kind, attrs, inputs, outputs);
    case Family::GatherScatter:
      return kernels::runGatherScatter(kind, attrs, inputs, outputs);
    case Family::Resize:
      return kernels::runResize(kind, attrs, inputs, outputs);
    case Family::Quantized:
      return kernels::runQuantized(kind, attrs, inputs, outputs);
    case Family::QuantizedTransformer:
      return kernels::runQuantizedTransformer(kind, attrs, inputs, outputs);
    case Family::ValueDependent:
      return kernels::runValueDependent(kind, attrs, inputs, outputs);
    case Family::OnnxQuantization:
      return kernels::runOnnxQuantization(kind, attrs, inputs, outputs);
    case Family::Random:
      return kernels::randomValues(attrs, inputs, outputs);
    case Family::Vendor:  // dispatched above
    case Family::None:
      break;
  }
  return makeError(opName(kind), ": has no reference kernel");
}

}  // namespace ember
