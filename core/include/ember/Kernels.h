// Reference semantics of every primitive: plain, readable kernels that define
// what each op computes. The reference backend interprets the IR with them,
// and the constant folder evaluates constant subgraphs with them.
#pragma once

#include <span>

#include "ember/Attributes.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace ember {

/// Runs primitive `kind` on `inputs` (in operand order) into `outputs`, whose
/// types are the node's result types and whose storage the caller owns.
/// Outputs may alias inputs only for DataParallel ops. Returns an error for an
/// element kind the kernel does not implement.
Error runKernel(OpKind kind, const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                std::span<const TensorRef> outputs);

/// Whether runKernel implements `kind` for these input and result types.
bool kernelSupports(OpKind kind, std::span<const Type> inputTypes, std::span<const Type> resultTypes);
/// The same, with the node's attributes: a VendorOp is supported when its
/// registered op (ember/VendorOp.h) accepts these types; the overload without
/// attributes cannot tell which vendor op is meant and says no.
bool kernelSupports(OpKind kind, std::span<const Type> inputTypes, std::span<const Type> resultTypes,
                    const Attributes& attrs);

}  // namespace ember
