// MaxPool's Indices output, composed from primitives (OnnxPoolIndices.cpp).
#pragma once

#include "OnnxSpatial.h"

namespace ember::onnx_import {

/// The flat NCHW index (storage_order 0) or column-major index (1) of each
/// window's maximum for a 2-D MaxPool of x [N, C, H, W] with window `win`
/// (pads [top, left, bottom, right]) whose values output has dims `pooled`
/// [N, C, OH, OW]; ties pick the first element in row-major window order.
Expected<Value> maxPoolIndices(NodeBuilder& b, const Value& x, const Window& win, const Dims& pooled);

}  // namespace ember::onnx_import
