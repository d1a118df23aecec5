// ONNX's quantization operators with ONNX's arithmetic (Ops.def): QuantizeLinear
// and DynamicQuantizeLinear round halves to even in float, as ONNX's reference
// and ONNX Runtime do; DequantizeLinear multiplies in float; MatMulInteger
// accumulates exactly in int32. Integer tensors are i8q/u8q with scale 1 and
// offset 0 (raw values) or i32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// Raw integer element i of an i8q/u8q/i32 tensor.
int32_t rawAt(const ConstTensorRef& t, int64_t i) {
  switch (t.type.kind) {
    case ElemKind::Int8Q:
      return t.as<int8_t>()[i];
    case ElemKind::UInt8Q:
      return t.as<uint8_t>()[i];
    default:
      return t.as<int32_t>()[i];
  }
}

/// Per-element parameter index: 0 for a per-tensor parameter, else the
/// element's index along `axis`.
struct ChannelOf {
  int64_t inner = 1, channels = 1;
  bool perAxis = false;
  ChannelOf(const Dims& dims, int64_t axis, int64_t paramCount) {
    perAxis = paramCount > 1;
    if (!perAxis || dims.empty()) return;
    const size_t a = normalizeAxis(axis, dims.size());
    channels = dims[a];
    inner = product(dims, a + 1);
  }
  int64_t operator()(int64_t i) const { return perAxis ? (i / inner) % channels : 0; }
};

int32_t saturate(double v, ElemKind kind) {
  const double lo = kind == ElemKind::Int8Q ? -128 : 0, hi = kind == ElemKind::Int8Q ? 127 : 255;
  if (std::isnan(v)) return 0;
  return int32_t(std::clamp(v, lo, hi));
}

void storeRaw(const TensorRef& t, int64_t i, int32_t v) {
  if (t.type.kind == ElemKind::Int8Q)
    t.as<int8_t>()[i] = int8_t(v);
  else
    t.as<uint8_t>()[i] = uint8_t(v);
}

Error quantizeLinear(const Attributes& attrs, Inputs in, Outputs out) {
  const ConstTensorRef& x = in[0];
  const ChannelOf channel(x.type.dims, QuantizeLinearAttrs::from(attrs).axis, in[1].numElements());
  const float* scale = in[1].as<float>();
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    const int64_t c = channel(i);
    // round half to even in the default rounding mode (std::nearbyint)
    const float q = std::nearbyint(x.as<float>()[i] / scale[c]);
    // An absent zero point is one scalar 0 even per axis (importer).
    const int64_t z = in[2].numElements() > 1 ? c : 0;
    storeRaw(out[0], i, saturate(double(q) + double(rawAt(in[2], z)), out[0].type.kind));
  }
  return Error::success();
}

Error dequantizeLinear(const Attributes& attrs, Inputs in, Outputs out) {
  const ConstTensorRef& x = in[0];
  const ChannelOf channel(x.type.dims, DequantizeLinearAttrs::from(attrs).axis, in[1].numElements());
  const float* scale = in[1].as<float>();
  float* y = out[0].as<float>();
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    const int64_t c = channel(i);
    const int64_t z = in[2].numElements() > 1 ? c : 0;  // an absent zero point is one scalar 0
    y[i] = float(int64_t(rawAt(x, i)) - int64_t(rawAt(in[2], z))) * scale[c];
  }
  return Error::success();
}

Error dynamicQuantizeLinear(Inputs in, Outputs out) {
  const ConstTensorRef& x = in[0];
  const float* xs = x.as<float>();
  const int64_t n = x.numElements();
  float lo = 0, hi = 0;  // the range always includes 0
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, xs[i]);
    hi = std::max(hi, xs[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  int32_t zeroPoint = 0;
  if (scale > 0 && std::isfinite(scale))
    zeroPoint =
        saturate(double(std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f))), ElemKind::UInt8Q);
  for (int64_t i = 0; i < n; ++i) {
    const double q = scale > 0 ? double(std::nearbyint(xs[i] / scale)) + zeroPoint : double(zeroPoint);
    out[0].as<uint8_t>()[i] = uint8_t(saturate(q, ElemKind::UInt8Q));
  }
  *out[1].as<float>() = scale;
  *out[2].as<uint8_t>() = uint8_t(zeroPoint);
  return Error::success();
}

Error matMulInteger(Inputs in, Outputs out) {
  const ConstTensorRef& a = in[0];
  const ConstTensorRef& b = in[1];
  const Dims& ad = a.type.dims;
  const Dims& bd = b.type.dims;
  const Dims& od = out[0].type.dims;
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const size_t batchRank = od.size() - 2;
  const Dims batch(od.begin(), od.begin() + int64_t(batchRank));
  // Batch strides (in matrices) of each operand, broadcast to the result's batch.
  const Dims aStrides = broadcastStrides(Dims(ad.begin(), ad.end() - 2), batch);
  const Dims bStrides = broadcastStrides(Dims(bd.begin(), bd.end() - 2), batch);
  const bool aPerRow = in[2].numElements() > 1, bPerColumn = in[3].numElements() > 1;
  int32_t* result = out[0].as<int32_t>();
  forEachOffset<2>(batch, {aStrides, bStrides}, [&](int64_t index, const std::array<int64_t, 2>& offsets) {
    const int64_t aBase = offsets[0] * m * k, bBase = offsets[1] * k * n;
    int32_t* dst = result + index * m * n;
    for (int64_t r = 0; r < m; ++r) {
      const int32_t aZero = rawAt(in[2], aPerRow ? r : 0);
      for (int64_t c = 0; c < n; ++c) {
        const int32_t bZero = rawAt(in[3], bPerColumn ? c : 0);
        int32_t acc = 0;
        for (int64_t t = 0; t < k; ++t)
          acc =
              wrapAdd(acc, wrapMul(rawAt(a, aBase + r * k + t) - aZero, rawAt(b, bBase + t * n + c) - bZero));
        dst[r * n + c] = acc;
      }
    }
  });
  return Error::success();
}

}  // namespace

Error runOnnxQuantization(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::QuantizeLinear:
      return quantizeLinear(attrs, in, out);
    case OpKind::DequantizeLinear:
      return dequantizeLinear(attrs, in, out);
    case OpKind::DynamicQuantizeLinear:
      return dynamicQuantizeLinear(in, out);
    case OpKind::MatMulInteger:
      return matMulInteger(in, out);
    default:
      return makeError(opName(kind), ": not an ONNX quantization op");
  }
}

}  // namespace ember::kernels
