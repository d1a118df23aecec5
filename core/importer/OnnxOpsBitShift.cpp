// BitShift (opset 11) on ONNX uint8, which Ember holds as u8q with scale 1 and
// offset 0. Exact in f32 with existing primitives: the shift amount indexes a
// table of powers of two (a shift of 8 or more gives 0 per C's unsigned rule),
// LEFT multiplies and keeps the low 8 bits (fmod 256), RIGHT divides by the
// power of two and floors. Every intermediate is an integer below 2^16.

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

constexpr int64_t kBits = 8;

Expected<Value> dequantize(NodeBuilder& b, const Value& v, std::string_view suffix) {
  return b.emit(OpKind::DequantizeLinear, {v, b.scalar(ElemKind::F32, 1), b.scalar(v.type.kind, 0)},
                Attributes{{"axis", int64_t(0)}}, suffix);
}

/// 2^y as f32 for the shift amounts y, from a table: powers[s] = 2^s for
/// s < 8; powers[8] = 0 (LEFT: everything shifted out) or 256 (RIGHT: x /
/// 256 floors to 0 for every uint8 x).
Expected<Value> shiftFactor(NodeBuilder& b, const Value& y, bool left) {
  Tensor powers(Type(ElemKind::F32, {kBits + 1}));
  for (int64_t s = 0; s < kBits; ++s) powers.as<float>()[s] = float(int64_t(1) << s);
  powers.as<float>()[kBits] = left ? 0.0f : float(int64_t(1) << kBits);
  EMBER_TRY(Value yf, dequantize(b, y, "y_f32"));
  EMBER_TRY(Value yi, b.emit(OpKind::Cast, {yf}, Attributes{{"to", std::string("i32")}}, "y_i32"));
  EMBER_TRY(Value index, b.emit(OpKind::Min, {yi, b.scalar(ElemKind::I32, double(kBits))}, {}, "shift"));
  return b.emit(OpKind::Gather, {b.constant(std::move(powers)), index}, Attributes{{"axis", int64_t(0)}},
                "power");
}

Error importBitShift(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value y, b.input(1));
  EMBER_TRY(std::string direction, b.attrString("direction"));
  if (direction != "LEFT" && direction != "RIGHT")
    return makeError("attribute 'direction' must be LEFT or RIGHT, got '", direction, "'");
  if (x.type.kind != ElemKind::UInt8Q || y.type.kind != ElemKind::UInt8Q)
    return makeError("only uint8 is supported, got ", x.type.str(), " and ", y.type.str());
  const bool left = direction == "LEFT";
  EMBER_TRY(Value xf, dequantize(b, x, "x_f32"));
  EMBER_TRY(Value factor, shiftFactor(b, y, left));
  Value shifted;
  if (left) {
    EMBER_TRY(Value product, b.emit(OpKind::Mul, {xf, factor}, {}, "product"));
    EMBER_TRY(shifted, b.emit(OpKind::Mod, {product, b.scalar(ElemKind::F32, double(1 << kBits))},
                              Attributes{{"fmod", int64_t(1)}}, "low_bits"));
  } else {
    EMBER_TRY(Value quotient, b.emit(OpKind::Div, {xf, factor}, {}, "quotient"));
    EMBER_TRY(shifted, b.emit(OpKind::Floor, {quotient}, {}, "floor"));
  }
  EMBER_TRY(Value out, b.emit(OpKind::QuantizeLinear,
                              {shifted, b.scalar(ElemKind::F32, 1), b.scalar(ElemKind::UInt8Q, 0)},
                              Attributes{{"axis", int64_t(0)}}));
  return b.setOutput(0, out);
}

}  // namespace

void registerBitShiftOps(OpTable& t) { t["BitShift"] = importBitShift; }

}  // namespace ember::onnx_import
