// ONNX linear algebra, convolution, pooling, normalisation and resizing.
//
// Values stay in ONNX's NCHW layout inside the importer. Ops that are NHWC in
// Ember are wrapped in Transposes ([0,2,3,1] in, [0,3,1,2] out) that the
// optimizer cancels; constant filters are transposed at import time. 1-D
// convolutions and pools become 2-D ones with H = 1; 3-D ones are lowered to
// 2-D ones in OnnxOpsSpatial3d.cpp.

#include <algorithm>
#include <cmath>

#include "OnnxPoolIndices.h"
#include "OnnxSpatial.h"

namespace ember::onnx_import {
namespace {

const std::vector<int64_t> kToNHWC = {0, 2, 3, 1};
const std::vector<int64_t> kToNCHW = {0, 3, 1, 2};

Tensor zeros(ElemKind kind, Dims dims) { return Tensor(Type(kind, std::move(dims))); }

// ---- MatMul and Gemm -----------------------------------------------------------

Error importMatMul(NodeBuilder& b) {
  EMBER_TRY(Value lhs, b.input(0));
  EMBER_TRY(Value rhs, b.input(1));
  const size_t lr = lhs.rank(), rr = rhs.rank();
  if (lr == 0 || rr == 0) return makeError("operands must have rank >= 1");
  // numpy matmul: a 1-D lhs is a row vector, a 1-D rhs a column vector; the
  // added dimension is removed from the result.
  if (lr == 1) {
    EMBER_TRY(lhs, b.reshape(lhs, {1, lhs.dims()[0]}, "lhs_2d"));
  }
  if (rr == 1) {
    EMBER_TRY(rhs, b.reshape(rhs, {rhs.dims()[0], 1}, "rhs_2d"));
  }
  const bool squeeze = lr == 1 || rr == 1;
  EMBER_TRY(Value out, b.emit(OpKind::MatMul, {lhs, rhs}, {}, squeeze ? "2d" : ""));
  if (squeeze) {
    const Dims& d = out.dims();
    Dims dims(d.begin(), d.end() - 2);
    if (lr > 1) dims.push_back(d[d.size() - 2]);
    if (rr > 1) dims.push_back(d.back());
    EMBER_TRY(out, b.reshape(out, dims, ""));
  }
  return b.setOutput(0, out);
}

Error importGemm(NodeBuilder& b) {
  EMBER_TRY(Value a, b.input(0));
  EMBER_TRY(Value bm, b.input(1));
  EMBER_TRY(double alpha, b.attrFloat("alpha", 1.0));
  EMBER_TRY(double beta, b.attrFloat("beta", 1.0));
  EMBER_TRY(int64_t transA, b.attrInt("transA", 0));
  EMBER_TRY(int64_t transB, b.attrInt("transB", 0));
  if (a.rank() != 2 || bm.rank() != 2) return makeError("A and B must be 2-D");
  Value c;
  if (b.hasInput(2)) {
    EMBER_TRY(c, b.input(2));
  } else {
    // C is optional from opset 11.
    c = b.constant(zeros(a.type.kind, {bm.dims()[transB ? 0 : 1]}));
  }
  EMBER_TRY(Value out, b.emit(OpKind::Gemm, {a, bm, c},
                              Attributes{{"alpha", alpha},
                                         {"beta", beta},
                                         {"trans_a", int64_t(transA != 0)},
                                         {"trans_b", int64_t(transB != 0)}}));
  return b.setOutput(0, out);
}

// ---- windows: kernel, strides, dilations, pads ---------------------------------

/// Bound on strides, dilations, pads, output padding and group. Far above any
/// real model, it keeps the window arithmetic below (stride x extent, (kernel
/// - 1) x dilation) well inside int64 for any dims checkDims accepts.
constexpr int64_t kMaxWindowAttribute = int64_t(1) << 24;

Error checkWindowAttribute(std::string_view name, const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v > kMaxWindowAttribute || v < -kMaxWindowAttribute)
      return makeError("attribute '", name, "' value ", v, " is out of range [", -kMaxWindowAttribute, ", ",
                       kMaxWindowAttribute, "]");
  return Error::success();
}

/// Reads strides/dilations/pads/auto_pad for `spatial` (the input's spatial
/// dims) and a kernel of known size.
Expected<Window> readWindow(NodeBuilder& b, const Dims& spatial, std::vector<int64_t> kernel,
                            bool hasDilations) {
  const size_t n = spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  EMBER_TRY(w.strides, b.attrInts("strides", std::vector<int64_t>(n, 1)));
  w.dilations.assign(n, 1);
  if (hasDilations) {
    EMBER_TRY(w.dilations, b.attrInts("dilations", std::vector<int64_t>(n, 1)));
  } else if (b.hasAttr("dilations")) {
    EMBER_TRY(std::vector<int64_t> d, b.attrInts("dilations"));
    if (std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; }))
      return makeError("dilations are unsupported for this op");
  }
  EMBER_TRY(w.pads, b.attrInts("pads", std::vector<int64_t>(2 * n, 0)));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    return makeError("kernel_shape, strides, dilations and pads must match ", n, " spatial dimensions");
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("strides", w.strides));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("dilations", w.dilations));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("pads", w.pads));
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      return makeError("kernel_shape, strides and dilations must be positive");
  for (int64_t p : w.pads)
    if (p < 0) return makeError("negative pads are unsupported");

  EMBER_TRY(std::string autoPad, b.attrString("auto_pad", "NOTSET"));
  EMBER_RETURN_IF_ERROR(applyAutoPad(autoPad, spatial, w));
  return w;
}

/// Makes a 1-D window 2-D with a unit leading (H) dimension.
void windowTo2D(Window& w) {
  if (w.kernel.size() != 1) return;
  w.kernel.insert(w.kernel.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.dilations.insert(w.dilations.begin(), 1);
  w.pads = {0, w.pads[0], 0, w.pads[1]};
}

/// Checks the rank of a conv/pool input: 3 (1-D), 4 (2-D) or 5 (3-D).
Error checkSpatialRank(const Value& x) {
  if (x.rank() >= 3 && x.rank() <= 5) return Error::success();
  return makeError("input must have rank 3, 4 or 5, not ", x.rank());
}

/// [N, C, L] -> [N, C, 1, L].
Expected<Value> to4D(NodeBuilder& b, const Value& v, std::string_view suffix) {
  if (v.rank() != 3) return v;
  return b.reshape(v, {v.dims()[0], v.dims()[1], 1, v.dims()[2]}, suffix);
}

/// The NHWC result of an op back to ONNX layout and, for 1-D ops, rank 3.
Expected<Value> fromNHWC(NodeBuilder& b, const Value& v, size_t onnxRank) {
  EMBER_TRY(Value out, b.transpose(v, kToNCHW, "nchw"));
  if (onnxRank == 3) return b.reshape(out, {out.dims()[0], out.dims()[1], out.dims()[3]}, "1d");
  return out;
}

// ---- convolution ------------------------------------------------------------------

/// The kernel of a conv filter `w` of input `x` (both of rank 3, 4 or 5),
/// checked against the optional kernel_shape.
Expected<std::vector<int64_t>> filterKernel(NodeBuilder& b, const Value& x, const Value& w) {
  EMBER_RETURN_IF_ERROR(checkSpatialRank(x));
  if (w.rank() != x.rank())
    return makeError("filter rank ", w.rank(), " does not match input rank ", x.rank());
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  EMBER_TRY(std::vector<int64_t> kernelAttr, b.attrInts("kernel_shape", kernel));
  if (kernelAttr != kernel) return makeError("kernel_shape does not match the filter");
  return kernel;
}

/// Input 2, or zeros of x's kind for `channels` outputs.
Expected<Value> convBias(NodeBuilder& b, const Value& x, int64_t channels) {
  if (b.hasInput(2)) return b.input(2);
  return b.constant(zeros(x.type.kind, {channels}));
}

/// Conv or ConvTranspose of ONNX-layout x and w of rank 3 or 4 as the NHWC
/// op `kind`, with the result back in ONNX layout.
Expected<Value> emitNhwcConv(NodeBuilder& b, OpKind kind, const Value& x, const Value& w, const Value& bias,
                             Attributes attrs) {
  EMBER_TRY(Value x4, to4D(b, x, "2d"));
  EMBER_TRY(Value w4, to4D(b, w, "filter_2d"));
  EMBER_TRY(Value xh, b.transpose(x4, kToNHWC, "nhwc"));
  // Conv: [O, C/g, KH, KW] -> [O, KH, KW, C/g]; ConvTranspose: [C, O/g, KH, KW]
  // -> [C, KH, KW, O/g]; folded for a constant filter.
  EMBER_TRY(Value wh, b.transpose(w4, kToNHWC, "filter"));
  EMBER_TRY(Value y, b.emit(kind, {xh, wh, bias}, std::move(attrs)));
  return fromNHWC(b, y, x.rank());
}

Error importConv(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value w, b.input(1));
  EMBER_TRY(std::vector<int64_t> kernel, filterKernel(b, x, w));
  EMBER_TRY(int64_t group, b.attrInt("group", 1));
  const Dims spatial(x.dims().begin() + 2, x.dims().end());
  EMBER_TRY(Window win, readWindow(b, spatial, kernel, true));
  windowTo2D(win);
  EMBER_TRY(Value bias, convBias(b, x, w.dims()[0]));
  if (x.rank() == 5) {
    EMBER_TRY(Value out, importConv3d(b, x, w, bias, win, group));
    return b.setOutput(0, out);
  }
  EMBER_TRY(Value out, emitNhwcConv(b, OpKind::Conv, x, w, bias,
                                    Attributes{{"strides", win.strides},
                                               {"pads", win.pads},
                                               {"dilations", win.dilations},
                                               {"group", group}}));
  return b.setOutput(0, out);
}

/// ConvTranspose's strides, dilations and pads (without auto_pad: the
/// forward-conv rules do not apply), checked.
Expected<Window> readTransposeWindow(NodeBuilder& b, const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& outputPadding, int64_t group) {
  const size_t n = kernel.size();
  Window win;
  win.kernel = kernel;
  EMBER_TRY(win.strides, b.attrInts("strides", std::vector<int64_t>(n, 1)));
  EMBER_TRY(win.dilations, b.attrInts("dilations", std::vector<int64_t>(n, 1)));
  EMBER_TRY(win.pads, b.attrInts("pads", std::vector<int64_t>(2 * n, 0)));
  if (win.strides.size() != n || win.dilations.size() != n || win.pads.size() != 2 * n)
    return makeError("strides, dilations and pads must match ", n, " spatial dimensions");
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("strides", win.strides));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("dilations", win.dilations));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("pads", win.pads));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("output_padding", outputPadding));
  EMBER_RETURN_IF_ERROR(checkWindowAttribute("group", {group}));
  for (size_t i = 0; i < n; ++i)
    if (win.strides[i] <= 0 || win.dilations[i] <= 0)
      return makeError("strides and dilations must be positive");
  return win;
}

/// ConvTranspose's spatial output size from output_shape or SAME_* (nullopt:
/// the pads decide); VALID zeroes the pads.
Expected<std::optional<std::vector<int64_t>>> transposeOutputShape(NodeBuilder& b, const std::string& autoPad,
                                                                   const Dims& spatial, Window& win) {
  const size_t n = spatial.size();
  std::optional<std::vector<int64_t>> outputShape;
  if (b.hasAttr("output_shape")) {
    EMBER_TRY(outputShape, b.attrInts("output_shape"));
    if (outputShape->size() == n + 2) outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
    if (outputShape->size() != n) return makeError("output_shape must have ", n, " values");
    if (Error e = checkDims(*outputShape, b.maxElements())) return e.withContext("attribute 'output_shape'");
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    outputShape = std::vector<int64_t>(n);
    for (size_t i = 0; i < n; ++i) (*outputShape)[i] = spatial[i] * win.strides[i];
  } else if (autoPad == "VALID") {
    std::fill(win.pads.begin(), win.pads.end(), 0);
  } else if (autoPad != "NOTSET") {
    return makeError("unknown auto_pad '", autoPad, "'");
  }
  return outputShape;
}

/// The pads (and, for a larger output, the output padding) that give
/// ConvTranspose the spatial `outputShape`, split as auto_pad says.
void padToOutputShape(const std::vector<int64_t>& outputShape, const std::string& autoPad,
                      const Dims& spatial, Window& win, std::vector<int64_t>& outputPadding) {
  const size_t n = spatial.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t total = win.strides[i] * (spatial[i] - 1) + outputPadding[i] +
                          (win.kernel[i] - 1) * win.dilations[i] + 1 - outputShape[i];
    if (total < 0) {
      // A larger output_shape extends the end like output_padding (as ONNX Runtime does).
      outputPadding[i] -= total;
      win.pads[i] = win.pads[i + n] = 0;
      continue;
    }
    const bool upper = autoPad == "SAME_UPPER";
    win.pads[i] = upper ? total / 2 : total - total / 2;
    win.pads[i + n] = upper ? total - total / 2 : total / 2;
  }
}

Error importConvTranspose(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value w, b.input(1));
  EMBER_TRY(std::vector<int64_t> kernel, filterKernel(b, x, w));
  const size_t rank = x.rank(), n = rank - 2;
  EMBER_TRY(int64_t group, b.attrInt("group", 1));
  EMBER_TRY(std::vector<int64_t> outputPadding, b.attrInts("output_padding", std::vector<int64_t>(n, 0)));
  if (outputPadding.size() != n) return makeError("output_padding must have ", n, " values");
  const Dims spatial(x.dims().begin() + 2, x.dims().end());

  // Forward-conv auto_pad rules do not apply: read pads without it, then
  // derive them from output_shape or SAME_* as the ONNX spec says.
  EMBER_TRY(std::string autoPad, b.attrString("auto_pad", "NOTSET"));
  EMBER_TRY(Window win, readTransposeWindow(b, kernel, outputPadding, group));
  EMBER_TRY(std::optional<std::vector<int64_t>> outputShape, transposeOutputShape(b, autoPad, spatial, win));
  if (outputShape) padToOutputShape(*outputShape, autoPad, spatial, win, outputPadding);
  for (int64_t p : win.pads)
    if (p < 0) return makeError("negative pads are unsupported");
  windowTo2D(win);
  if (n == 1) outputPadding.insert(outputPadding.begin(), 0);

  EMBER_TRY(Value bias, convBias(b, x, w.dims()[1] * group));
  if (rank == 5) {
    EMBER_TRY(Value out, importConvTranspose3d(b, x, w, bias, win, outputPadding, group));
    return b.setOutput(0, out);
  }
  EMBER_TRY(Value out, emitNhwcConv(b, OpKind::ConvTranspose, x, w, bias,
                                    Attributes{{"strides", win.strides},
                                               {"pads", win.pads},
                                               {"dilations", win.dilations},
                                               {"group", group},
                                               {"output_padding", outputPadding}}));
  return b.setOutput(0, out);
}

// ---- pooling -------------------------------------------------------------------------

/// MaxPool or AvgPool of an ONNX-layout input of rank 3, 4 or 5 with window
/// `win` (already made 2-D for a 1-D input).
Expected<Value> poolOf(NodeBuilder& b, OpKind kind, const Value& x, const Window& win, bool ceilMode,
                       bool countIncludePad) {
  if (x.rank() == 5) return importPool3d(b, kind, x, win, ceilMode, countIncludePad);
  EMBER_TRY(Value x4, to4D(b, x, "2d"));
  EMBER_TRY(Value xh, b.transpose(x4, kToNHWC, "nhwc"));
  Attributes attrs{{"kernel", win.kernel}, {"strides", win.strides}, {"pads", win.pads}};
  if (kind == OpKind::MaxPool) attrs.set("dilations", win.dilations);
  attrs.set("ceil_mode", int64_t(ceilMode));
  if (kind == OpKind::AvgPool) attrs.set("count_include_pad", int64_t(countIncludePad));
  EMBER_TRY(Value y, b.emit(kind, {xh}, std::move(attrs)));
  return fromNHWC(b, y, x.rank());
}

OpHandler pool(OpKind kind) {
  return [kind](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    EMBER_RETURN_IF_ERROR(checkSpatialRank(x));
    const bool isMax = kind == OpKind::MaxPool;
    const bool withIndices = isMax && b.outputUsed(1);  // OnnxPoolIndices.cpp
    EMBER_TRY(std::vector<int64_t> kernel, b.attrInts("kernel_shape"));
    const Dims spatial(x.dims().begin() + 2, x.dims().end());
    EMBER_TRY(Window win, readWindow(b, spatial, kernel, isMax));
    windowTo2D(win);
    EMBER_TRY(int64_t ceilMode, b.attrInt("ceil_mode", 0));
    EMBER_TRY(int64_t countIncludePad, b.attrInt("count_include_pad", 0));
    EMBER_TRY(Value out, poolOf(b, kind, x, win, ceilMode != 0, !isMax && countIncludePad != 0));
    if (withIndices) {
      EMBER_TRY(Value indices, maxPoolIndices(b, x, win, out.dims()));
      EMBER_RETURN_IF_ERROR(b.setOutput(1, indices));
    }
    return b.setOutput(0, out);
  };
}

/// |x|^p (x * x for p = 2), for LpPool and GlobalLpPool.
Expected<Value> absPower(NodeBuilder& b, const Value& x, int64_t p) {
  if (p == 2) return b.emit(OpKind::Mul, {x, x}, {}, "square");
  EMBER_TRY(Value magnitude, b.emit(OpKind::Abs, {x}, {}, "abs"));
  if (p == 1) return magnitude;
  return b.emit(OpKind::Pow, {magnitude, b.scalar(x.type.kind, double(p))}, {}, "pow");
}

/// sum^(1/p) (sqrt for p = 2), named after the ONNX node (p = 1: the sum).
Expected<Value> root(NodeBuilder& b, const Value& sum, int64_t p) {
  if (p == 1) return sum;
  if (p == 2) return b.emit(OpKind::Sqrt, {sum});
  return b.emit(OpKind::Pow, {sum, b.scalar(sum.type.kind, 1.0 / double(p))});
}

Expected<int64_t> readLpOrder(NodeBuilder& b, const Value& x) {
  if (!isFloat(x.type.kind)) return makeError("unsupported element type ", elemKindName(x.type.kind));
  EMBER_TRY(int64_t p, b.attrInt("p", 2));
  if (p < 1 || p > 64) return makeError("p ", p, " is out of range [1, 64]");
  return p;
}

/// LpPool (opsets 2-11: no ceil_mode or dilations): (sum over the window of
/// |x|^p)^(1/p), the padding counting as zeros. The sum is an AvgPool with
/// count_include_pad times the window volume: without ceil_mode every window
/// lies inside the padded input, so the divisor is that volume.
Error importLpPool(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_RETURN_IF_ERROR(checkSpatialRank(x));
  EMBER_TRY(int64_t p, readLpOrder(b, x));
  EMBER_TRY(std::vector<int64_t> kernel, b.attrInts("kernel_shape"));
  const Dims spatial(x.dims().begin() + 2, x.dims().end());
  EMBER_TRY(Window win, readWindow(b, spatial, kernel, false));
  EMBER_TRY(int64_t ceilMode, b.attrInt("ceil_mode", 0));  // opset 18
  if (ceilMode) return makeError("ceil_mode is unsupported");
  windowTo2D(win);
  int64_t volume = 1;
  for (int64_t k : win.kernel) volume *= k;
  EMBER_TRY(Value powered, absPower(b, x, p));
  EMBER_TRY(Value mean, poolOf(b, OpKind::AvgPool, powered, win, false, true));
  EMBER_TRY(Value sum, b.emit(OpKind::Mul, {mean, b.scalar(x.type.kind, double(volume))}, {}, "sum"));
  EMBER_TRY(Value out, root(b, sum, p));
  return b.setOutput(0, out);
}

/// GlobalLpPool: (sum over the spatial axes of |x|^p)^(1/p), kept as size-1 dims.
Error importGlobalLpPool(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (x.rank() < 3) return makeError("input must have rank >= 3, not ", x.rank());
  EMBER_TRY(int64_t p, readLpOrder(b, x));
  std::vector<int64_t> axes;
  for (int64_t a = 2; a < int64_t(x.rank()); ++a) axes.push_back(a);
  EMBER_TRY(Value powered, absPower(b, x, p));
  EMBER_TRY(Value sum, b.emit(OpKind::ReduceSum, {powered},
                              Attributes{{"axes", axes}, {"keepdims", int64_t(1)}}, "sum"));
  EMBER_TRY(Value out, root(b, sum, p));
  return b.setOutput(0, out);
}

/// GlobalAveragePool/GlobalMaxPool: a reduction over the spatial axes, which
/// needs no layout change.
OpHandler globalPool(OpKind reduceKind) {
  return [reduceKind](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    if (x.rank() < 3) return makeError("input must have rank >= 3, not ", x.rank());
    std::vector<int64_t> axes;
    for (int64_t a = 2; a < int64_t(x.rank()); ++a) axes.push_back(a);
    EMBER_TRY(Value out, b.emit(reduceKind, {x}, Attributes{{"axes", axes}, {"keepdims", int64_t(1)}}));
    return b.setOutput(0, out);
  };
}

// ---- normalisation ----------------------------------------------------------------

/// A normalisation over channel axis 1. 4-D and 5-D inputs run channel-last
/// (NHWC, NDHWC) between transposes, like the spatial ops around them, so
/// that the transposes cancel and BatchNorm folds into an NHWC Conv.
Expected<Value> channelNorm(NodeBuilder& b, OpKind kind, const Value& x, std::vector<Value> params,
                            double epsilon) {
  if (x.rank() < 2) return makeError("input must have rank >= 2, not ", x.rank());
  const size_t rank = x.rank();
  const bool channelsLast = rank == 4 || rank == 5;
  Value in = x;
  if (channelsLast) {
    EMBER_TRY(in, b.transpose(x, channelsLastPerm(rank), rank == 4 ? "nhwc" : "ndhwc"));
  }
  params.insert(params.begin(), in);
  EMBER_TRY(
      Value y,
      b.emit(kind, params, Attributes{{"epsilon", epsilon}, {"axis", int64_t(channelsLast ? rank - 1 : 1)}}));
  if (!channelsLast) return y;
  return b.transpose(y, channelsFirstPerm(rank), rank == 4 ? "nchw" : "ncdhw");
}

/// The mean of x over `axes`, kept as size-1 dims: the sum divided by the
/// count (one rounding, as the lowering's normalize does).
Expected<Value> meanOver(NodeBuilder& b, const Value& x, const std::vector<int64_t>& axes,
                         const std::string& step) {
  int64_t count = 1;
  for (int64_t a : axes) count *= x.dims()[size_t(a)];
  EMBER_TRY(Value total, b.emit(OpKind::ReduceSum, {x}, Attributes{{"axes", axes}, {"keepdims", int64_t(1)}},
                                step + "_sum"));
  return b.emit(OpKind::Div, {total, b.scalar(x.type.kind, double(std::max<int64_t>(count, 1)))}, {}, step);
}

/// Mean, centred input, biased variance and sqrt(variance + epsilon) of x
/// over `axes` (statistics kept as size-1 dims).
struct Moments {
  Value mean, centered, variance, stddev;
};

Expected<Moments> momentsOver(NodeBuilder& b, const Value& x, const std::vector<int64_t>& axes,
                              double epsilon) {
  Moments m;
  EMBER_TRY(m.mean, meanOver(b, x, axes, "mean"));
  EMBER_TRY(m.centered, b.emit(OpKind::Sub, {x, m.mean}, {}, "centered"));
  EMBER_TRY(Value square, b.emit(OpKind::Mul, {m.centered, m.centered}, {}, "square"));
  EMBER_TRY(m.variance, meanOver(b, square, axes, "var"));
  EMBER_TRY(Value shifted, b.emit(OpKind::Add, {m.variance, b.scalar(x.type.kind, epsilon)}, {}, "var_eps"));
  EMBER_TRY(m.stddev, b.emit(OpKind::Sqrt, {shifted}, {}, "stddev"));
  return m;
}

/// BatchNormalization with training_mode=1 (opset 14+): normalises with the
/// batch's own mean and biased variance over every axis but 1, and outputs
/// the running statistics mean * momentum + batch * (1 - momentum).
/// A running statistic [C] of BatchNorm's training mode: old * momentum +
/// batch * (1 - momentum).
Expected<Value> runningStatistic(NodeBuilder& b, const Value& old, const Value& batch, int64_t channels,
                                 double momentum, const std::string& what) {
  const ElemKind kind = batch.type.kind;  // x's
  EMBER_TRY(Value flat, b.reshape(batch, {channels}, what + "_batch"));
  EMBER_TRY(Value kept, b.emit(OpKind::Mul, {old, b.scalar(kind, momentum)}, {}, what + "_kept"));
  EMBER_TRY(Value added, b.emit(OpKind::Mul, {flat, b.scalar(kind, 1 - momentum)}, {}, what + "_added"));
  return b.emit(OpKind::Add, {kept, added}, {}, what);
}

Error batchNormTraining(NodeBuilder& b, const std::vector<Value>& ins, double epsilon) {
  const Value& x = ins[0];
  if (!isFloat(x.type.kind) || x.rank() < 2)
    return makeError("training mode needs a float input of rank >= 2");
  EMBER_TRY(double momentum, b.attrFloat("momentum", 0.9));
  const size_t rank = x.rank();
  const int64_t channels = x.dims()[1];
  std::vector<int64_t> axes;
  for (size_t d = 0; d < rank; ++d)
    if (d != 1) axes.push_back(int64_t(d));
  EMBER_TRY(Moments m, momentsOver(b, x, axes, epsilon));
  EMBER_TRY(Value normalized, b.emit(OpKind::Div, {m.centered, m.stddev}, {}, "normalized"));
  Dims perChannel(rank, 1);
  perChannel[1] = channels;
  EMBER_TRY(Value scale, b.reshape(ins[1], perChannel, "scale"));
  EMBER_TRY(Value bias, b.reshape(ins[2], perChannel, "bias"));
  EMBER_TRY(Value scaled, b.emit(OpKind::Mul, {normalized, scale}, {}, "scaled"));
  EMBER_TRY(Value out, b.emit(OpKind::Add, {scaled, bias}));
  EMBER_RETURN_IF_ERROR(b.setOutput(0, out));
  // Running statistics, [C] like the inputs they update.
  EMBER_TRY(Value runningMean, runningStatistic(b, ins[3], m.mean, channels, momentum, "running_mean"));
  EMBER_TRY(Value runningVar, runningStatistic(b, ins[4], m.variance, channels, momentum, "running_var"));
  EMBER_RETURN_IF_ERROR(b.setOutput(1, runningMean));
  return b.setOutput(2, runningVar);
}

Error importBatchNorm(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> ins, b.inputs());
  if (ins.size() != 5) return makeError("expects 5 inputs, got ", ins.size());
  EMBER_TRY(double epsilon, b.attrFloat("epsilon", 1e-5));
  EMBER_TRY(int64_t training, b.attrInt("training_mode", 0));
  if (training) return batchNormTraining(b, ins, epsilon);
  if (b.opset() < 9) {
    EMBER_TRY(int64_t spatialAttr, b.attrInt("spatial", 1));
    if (!spatialAttr) return makeError("spatial=0 is unsupported");
  }
  EMBER_RETURN_IF_ERROR(b.requireUnused(1, "training statistics"));
  EMBER_TRY(Value out, channelNorm(b, OpKind::BatchNorm, ins[0], {ins[1], ins[2], ins[3], ins[4]}, epsilon));
  return b.setOutput(0, out);
}

/// MeanVarianceNormalization as ONNX's function body: (x - E[x]) /
/// (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default 0, 2, 3).
Error importMeanVarianceNormalization(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (!isFloat(x.type.kind)) return makeError("unsupported element type ", elemKindName(x.type.kind));
  EMBER_TRY(std::vector<int64_t> axes, b.attrInts("axes", std::vector<int64_t>{0, 2, 3}));
  EMBER_TRY(axes, normalizeAxes(axes, int64_t(x.rank())));
  if (axes.empty()) return makeError("axes must not be empty");
  const ElemKind kind = x.type.kind;
  EMBER_TRY(Value mean, meanOver(b, x, axes, "mean"));
  EMBER_TRY(Value square, b.emit(OpKind::Mul, {x, x}, {}, "square"));
  EMBER_TRY(Value meanSquare, meanOver(b, square, axes, "mean_square"));
  EMBER_TRY(Value squaredMean, b.emit(OpKind::Mul, {mean, mean}, {}, "squared_mean"));
  EMBER_TRY(Value variance, b.emit(OpKind::Sub, {meanSquare, squaredMean}, {}, "var"));
  EMBER_TRY(Value stddev, b.emit(OpKind::Sqrt, {variance}, {}, "stddev"));
  EMBER_TRY(Value denom, b.emit(OpKind::Add, {stddev, b.scalar(kind, 1e-9)}, {}, "denom"));
  EMBER_TRY(Value centered, b.emit(OpKind::Sub, {x, mean}, {}, "centered"));
  EMBER_TRY(Value out, b.emit(OpKind::Div, {centered, denom}));
  return b.setOutput(0, out);
}

Error importInstanceNorm(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value scale, b.input(1));
  EMBER_TRY(Value bias, b.input(2));
  EMBER_TRY(double epsilon, b.attrFloat("epsilon", 1e-5));
  if (x.rank() < 3) return makeError("input must have rank >= 3, not ", x.rank());
  EMBER_TRY(Value out, channelNorm(b, OpKind::InstanceNorm, x, {scale, bias}, epsilon));
  return b.setOutput(0, out);
}

/// LayerNormalization whose Mean or InvStdDev output is used: composed from
/// primitives so that both statistics (kept dims of size 1 from `axis` on, as
/// ONNX defines them) are values of the graph.
Error layerNormWithStatistics(NodeBuilder& b, const Value& x, const Value& scale, const Value& bias,
                              int64_t axis, double epsilon) {
  if (!isFloat(x.type.kind)) return makeError("unsupported element type ", elemKindName(x.type.kind));
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < int64_t(x.rank()); ++a) axes.push_back(a);
  EMBER_TRY(Moments m, momentsOver(b, x, axes, epsilon));
  EMBER_TRY(Value invStdDev, b.emit(OpKind::Reciprocal, {m.stddev}, {}, "inv_stddev"));
  EMBER_TRY(Value normalized, b.emit(OpKind::Mul, {m.centered, invStdDev}, {}, "normalized"));
  EMBER_TRY(Value scaled, b.emit(OpKind::Mul, {normalized, scale}, {}, "scaled"));
  EMBER_TRY(Value out, b.emit(OpKind::Add, {scaled, bias}));
  EMBER_RETURN_IF_ERROR(b.setOutput(0, out));
  EMBER_RETURN_IF_ERROR(b.setOutput(1, m.mean));
  return b.setOutput(2, invStdDev);
}

Error importLayerNorm(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value scale, b.input(1));
  Value bias;
  if (b.hasInput(2)) {
    EMBER_TRY(bias, b.input(2));
  } else {
    bias = b.constant(zeros(scale.type.kind, scale.dims()));
  }
  EMBER_TRY(int64_t axis, b.attrInt("axis", -1));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank())));
  EMBER_TRY(double epsilon, b.attrFloat("epsilon", 1e-5));
  if (b.outputUsed(1) || b.outputUsed(2)) return layerNormWithStatistics(b, x, scale, bias, axis, epsilon);
  EMBER_TRY(Value out,
            b.emit(OpKind::LayerNorm, {x, scale, bias}, Attributes{{"epsilon", epsilon}, {"axis", axis}}));
  return b.setOutput(0, out);
}

// ---- Resize and Upsample ---------------------------------------------------------

/// Resize (opsets 10, 11, 13, 18) and Upsample (7, 9).
/// Resize's interpolation mode, coordinate transform and nearest rounding,
/// checked (legacy: Upsample or opset < 11, asymmetric and floor).
struct ResizeModes {
  std::string mode, transform = "asymmetric", nearestMode = "floor";
};

Expected<ResizeModes> readResizeModes(NodeBuilder& b, bool legacy) {
  ResizeModes m;
  EMBER_TRY(m.mode, b.attrString("mode", "nearest"));
  if (m.mode == "bilinear") m.mode = "linear";
  if (m.mode != "nearest" && m.mode != "linear" && !(m.mode == "cubic" && !legacy))
    return makeError("unsupported mode '", m.mode, "'");
  if (!legacy) {
    EMBER_TRY(m.transform, b.attrString("coordinate_transformation_mode", "half_pixel"));
    EMBER_TRY(m.nearestMode, b.attrString("nearest_mode", "round_prefer_floor"));
    EMBER_TRY(int64_t antialias, b.attrInt("antialias", 0));
    if (antialias) return makeError("antialias is unsupported");
    if (b.hasAttr("axes")) return makeError("attribute 'axes' is unsupported");
    EMBER_TRY(std::string policy, b.attrString("keep_aspect_ratio_policy", "stretch"));
    if (policy != "stretch") return makeError("keep_aspect_ratio_policy '", policy, "' is unsupported");
  }
  static const char* kTransforms[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), m.transform) == std::end(kTransforms))
    return makeError("unsupported coordinate_transformation_mode '", m.transform, "'");
  static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kNearest), std::end(kNearest), m.nearestMode) == std::end(kNearest))
    return makeError("unsupported nearest_mode '", m.nearestMode, "'");
  return m;
}

/// Resize's constant scales (empty when sizes are given) and sizes (from
/// the scales when not given), one per dim of x.
struct ResizeShape {
  std::vector<double> scales;
  std::vector<int64_t> sizes;
};

Expected<ResizeShape> readResizeShape(NodeBuilder& b, const Value& x, bool upsample, bool legacy) {
  const size_t rank = x.rank();
  ResizeShape r;
  if (upsample && b.opset() < 9) {
    EMBER_TRY(r.scales, b.attrFloats("scales"));
  } else if (legacy) {
    EMBER_TRY(r.scales, b.constFloats(1, "scales"));
  } else {
    // Inputs: X, roi, scales, sizes. An empty scales tensor means "absent".
    if (b.hasInput(2)) {
      EMBER_TRY(r.scales, b.constFloats(2, "scales"));
    }
    if (b.hasInput(3)) {
      EMBER_TRY(r.sizes, b.constInts(3, "sizes"));
    }
    if (!r.scales.empty() && !r.sizes.empty()) return makeError("only one of scales and sizes may be given");
    if (r.scales.empty() && r.sizes.empty()) return makeError("one of scales and sizes must be given");
  }
  if (!r.sizes.empty()) {
    if (r.sizes.size() != rank) return makeError("sizes has ", r.sizes.size(), " values for rank ", rank);
    return r;
  }
  if (r.scales.size() != rank) return makeError("scales has ", r.scales.size(), " values for rank ", rank);
  for (size_t i = 0; i < rank; ++i) {
    if (!(r.scales[i] > 0) || !std::isfinite(r.scales[i])) return makeError("scales must be positive");
    const double size = std::floor(double(x.dims()[i]) * r.scales[i]);
    if (size > double(b.maxElements())) return makeError("resized dimension ", i, " is too large");
    r.sizes.push_back(int64_t(size));
  }
  return r;
}

/// The attributes only some modes read: cubic's coefficient and
/// exclude_outside, tf_crop_and_resize's roi and extrapolation value.
Error addResizeModeAttributes(NodeBuilder& b, const ResizeModes& m, size_t rank, Attributes& attrs) {
  if (m.mode == "cubic") {
    EMBER_TRY(double a, b.attrFloat("cubic_coeff_a", -0.75));
    EMBER_TRY(int64_t excludeOutside, b.attrInt("exclude_outside", 0));
    attrs.set("cubic_coeff_a", a);
    attrs.set("exclude_outside", int64_t(excludeOutside != 0));
  }
  if (m.transform == "tf_crop_and_resize") {  // roi: [starts..., ends...], normalised
    if (!b.hasInput(1)) return makeError("tf_crop_and_resize needs the roi input");
    EMBER_TRY(std::vector<double> roi, b.constFloats(1, "roi"));
    if (roi.size() != 2 * rank) return makeError("roi has ", roi.size(), " values for rank ", rank);
    EMBER_TRY(double extrapolation, b.attrFloat("extrapolation_value", 0.0));
    attrs.set("roi", roi);
    attrs.set("extrapolation_value", extrapolation);
  }
  return Error::success();
}

Error importResize(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const bool upsample = b.opType() == "Upsample";
  const bool legacy = upsample || b.opset() < 11;  // asymmetric coordinates, floor rounding
  if (upsample && b.opset() < 7) return makeError("Upsample before opset 7 is unsupported");
  EMBER_TRY(ResizeModes modes, readResizeModes(b, legacy));
  EMBER_TRY(ResizeShape shape, readResizeShape(b, x, upsample, legacy));
  Attributes attrs{{"sizes", shape.sizes}};
  if (!shape.scales.empty()) attrs.set("scales", shape.scales);
  attrs.set("mode", modes.mode);
  attrs.set("coordinate_transformation_mode", modes.transform);
  attrs.set("nearest_mode", modes.nearestMode);
  EMBER_RETURN_IF_ERROR(addResizeModeAttributes(b, modes, x.rank(), attrs));
  EMBER_TRY(Value out, b.emit(OpKind::Resize, {x}, std::move(attrs)));
  return b.setOutput(0, out);
}

/// GridSample (opset 16, 4-D): the NHWC primitive between layout transposes.
Error importGridSample(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value grid, b.input(1));
  if (x.rank() != 4) return makeError("input must have rank 4 (N, C, H, W), not ", x.rank());
  EMBER_TRY(std::string mode, b.attrString("mode", "bilinear"));
  EMBER_TRY(std::string padding, b.attrString("padding_mode", "zeros"));
  EMBER_TRY(int64_t alignCorners, b.attrInt("align_corners", 0));
  EMBER_TRY(Value nhwc, b.transpose(x, {0, 2, 3, 1}, "nhwc"));
  EMBER_TRY(Value sampled, b.emit(OpKind::GridSample, {nhwc, grid},
                                  Attributes{{"mode", mode},
                                             {"padding_mode", padding},
                                             {"align_corners", int64_t(alignCorners != 0)}},
                                  "sample"));
  EMBER_TRY(Value out, b.transpose(sampled, {0, 3, 1, 2}, ""));
  return b.setOutput(0, out);
}

/// The sum of x^2 over a window of `size` channels (axis 1), from `size`
/// shifted slices of the channel-padded square.
Expected<Value> channelWindowSumOfSquares(NodeBuilder& b, const Value& x, int64_t size) {
  const size_t rank = x.rank();
  EMBER_TRY(Value square, b.emit(OpKind::Mul, {x, x}, {}, "square"));
  std::vector<int64_t> pads(2 * rank, 0);
  pads[1] = (size - 1) / 2;
  pads[rank + 1] = size - 1 - (size - 1) / 2;
  EMBER_TRY(Value padded,
            b.emit(OpKind::Pad, {square},
                   Attributes{{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}}, "padded"));
  const int64_t channels = x.dims()[1];
  std::optional<Value> sum;
  for (int64_t i = 0; i < size; ++i) {
    std::vector<int64_t> starts(rank, 0), ends = x.dims(), steps(rank, 1);
    starts[1] = i;
    ends[1] = i + channels;
    EMBER_TRY(Value window, b.emit(OpKind::Slice, {padded},
                                   Attributes{{"starts", starts}, {"ends", ends}, {"steps", steps}},
                                   "window" + std::to_string(i)));
    if (sum) {
      EMBER_TRY(sum, b.emit(OpKind::Add, {*sum, window}, {}, "sum" + std::to_string(i)));
    } else {
      sum = window;
    }
  }
  return *sum;
}

/// LRN over channels (axis 1): x / (bias + alpha / size * sum of x^2 over a
/// window of `size` channels)^beta.
Error importLRN(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (x.rank() < 3) return makeError("input must have rank >= 3, not ", x.rank());
  if (!isFloat(x.type.kind)) return makeError("unsupported element type ", elemKindName(x.type.kind));
  EMBER_TRY(int64_t size, b.attrInt("size"));
  if (size < 1 || size > 1024) return makeError("size ", size, " is out of range [1, 1024]");
  EMBER_TRY(double alpha, b.attrFloat("alpha", 1e-4));
  EMBER_TRY(double beta, b.attrFloat("beta", 0.75));
  EMBER_TRY(double bias, b.attrFloat("bias", 1.0));
  const ElemKind kind = x.type.kind;
  EMBER_TRY(Value sum, channelWindowSumOfSquares(b, x, size));
  EMBER_TRY(Value scaled, b.emit(OpKind::Mul, {sum, b.scalar(kind, alpha / double(size))}, {}, "scaled"));
  EMBER_TRY(Value shifted, b.emit(OpKind::Add, {scaled, b.scalar(kind, bias)}, {}, "shifted"));
  EMBER_TRY(Value denom, b.emit(OpKind::Pow, {shifted, b.scalar(kind, beta)}, {}, "denom"));
  EMBER_TRY(Value out, b.emit(OpKind::Div, {x, denom}));
  return b.setOutput(0, out);
}

}  // namespace

Error applyAutoPad(const std::string& autoPad, const Dims& spatial, Window& w) {
  const size_t n = spatial.size();
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output = ceil(input / stride); the odd pixel goes at the end (UPPER) or the start (LOWER).
    for (size_t i = 0; i < n; ++i) {
      const int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      const int64_t window = (w.kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + window - spatial[i]);
      const int64_t small = total / 2, big = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : big;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad != "NOTSET") {
    return makeError("unknown auto_pad '", autoPad, "'");
  }
  return Error::success();
}

void registerNNOps(OpTable& t) {
  t["MatMul"] = importMatMul;
  t["Gemm"] = importGemm;
  t["Conv"] = importConv;
  t["ConvTranspose"] = importConvTranspose;
  t["MaxPool"] = pool(OpKind::MaxPool);
  t["AveragePool"] = pool(OpKind::AvgPool);
  t["GlobalAveragePool"] = globalPool(OpKind::ReduceMean);
  t["GlobalMaxPool"] = globalPool(OpKind::ReduceMax);
  t["LpPool"] = importLpPool;
  t["GlobalLpPool"] = importGlobalLpPool;
  t["BatchNormalization"] = importBatchNorm;
  t["InstanceNormalization"] = importInstanceNorm;
  t["LayerNormalization"] = importLayerNorm;
  t["LRN"] = importLRN;
  t["MeanVarianceNormalization"] = importMeanVarianceNormalization;
  t["GridSample"] = importGridSample;
  t["Resize"] = importResize;
  t["Upsample"] = importResize;
}

}  // namespace ember::onnx_import
