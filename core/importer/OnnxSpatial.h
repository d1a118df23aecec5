// Internal interface between the 2-D spatial op handlers (OnnxOpsNN.cpp) and
// the 3-D lowering (OnnxOpsSpatial3d.cpp): window attributes and the
// channel-first <-> channel-last permutations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "OnnxImporter.h"

namespace ember::onnx_import {

/// Kernel, strides, dilations and pads of a conv or pool, one entry per
/// spatial dim (ONNX order: D, H, W).
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  ///< ONNX order: all begins, then all ends
};

/// Sets the pads of `w` by auto_pad for a forward conv or pool over the
/// input's `spatial` dims: SAME_UPPER/SAME_LOWER give ceil(input / stride)
/// outputs, VALID no padding, NOTSET keeps the pads; an error names another.
Error applyAutoPad(const std::string& autoPad, const Dims& spatial, Window& w);

/// [0, 2, ..., rank-1, 1]: ONNX's N C spatial... -> Ember's N spatial... C.
std::vector<int64_t> channelsLastPerm(size_t rank);
/// The inverse of channelsLastPerm: [0, rank-1, 1, ..., rank-2].
std::vector<int64_t> channelsFirstPerm(size_t rank);

/// Conv of an NCDHW input with an [O, C/g, KD, KH, KW] filter: one 2-D Conv
/// per KD plane of the filter, over the D-slices it sees, summed. Returns NCDHW.
Expected<Value> importConv3d(NodeBuilder& b, const Value& x, const Value& w, const Value& bias,
                             const Window& win, int64_t group);
/// ConvTranspose of an NCDHW input with a [C, O/g, KD, KH, KW] filter; `win`
/// pads are final (output_shape and auto_pad already resolved).
Expected<Value> importConvTranspose3d(NodeBuilder& b, const Value& x, const Value& w, const Value& bias,
                                      const Window& win, const std::vector<int64_t>& outputPadding,
                                      int64_t group);
/// MaxPool or AvgPool of an NCDHW input: a 2-D pool over (H, W), then a 2-D
/// pool over (D, H*W) with a unit second window. Both are separable: a max of
/// maxes, and an average of averages whose divisors multiply per dim.
Expected<Value> importPool3d(NodeBuilder& b, OpKind kind, const Value& x, const Window& win, bool ceilMode,
                             bool countIncludePad);

}  // namespace ember::onnx_import
