// runKernel and kernelSupports: checks a call against the op's type rule and
// the element kinds Ops.def declares for its kernel, then dispatches on the
// op's family (ember/OpTable.h). Neither list lives here.
#include <algorithm>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"
#include "ember/OpTable.h"
#include "ember/VendorOp.h"

namespace ember {
namespace {

using kernels::Inputs;
using kernels::Outputs;

/// Whether `kind` has a reference kernel: primitives, and the IR's Copy. The
/// kernel file is picked by the op's family below.
bool hasReferenceKernel(OpKind kind) {
  const OpCategory category = opInfo(kind).category;
  if (category != OpCategory::Primitive && category != OpCategory::IROnly) return false;
  switch (opFamily(kind)) {
    case OpFamily::Storage:
    case OpFamily::Normalization:
    case OpFamily::IRBookkeeping:
      return false;
    default:
      return true;
  }
}

/// Every operand's kind is one Ops.def declares for the op's kernel.
bool kindsSupported(OpKind kind, std::span<const Type> inputs, std::span<const Type> results) {
  if (inputs.empty() || results.empty()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!acceptsElemKind(kind, i, inputs[i].kind)) return false;
  // Cast converts between any two castable kinds: its result takes the input's set.
  if (kind == OpKind::Cast) return acceptsElemKind(kind, 0, results[0].kind);
  return true;
}

/// Linear and cubic Resize interpolate f32 and f64; nearest moves elements of any kind.
bool resizeSupported(const Attributes& attrs, const Type& input) {
  return ResizeAttrs::from(attrs).mode == ResizeMode::Nearest || contains(kFloatKinds, input.kind);
}

std::string typesStr(std::span<const Type> types) {
  std::string s;
  for (const Type& t : types) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

}  // namespace

bool kernelSupports(OpKind kind, std::span<const Type> inputTypes, std::span<const Type> resultTypes) {
  // Which vendor op, and so whether it runs, is in the attributes (the overload below).
  if (size_t(kind) >= kNumOpKinds || !hasReferenceKernel(kind) || kind == OpKind::VendorOp) return false;
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
  if (!hasReferenceKernel(kind))
    return makeError(opName(kind), ": has no reference kernel (not a primitive)");

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

  switch (opFamily(kind)) {
    case OpFamily::ElementwiseUnary:
    case OpFamily::ElementwiseBinary:
    case OpFamily::ElementwiseTernary:
      return kernels::runElementwise(kind, attrs, inputs, outputs);
    case OpFamily::LinearAlgebra:
      return kernels::runLinearAlgebra(kind, attrs, inputs, outputs);
    case OpFamily::Pooling:
      return kernels::runPooling(kind, attrs, inputs, outputs);
    case OpFamily::Reduction:
      return kernels::runReduction(kind, attrs, inputs, outputs);
    case OpFamily::DataMovement:
      return kernels::runDataMovement(kind, attrs, inputs, outputs);
    case OpFamily::GatherScatter:
      return kernels::runGatherScatter(kind, attrs, inputs, outputs);
    case OpFamily::Resampling:
      return kernels::runResize(kind, attrs, inputs, outputs);
    case OpFamily::Quantized:
      return kernels::runQuantized(kind, attrs, inputs, outputs);
    case OpFamily::QuantizedTransformer:
      return kernels::runQuantizedTransformer(kind, attrs, inputs, outputs);
    case OpFamily::ValueDependent:
      return kernels::runValueDependent(kind, attrs, inputs, outputs);
    case OpFamily::OnnxQuantization:
      return kernels::runOnnxQuantization(kind, attrs, inputs, outputs);
    case OpFamily::Random:
      return kernels::randomValues(attrs, inputs, outputs);
    case OpFamily::Vendor:  // dispatched above
    case OpFamily::Storage:
    case OpFamily::Normalization:
    case OpFamily::IRBookkeeping:
      break;
  }
  return makeError(opName(kind), ": has no reference kernel");
}

}  // namespace ember
