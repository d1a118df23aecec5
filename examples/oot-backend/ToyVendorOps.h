// The toy accelerator's vendor op: `toy.ConvBiasRelu`, a Conv with its bias
// and a ReLU in one kernel. Registered with the plugin (ember/VendorOp.h): its
// declaration, type rule, reference kernel and the graph patterns that make it
// from Conv -> Relu and Conv -> Add(per-channel constant) -> Relu.
#pragma once

#include <span>
#include <vector>

#include "ember/Backend.h"
#include "ember/VendorOp.h"

namespace toy {

inline constexpr const char* kConvBiasRelu = "toy.ConvBiasRelu";

/// What the plugin registers (EMBER_DEFINE_BACKEND_PLUGIN_WITH_VENDOR_OPS).
std::vector<ember::VendorOpDef> vendorOps();

/// Whether `info` is a toy.ConvBiasRelu the toy's own kernel runs.
bool isConvBiasRelu(const ember::NodeInfo& info);

/// The toy's own kernel (f32, NHWC): out = max(conv(input, filter) + bias, 0).
void runConvBiasRelu(const ember::Attributes& attrs, std::span<const ember::ConstTensorRef> inputs,
                     const ember::TensorRef& output);

}  // namespace toy
