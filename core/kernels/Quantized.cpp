// Reference kernels of the int8 quantized primitives (Ops.def, "int8
// quantization"). Every integer step is an ember::quant call (QuantMath.h),
// the one specification that the NPU simulator and other backends share, so
// these kernels only arrange loops around it. docs/quantization.md.
#include <algorithm>
#include <cmath>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"
#include "ember/QuantMath.h"

namespace ember::kernels {
namespace {

quant::QuantRange rangeOf(ElemKind kind) {
  return kind == ElemKind::UInt8Q ? quant::uint8Range() : quant::int8Range();
}

/// Reads the raw integer of element i of an i8q/u8q tensor.
inline int32_t load8(const ConstTensorRef& t, int64_t i) {
  return t.type.kind == ElemKind::UInt8Q ? int32_t(t.as<uint8_t>()[i]) : int32_t(t.as<int8_t>()[i]);
}
inline void store8(const TensorRef& t, int64_t i, int32_t v) {
  if (t.type.kind == ElemKind::UInt8Q)
    t.as<uint8_t>()[i] = uint8_t(v);
  else
    t.as<int8_t>()[i] = int8_t(v);
}

/// The output range with a fused clip_min/clip_max (QuantizedConvAttrs or QuantizedMatMulAttrs).
template <class ClippedAttrs>
quant::QuantRange outputRange(const ClippedAttrs& a, const Type& out) {
  return quant::activationRange(rangeOf(out.kind), out.scale, out.offset,
                                float(a.clipMin.value_or(-INFINITY)), float(a.clipMax.value_or(INFINITY)));
}

void quantize(const ConstTensorRef& in, const TensorRef& out) {
  const float* x = in.as<float>();
  const Type& t = out.type;
  int64_t n = in.numElements();
  if (t.kind == ElemKind::Int32Q) {
    for (int64_t i = 0; i < n; ++i)
      out.as<int32_t>()[i] = quant::quantizeValue(x[i], t.scale, t.offset, INT32_MIN, INT32_MAX);
    return;
  }
  quant::QuantRange r = rangeOf(t.kind);
  for (int64_t i = 0; i < n; ++i) store8(out, i, quant::quantizeValue(x[i], t.scale, t.offset, r.lo, r.hi));
}

void dequantize(const ConstTensorRef& in, const TensorRef& out) {
  float* y = out.as<float>();
  const Type& t = in.type;
  int64_t n = in.numElements();
  for (int64_t i = 0; i < n; ++i) {
    int32_t q = t.kind == ElemKind::Int32Q ? in.as<int32_t>()[i] : load8(in, i);
    y[i] = quant::dequantizeValue(q, t.scale, t.offset);
  }
}

void requantize(const ConstTensorRef& in, const TensorRef& out) {
  const auto m = quant::rescaleMultiplier(in.type.scale, out.type.scale);
  quant::QuantRange r = rangeOf(out.type.kind);
  for (int64_t i = 0; i < in.numElements(); ++i)
    store8(out, i, quant::rescale(load8(in, i), in.type.offset, m, out.type.offset, r.lo, r.hi));
}

void quantizedConv(const Attributes& attrs, Inputs in, const TensorRef& out) {
  const ConstTensorRef &input = in[0], &filterRef = in[1];
  const int8_t* filter = filterRef.as<int8_t>();
  const int32_t* bias = in[2].as<int32_t>();
  const float* filterScales = in[3].as<float>();
  const Dims &id = input.type.dims, &fd = filterRef.type.dims, &od = out.type.dims;
  const QuantizedConvAttrs a = QuantizedConvAttrs::from(attrs);
  const std::vector<int64_t>&strides = a.strides, &pads = a.pads, &dilations = a.dilations;
  const int64_t group = a.group;
  const int64_t h = id[1], w = id[2], c = id[3], oh = od[1], ow = od[2], o = od[3], kh = fd[1], kw = fd[2];
  const int64_t cg = c / group, og = o / group;
  const int32_t inZero = input.type.offset;

  std::vector<quant::FixedPointMultiplier> multipliers(static_cast<size_t>(o));
  for (int64_t k = 0; k < o; ++k)
    multipliers[size_t(k)] = quant::outputMultiplier(input.type.scale, filterScales[k], out.type.scale);
  const quant::QuantRange range = outputRange(a, out.type);

  // Unsigned accumulation: int32 sums wrap modulo 2^32 (the spec), never UB.
  std::vector<uint32_t> acc(static_cast<size_t>(o));
  std::vector<int32_t> centered(static_cast<size_t>(c));  // one input pixel minus the zero point
  for (int64_t n = 0; n < id[0]; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        for (int64_t k = 0; k < o; ++k) acc[size_t(k)] = uint32_t(bias[k]);
        for (int64_t y = 0; y < kh; ++y) {
          int64_t iy = oy * strides[0] - pads[0] + y * dilations[0];
          if (iy < 0 || iy >= h) continue;
          for (int64_t x = 0; x < kw; ++x) {
            int64_t ix = ox * strides[1] - pads[1] + x * dilations[1];
            if (ix < 0 || ix >= w) continue;
            int64_t pixel = ((n * h + iy) * w + ix) * c;
            for (int64_t ci = 0; ci < c; ++ci) centered[size_t(ci)] = load8(input, pixel + ci) - inZero;
            for (int64_t k = 0; k < o; ++k) {
              const int32_t* px = centered.data() + (k / og) * cg;
              const int8_t* taps = filter + ((k * kh + y) * kw + x) * cg;
              uint32_t sum = 0;
              for (int64_t ci = 0; ci < cg; ++ci) sum += uint32_t(px[ci] * int32_t(taps[ci]));
              acc[size_t(k)] += sum;
            }
          }
        }
        int64_t base = ((n * oh + oy) * ow + ox) * o;
        for (int64_t k = 0; k < o; ++k)
          store8(out, base + k,
                 quant::requantize(int32_t(acc[size_t(k)]), multipliers[size_t(k)], out.type.offset, range.lo,
                                   range.hi));
      }
}

void quantizedMatMul(const Attributes& attrs, Inputs in, const TensorRef& out) {
  const ConstTensorRef &lhs = in[0], &rhs = in[1];
  const int32_t* bias = in[2].as<int32_t>();
  const float* rhsScales = in[3].as<float>();
  const Dims &a = lhs.type.dims, &b = rhs.type.dims, &o = out.type.dims;
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const int32_t lhsZero = lhs.type.offset, rhsZero = rhs.type.offset;
  std::vector<quant::FixedPointMultiplier> multipliers(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    multipliers[size_t(j)] = quant::outputMultiplier(lhs.type.scale, rhsScales[j], out.type.scale);
  const quant::QuantRange range = outputRange(QuantizedMatMulAttrs::from(attrs), out.type);

  Dims outBatch(o.begin(), o.end() - 2);
  std::array<Dims, 2> strides = {broadcastStrides(Dims(a.begin(), a.end() - 2), outBatch),
                                 broadcastStrides(Dims(b.begin(), b.end() - 2), outBatch)};
  std::vector<uint32_t> acc(static_cast<size_t>(n));
  forEachOffset(outBatch, strides, [&](int64_t batch, const std::array<int64_t, 2>& off) {
    int64_t lhsBase = off[0] * m * k, rhsBase = off[1] * k * n, outBase = batch * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) acc[size_t(j)] = uint32_t(bias[j]);
      for (int64_t p = 0; p < k; ++p) {
        int32_t av = load8(lhs, lhsBase + i * k + p) - lhsZero;
        for (int64_t j = 0; j < n; ++j)
          acc[size_t(j)] += uint32_t(av * (load8(rhs, rhsBase + p * n + j) - rhsZero));
      }
      for (int64_t j = 0; j < n; ++j)
        store8(out, outBase + i * n + j,
               quant::requantize(int32_t(acc[size_t(j)]), multipliers[size_t(j)], out.type.offset, range.lo,
                                 range.hi));
    }
  });
}

void quantizedAdd(const Attributes& attrs, Inputs in, const TensorRef& out) {
  const auto m = quant::addMultipliers(in[0].type.scale, in[1].type.scale, out.type.scale);
  const quant::QuantRange range = outputRange(QuantizedAddAttrs::from(attrs), out.type);
  std::array<Dims, 2> strides = {broadcastStrides(in[0].type.dims, out.type.dims),
                                 broadcastStrides(in[1].type.dims, out.type.dims)};
  forEachOffset(out.type.dims, strides, [&](int64_t i, const std::array<int64_t, 2>& off) {
    store8(out, i,
           quant::addQuantized(load8(in[0], off[0]), in[0].type.offset, load8(in[1], off[1]),
                               in[1].type.offset, m, out.type.offset, range.lo, range.hi));
  });
}

/// AvgPool's windows and divisor (Pooling.cpp), with the integer rule.
void quantizedAvgPool(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const QuantizedAvgPoolAttrs a = QuantizedAvgPoolAttrs::from(attrs);
  const std::vector<int64_t>&kernel = a.kernel, &strides = a.strides, &pads = a.pads;
  const bool countIncludePad = a.countIncludePad != 0;
  const Dims &id = in.type.dims, &od = out.type.dims;
  const int64_t h = id[1], w = id[2], c = id[3];
  const int32_t inZero = in.type.offset;
  const quant::QuantRange range = rangeOf(out.type.kind);
  std::vector<int32_t> sum(static_cast<size_t>(c));
  for (int64_t n = 0; n < id[0]; ++n)
    for (int64_t oy = 0; oy < od[1]; ++oy)
      for (int64_t ox = 0; ox < od[2]; ++ox) {
        int64_t y0 = oy * strides[0] - pads[0], x0 = ox * strides[1] - pads[1];
        int64_t y1 = std::min(y0 + kernel[0], h + pads[2]), x1 = std::min(x0 + kernel[1], w + pads[3]);
        int64_t iy0 = std::max<int64_t>(y0, 0), ix0 = std::max<int64_t>(x0, 0);
        int64_t iy1 = std::min(y1, h), ix1 = std::min(x1, w);
        int64_t count = countIncludePad ? (y1 - y0) * (x1 - x0)
                                        : std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
        std::fill(sum.begin(), sum.end(), 0);
        for (int64_t iy = iy0; iy < iy1; ++iy)
          for (int64_t ix = ix0; ix < ix1; ++ix) {
            int64_t pixel = ((n * h + iy) * w + ix) * c;
            for (int64_t ch = 0; ch < c; ++ch) sum[size_t(ch)] += load8(in, pixel + ch) - inZero;
          }
        int64_t base = ((n * od[1] + oy) * od[2] + ox) * c;
        // An all-padding window averages nothing: the output zero point.
        const auto m = quant::averageMultiplier(in.type.scale, out.type.scale, std::max<int64_t>(count, 1));
        for (int64_t ch = 0; ch < c; ++ch)
          store8(out, base + ch,
                 count > 0 ? quant::requantize(sum[size_t(ch)], m, out.type.offset, range.lo, range.hi)
                           : std::clamp(out.type.offset, range.lo, range.hi));
      }
}

void lookup(const ConstTensorRef& in, const ConstTensorRef& table, const TensorRef& out) {
  const int32_t lo = rangeOf(in.type.kind).lo;
  for (int64_t i = 0; i < in.numElements(); ++i) store8(out, i, load8(table, load8(in, i) - lo));
}

}  // namespace

Error runQuantized(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::Quantize:
      quantize(in[0], out[0]);
      break;
    case OpKind::Dequantize:
      dequantize(in[0], out[0]);
      break;
    case OpKind::Requantize:
      requantize(in[0], out[0]);
      break;
    case OpKind::QuantizedConv:
      quantizedConv(attrs, in, out[0]);
      break;
    case OpKind::QuantizedMatMul:
      quantizedMatMul(attrs, in, out[0]);
      break;
    case OpKind::QuantizedAdd:
      quantizedAdd(attrs, in, out[0]);
      break;
    case OpKind::QuantizedAvgPool:
      quantizedAvgPool(attrs, in[0], out[0]);
      break;
    case OpKind::Lookup:
      lookup(in[0], in[1], out[0]);
      break;
    default:
      return makeError(opName(kind), ": not a quantized primitive");
  }
  return Error::success();
}

}  // namespace ember::kernels
