// The toy accelerator's own kernels: vectorisable loops for the common f32
// cases. Everything else falls back to Ember's reference kernels.
#pragma once

#include <span>

#include "ember/Attributes.h"
#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace toy {

/// Whether a fast kernel handles this instruction (decided once, at compile time).
bool hasFastKernel(ember::OpKind kind, std::span<const ember::Type> inputs,
                   std::span<const ember::Type> outputs);

/// Runs the fast kernel; only called when hasFastKernel() said yes. Outputs
/// may alias inputs for the elementwise ops (same index in and out).
void runFastKernel(ember::OpKind kind, const ember::Attributes& attrs,
                   std::span<const ember::ConstTensorRef> inputs, std::span<const ember::TensorRef> outputs);

}  // namespace toy
