// ONNX's quantization operators: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv. ONNX's UINT8/INT8 tensors are u8q/i8q with scale 1 and offset
// 0 (the integers themselves); the first four are primitives with ONNX's
// arithmetic (Ops.def), the others are composed from them (docs/importer.md).

#include <algorithm>

#include "OnnxImporter.h"
#include "OnnxSpatial.h"

namespace ember::onnx_import {
namespace {

Value f32Scalar(NodeBuilder& b, double v) { return b.scalar(ElemKind::F32, v); }

/// Input `i`, or a zero point 0 of `kind` when it is absent.
Expected<Value> zeroPointOr(NodeBuilder& b, size_t i, ElemKind kind) {
  if (b.hasInput(i)) return b.input(i);
  return b.scalar(kind, 0);
}

Expected<Value> toF32(NodeBuilder& b, const Value& v, std::string_view suffix) {
  if (v.type.kind == ElemKind::F32) return v;
  return b.emit(OpKind::Cast, {v}, Attributes{{"to", std::string("f32")}}, suffix);
}

/// QuantizeLinear (opsets 10, 13): per tensor, or per `axis` (13).
Error importQuantizeLinear(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value scale, b.input(1));
  EMBER_TRY(Value zeroPoint, zeroPointOr(b, 2, ElemKind::UInt8Q));
  EMBER_TRY(int64_t axis, b.attrInt("axis", 1));
  EMBER_TRY(x, toF32(b, x, "f32"));  // opset 10-13 also quantize int32
  EMBER_TRY(Value y, b.emit(OpKind::QuantizeLinear, {x, scale, zeroPoint}, Attributes{{"axis", axis}}));
  return b.setOutput(0, y);
}

Error importDequantizeLinear(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value scale, b.input(1));
  EMBER_TRY(Value zeroPoint, zeroPointOr(b, 2, x.type.kind));
  EMBER_TRY(int64_t axis, b.attrInt("axis", 1));
  EMBER_TRY(Value y, b.emit(OpKind::DequantizeLinear, {x, scale, zeroPoint}, Attributes{{"axis", axis}}));
  return b.setOutput(0, y);
}

Error importDynamicQuantizeLinear(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::vector<Value> results, b.emitAll(OpKind::DynamicQuantizeLinear, {x}));
  for (size_t i = 0; i < results.size(); ++i) EMBER_RETURN_IF_ERROR(b.setOutput(i, results[i]));
  return Error::success();
}

/// The int32 product of two integer operands with their zero points.
Expected<Value> integerMatMul(NodeBuilder& b, const Value& lhs, const Value& rhs, const Value& lhsZero,
                              const Value& rhsZero, std::string_view suffix) {
  return b.emit(OpKind::MatMulInteger, {lhs, rhs, lhsZero, rhsZero}, {}, suffix);
}

Error importMatMulInteger(NodeBuilder& b) {
  EMBER_TRY(Value a, b.input(0));
  EMBER_TRY(Value c, b.input(1));
  EMBER_TRY(Value aZero, zeroPointOr(b, 2, a.type.kind));
  EMBER_TRY(Value cZero, zeroPointOr(b, 3, c.type.kind));
  EMBER_TRY(Value y, integerMatMul(b, a, c, aZero, cZero, {}));
  return b.setOutput(0, y);
}

/// `v` [n] reshaped to [n, 1] when it has more than one value (a per-row
/// scale of a matrix), else as is.
Expected<Value> perRow(NodeBuilder& b, const Value& v, std::string_view suffix) {
  if (v.type.numElements() <= 1) return v;
  return b.reshape(v, {v.type.numElements(), 1}, suffix);
}

/// y = QuantizeLinear(acc * (in_scale * w_scale / y_scale), 1, y_zero_point):
/// the float requantization ONNX's QLinear ops specify, rounding halves to even.
Expected<Value> requantize(NodeBuilder& b, const Value& accF32, const Value& inScale, const Value& wScale,
                           const Value& outScale, const Value& outZero) {
  EMBER_TRY(Value product, b.emit(OpKind::Mul, {inScale, wScale}, {}, "scale_product"));
  EMBER_TRY(Value multiplier, b.emit(OpKind::Div, {product, outScale}, {}, "multiplier"));
  EMBER_TRY(Value scaled, b.emit(OpKind::Mul, {accF32, multiplier}, {}, "scaled"));
  return b.emit(OpKind::QuantizeLinear, {scaled, f32Scalar(b, 1.0), outZero},
                Attributes{{"axis", int64_t(1)}});
}

Error importQLinearMatMul(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> in, b.inputs());
  if (in.size() != 8) return makeError("QLinearMatMul needs 8 inputs, got ", in.size());
  EMBER_TRY(Value acc, integerMatMul(b, in[0], in[3], in[2], in[5], "acc"));
  EMBER_TRY(Value accF32, toF32(b, acc, "acc_f32"));
  EMBER_TRY(Value aScale, perRow(b, in[1], "a_scale"));
  EMBER_TRY(Value y, requantize(b, accF32, aScale, in[4], in[6], in[7]));
  return b.setOutput(0, y);
}

/// The exact integer convolution of x [N, C, H, W] and w [M, C/group, KH, KW]
/// (zero points subtracted) as an f32 NHWC result: f32 sums of integers stay
/// exact below 2^24, which bounds the reduction length.
Expected<Value> integerConvNhwc(NodeBuilder& b, const Value& x, const Value& xZero, const Value& w,
                                const Value& wZero) {
  if (x.rank() != 4 || w.rank() != 4)
    return makeError("only 2-D convolution (rank-4 x and w) is supported, got ", x.type.str(), " and ",
                     w.type.str());
  EMBER_TRY(int64_t group, b.attrInt("group", 1));
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  const int64_t reduction = wd[1] * wd[2] * wd[3];
  // |(x - x_zero) * (w - w_zero)| <= 255 * 255; 258 of them stay below 2^24.
  constexpr int64_t kExactReduction = 258;
  if (reduction > kExactReduction)
    return makeError("a reduction of C/group*KH*KW = ", reduction, " exceeds ", kExactReduction,
                     ", the length the f32 accumulation keeps exact; unsupported");
  Window win;
  win.kernel = {wd[2], wd[3]};
  EMBER_TRY(win.strides, b.attrInts("strides", std::vector<int64_t>{1, 1}));
  EMBER_TRY(win.dilations, b.attrInts("dilations", std::vector<int64_t>{1, 1}));
  EMBER_TRY(win.pads, b.attrInts("pads", std::vector<int64_t>{0, 0, 0, 0}));
  EMBER_TRY(std::string autoPad, b.attrString("auto_pad", "NOTSET"));
  if (win.strides.size() != 2 || win.dilations.size() != 2 || win.pads.size() != 4)
    return makeError("strides, dilations and pads must have 2, 2 and 4 values");
  if (std::any_of(win.strides.begin(), win.strides.end(), [](int64_t v) { return v <= 0; }))
    return makeError("strides must be positive");
  EMBER_RETURN_IF_ERROR(applyAutoPad(autoPad, {xd[2], xd[3]}, win));
  // Subtracting the zero points with scale 1 gives the integers as f32.
  EMBER_TRY(Value xf, b.emit(OpKind::DequantizeLinear, {x, f32Scalar(b, 1.0), xZero},
                             Attributes{{"axis", int64_t(1)}}, "x_f32"));
  EMBER_TRY(Value wf, b.emit(OpKind::DequantizeLinear, {w, f32Scalar(b, 1.0), wZero},
                             Attributes{{"axis", int64_t(0)}}, "w_f32"));
  EMBER_TRY(Value xNhwc, b.transpose(xf, {0, 2, 3, 1}, "nhwc"));
  EMBER_TRY(Value filter, b.transpose(wf, {0, 2, 3, 1}, "filter"));
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::F32, {wd[0]})));
  Value bias = b.constant(Tensor(Type(ElemKind::F32, {wd[0]})));
  Attributes attrs{
      {"strides", win.strides}, {"pads", win.pads}, {"dilations", win.dilations}, {"group", group}};
  return b.emit(OpKind::Conv, {xNhwc, filter, bias}, std::move(attrs), "conv");
}

Error importConvInteger(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value w, b.input(1));
  EMBER_TRY(Value xZero, zeroPointOr(b, 2, x.type.kind));
  EMBER_TRY(Value wZero, zeroPointOr(b, 3, w.type.kind));
  EMBER_TRY(Value acc, integerConvNhwc(b, x, xZero, w, wZero));
  EMBER_TRY(Value nchw, b.transpose(acc, {0, 3, 1, 2}, "nchw"));
  EMBER_TRY(Value y, b.emit(OpKind::Cast, {nchw}, Attributes{{"to", std::string("i32")}}));
  return b.setOutput(0, y);
}

Error importQLinearConv(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value xScale, b.input(1));
  EMBER_TRY(Value xZero, b.input(2));
  EMBER_TRY(Value w, b.input(3));
  EMBER_TRY(Value wScale, b.input(4));
  EMBER_TRY(Value wZero, b.input(5));
  EMBER_TRY(Value yScale, b.input(6));
  EMBER_TRY(Value yZero, b.input(7));
  EMBER_TRY(Value acc, integerConvNhwc(b, x, xZero, w, wZero));
  if (b.hasInput(8)) {  // int32 bias, in units of x_scale * w_scale
    EMBER_TRY(Value bias, b.input(8));
    EMBER_TRY(Value biasF32, toF32(b, bias, "bias_f32"));
    EMBER_TRY(acc, b.emit(OpKind::Add, {acc, biasF32}, {}, "biased"));
  }
  // Channel-last here, so a per-channel w_scale [M] broadcasts as it is.
  EMBER_TRY(Value y, requantize(b, acc, xScale, wScale, yScale, yZero));
  EMBER_TRY(Value nchw, b.transpose(y, {0, 3, 1, 2}, "nchw"));
  return b.setOutput(0, nchw);
}

}  // namespace

void registerQuantizeOps(OpTable& t) {
  t["QuantizeLinear"] = importQuantizeLinear;
  t["DequantizeLinear"] = importDequantizeLinear;
  t["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
  t["MatMulInteger"] = importMatMulInteger;
  t["QLinearMatMul"] = importQLinearMatMul;
  t["ConvInteger"] = importConvInteger;
  t["QLinearConv"] = importQLinearConv;
}

}  // namespace ember::onnx_import
