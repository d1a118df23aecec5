// 3-D Conv, ConvTranspose and pools (rank-5 NCDHW in ONNX), lowered at import
// time to Ember's 2-D NHWC primitives so that every backend runs them. The
// input goes channel-last (NDHWC); D is handled by slicing, padding and
// reshaping D into the batch (or into a pooled axis), H and W by the 2-D op:
// - Conv: pad D, then for each filter plane kd the strided D-slice it sees
//   ([N, Dout, H, W, C] -> [N*Dout, H, W, C]) through a 2-D Conv with
//   filter[:, :, kd]; the KD partial results are summed.
// - ConvTranspose: for each kd a 2-D ConvTranspose of [N*Din, H, W, C] with
//   filter[:, :, kd], its planes spread to stride sd (zeros between), shifted
//   by kd * dilation and cropped by the D pads, then summed; bias added once.
// - MaxPool/AvgPool: a 2-D pool over (H, W) on [N*D, H, W, C], then a 2-D
//   pool over (D, H*W) with a (kd, 1) window: max and average (with either
//   count_include_pad) are separable per dim.

#include <algorithm>
#include <string>

#include "OnnxSpatial.h"

namespace ember::onnx_import {
namespace {

constexpr size_t kDepth = 0;  ///< index of D in a Window's per-dim lists

Tensor zeros(ElemKind kind, Dims dims) { return Tensor(Type(kind, std::move(dims))); }

/// The (H, W) part of a 3-D window as 2-D primitive attributes:
/// pads [top, left, bottom, right].
std::vector<int64_t> planarPads(const Window& win) {
  return {win.pads[1], win.pads[2], win.pads[4], win.pads[5]};
}
std::vector<int64_t> planar(const std::vector<int64_t>& perDim) { return {perDim[1], perDim[2]}; }

/// Pads (or, when negative, crops) axis `axis` of `v` with zeros.
Expected<Value> padAxis(NodeBuilder& b, const Value& v, size_t axis, int64_t begin, int64_t end,
                        const std::string& suffix) {
  if (begin == 0 && end == 0) return v;
  std::vector<int64_t> pads(2 * v.rank(), 0);
  pads[axis] = begin;
  pads[v.rank() + axis] = end;
  return b.emit(OpKind::Pad, {v},
                Attributes{{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}}, suffix);
}

/// Filter plane kd of an ONNX 3-D filter [A, B, KD, KH, KW] as Ember's 2-D
/// filter [A, KH, KW, B]; folded at import time for a constant filter.
Expected<Value> filterPlane(NodeBuilder& b, const Value& w, int64_t kd) {
  const Dims& d = w.dims();
  const std::string tag = std::to_string(kd);
  EMBER_TRY(Value plane, b.emit(OpKind::Slice, {w},
                                Attributes{{"starts", std::vector<int64_t>{0, 0, kd, 0, 0}},
                                           {"ends", std::vector<int64_t>{d[0], d[1], kd + 1, d[3], d[4]}},
                                           {"steps", std::vector<int64_t>{1, 1, 1, 1, 1}}},
                                "filter_d" + tag));
  EMBER_TRY(plane, b.reshape(plane, {d[0], d[1], d[3], d[4]}, "filter_d" + tag + "_2d"));
  return b.transpose(plane, {0, 2, 3, 1}, "filter_d" + tag + "_nhwc");
}

/// Whether a pool window (kernel, strides, pads) takes each element alone.
bool isIdentityWindow(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                      const std::vector<int64_t>& pads) {
  auto all = [](const std::vector<int64_t>& v, int64_t value) {
    return std::all_of(v.begin(), v.end(), [value](int64_t e) { return e == value; });
  };
  return all(kernel, 1) && all(strides, 1) && all(pads, 0);
}

/// Adds `term` to the running sum (the first term starts it). The last term
/// is named after the ONNX node.
Expected<Value> accumulate(NodeBuilder& b, std::optional<Value> sum, const Value& term, bool last,
                           const std::string& suffix) {
  if (!sum) return term;
  return b.emit(OpKind::Add, {*sum, term}, {}, last ? std::string_view() : std::string_view(suffix));
}

}  // namespace

std::vector<int64_t> channelsLastPerm(size_t rank) {
  std::vector<int64_t> perm{0};
  for (size_t d = 2; d < rank; ++d) perm.push_back(int64_t(d));
  perm.push_back(1);
  return perm;
}

std::vector<int64_t> channelsFirstPerm(size_t rank) {
  std::vector<int64_t> perm{0, int64_t(rank) - 1};
  for (size_t d = 1; d + 1 < rank; ++d) perm.push_back(int64_t(d));
  return perm;
}

Expected<Value> importConv3d(NodeBuilder& b, const Value& x, const Value& w, const Value& bias,
                             const Window& win, int64_t group) {
  const int64_t n = x.dims()[0], channels = x.dims()[1], h = x.dims()[3], width = x.dims()[4];
  const int64_t kd = win.kernel[kDepth], sd = win.strides[kDepth], dd = win.dilations[kDepth];
  const int64_t padded = x.dims()[2] + win.pads[kDepth] + win.pads[kDepth + 3];
  const int64_t extent = (kd - 1) * dd + 1;
  if (padded < extent)
    return makeError("the kernel's depth extent ", extent, " exceeds the padded input depth ", padded);
  const int64_t depthOut = (padded - extent) / sd + 1;

  EMBER_TRY(Value xl, b.transpose(x, channelsLastPerm(5), "ndhwc"));
  EMBER_TRY(xl, padAxis(b, xl, 1, win.pads[kDepth], win.pads[kDepth + 3], "pad_d"));
  const Value zeroBias = b.constant(zeros(bias.type.kind, bias.dims()));
  const Attributes conv2d{{"strides", planar(win.strides)},
                          {"pads", planarPads(win)},
                          {"dilations", planar(win.dilations)},
                          {"group", group}};
  std::optional<Value> sum;
  for (int64_t k = 0; k < kd; ++k) {
    const std::string tag = std::to_string(k);
    const int64_t start = k * dd;
    Value planes = xl;
    if (start != 0 || sd != 1 || depthOut != padded) {  // not every plane in order: slice
      std::vector<int64_t> ends{n, start + (depthOut - 1) * sd + 1, h, width, channels};
      EMBER_TRY(planes, b.emit(OpKind::Slice, {xl},
                               Attributes{{"starts", std::vector<int64_t>{0, start, 0, 0, 0}},
                                          {"ends", std::move(ends)},
                                          {"steps", std::vector<int64_t>{1, sd, 1, 1, 1}}},
                               "planes_d" + tag));
    }
    EMBER_TRY(planes, b.reshape(planes, {n * depthOut, h, width, channels}, "planes_d" + tag + "_2d"));
    EMBER_TRY(Value filter, filterPlane(b, w, k));
    // The bias is added once, by the first plane's conv.
    EMBER_TRY(Value partial, b.emit(OpKind::Conv, {planes, filter, k == 0 ? bias : zeroBias}, conv2d,
                                    kd == 1 ? std::string_view() : std::string_view("conv_d" + tag)));
    const Dims& pd = partial.dims();
    EMBER_TRY(partial, b.reshape(partial, {n, depthOut, pd[1], pd[2], pd[3]}, "conv_d" + tag + "_3d"));
    EMBER_TRY(sum, accumulate(b, sum, partial, k + 1 == kd, "sum_d" + tag));
  }
  return b.transpose(*sum, channelsFirstPerm(5), "ncdhw");
}

namespace {

/// The depth geometry of a 3-D ConvTranspose: batch, input depth, depth
/// stride and the (cropped) output depth.
struct DepthSpread {
  int64_t n, depthIn, stride, depthOut;
};

/// One filter plane's 2-D result [n * depthIn, H, W, C] as [n, depthOut, H*W,
/// C]: input plane i at depth i * stride + shift, zeros between and around.
Expected<Value> spreadAndPlace(NodeBuilder& b, const Value& partial, const DepthSpread& d, int64_t shift,
                               const std::string& tag) {
  const Dims& planeDims = partial.dims();
  const int64_t area = planeDims[1] * planeDims[2], outChannels = planeDims[3];
  const int64_t spread = d.depthIn * d.stride;
  EMBER_TRY(Value v, b.reshape(partial, {d.n, d.depthIn, 1, area, outChannels}, "convt_d" + tag + "_3d"));
  EMBER_TRY(v, padAxis(b, v, 2, 0, d.stride - 1, "spread_d" + tag));
  EMBER_TRY(v, b.reshape(v, {d.n, spread, area, outChannels}, "spread_d" + tag + "_planes"));
  return padAxis(b, v, 1, shift, d.depthOut - spread - shift, "place_d" + tag);
}

}  // namespace

Expected<Value> importConvTranspose3d(NodeBuilder& b, const Value& x, const Value& w, const Value& bias,
                                      const Window& win, const std::vector<int64_t>& outputPadding,
                                      int64_t group) {
  const int64_t n = x.dims()[0], depthIn = x.dims()[2];
  const int64_t kd = win.kernel[kDepth], sd = win.strides[kDepth], dd = win.dilations[kDepth];
  const int64_t padBegin = win.pads[kDepth], padEnd = win.pads[kDepth + 3];
  const int64_t full = (depthIn - 1) * sd + (kd - 1) * dd + 1 + outputPadding[kDepth];
  const int64_t depthOut = full - padBegin - padEnd;
  if (depthOut <= 0) return makeError("pads leave no output depth (full depth ", full, ")");

  EMBER_TRY(Value xl, b.transpose(x, channelsLastPerm(5), "ndhwc"));
  EMBER_TRY(xl, b.reshape(xl, {n * depthIn, x.dims()[3], x.dims()[4], x.dims()[1]}, "planes_2d"));
  const Value zeroBias = b.constant(zeros(bias.type.kind, bias.dims()));
  const Attributes convT2d{{"strides", planar(win.strides)},
                           {"pads", planarPads(win)},
                           {"dilations", planar(win.dilations)},
                           {"group", group},
                           {"output_padding", planar(outputPadding)}};
  const int64_t spread = depthIn * sd;  // planes at i * sd, sd - 1 zero planes after each
  std::optional<Value> sum;
  Dims planeDims;
  const DepthSpread depth{n, depthIn, sd, depthOut};
  for (int64_t k = 0; k < kd; ++k) {
    // Plane i lands at i * sd + k * dd of the full output, i * sd + k * dd -
    // padBegin once the D pads are cropped.
    const int64_t shift = k * dd - padBegin;
    if (shift + spread <= 0 || shift >= depthOut) continue;  // every plane cropped
    const std::string tag = std::to_string(k);
    EMBER_TRY(Value filter, filterPlane(b, w, k));
    EMBER_TRY(Value partial, b.emit(OpKind::ConvTranspose, {xl, filter, zeroBias}, convT2d, "convt_d" + tag));
    planeDims = partial.dims();
    EMBER_TRY(partial, spreadAndPlace(b, partial, depth, shift, tag));
    EMBER_TRY(sum, accumulate(b, sum, partial, false, "sum_d" + tag));
  }
  if (!sum) return makeError("pads crop every output plane");
  EMBER_TRY(Value out, b.reshape(*sum, {n, depthOut, planeDims[1], planeDims[2], planeDims[3]}, "sum_3d"));
  EMBER_TRY(out, b.emit(OpKind::Add, {out, bias}));
  return b.transpose(out, channelsFirstPerm(5), "ncdhw");
}

Expected<Value> importPool3d(NodeBuilder& b, OpKind kind, const Value& x, const Window& win, bool ceilMode,
                             bool countIncludePad) {
  const bool isMax = kind == OpKind::MaxPool;
  auto poolAttrs = [&](std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                       std::vector<int64_t> dilations) {
    Attributes attrs{
        {"kernel", std::move(kernel)}, {"strides", std::move(strides)}, {"pads", std::move(pads)}};
    if (isMax) attrs.set("dilations", std::move(dilations));
    attrs.set("ceil_mode", int64_t(ceilMode));
    if (!isMax) attrs.set("count_include_pad", int64_t(countIncludePad));
    return attrs;
  };
  const int64_t n = x.dims()[0], depth = x.dims()[2];
  EMBER_TRY(Value xl, b.transpose(x, channelsLastPerm(5), "ndhwc"));
  // A window of one element, stride 1 and no pads passes its input through:
  // that stage is left out (the (1, 3, 3) pools of video models).
  Value pooledHW = xl;
  Dims hw{n * depth, x.dims()[3], x.dims()[4], x.dims()[1]};
  if (!isIdentityWindow(planar(win.kernel), planar(win.strides), planarPads(win))) {
    EMBER_TRY(Value planes, b.reshape(xl, hw, "planes_2d"));
    EMBER_TRY(pooledHW, b.emit(kind, {planes},
                               poolAttrs(planar(win.kernel), planar(win.strides), planarPads(win),
                                         planar(win.dilations)),
                               "pool_hw"));
    hw = pooledHW.dims();
  }
  Value pooled = pooledHW;
  int64_t depthOut = depth;
  const std::vector<int64_t> depthPads{win.pads[kDepth], 0, win.pads[kDepth + 3], 0};
  if (!isIdentityWindow({win.kernel[kDepth]}, {win.strides[kDepth]}, depthPads)) {
    EMBER_TRY(Value columns, b.reshape(pooledHW, {n, depth, hw[1] * hw[2], hw[3]}, "columns"));
    EMBER_TRY(pooled, b.emit(kind, {columns},
                             poolAttrs({win.kernel[kDepth], 1}, {win.strides[kDepth], 1}, depthPads,
                                       {win.dilations[kDepth], 1}),
                             "pool_d"));
    depthOut = pooled.dims()[1];
  }
  EMBER_TRY(pooled, b.reshape(pooled, {n, depthOut, hw[1], hw[2], hw[3]}, "pool_3d"));
  return b.transpose(pooled, channelsFirstPerm(5), "ncdhw");
}

}  // namespace ember::onnx_import
