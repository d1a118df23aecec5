// Reference kernels of the integer-only transformer ops (Ops.def:
// QuantizedSoftmax, QuantizedLayerNorm, QuantizedGelu). The arithmetic is
// ember::quant's (QuantMath.h, after I-BERT); these kernels only gather rows
// along the op's axis and derive each op's integer parameters from the float
// scales once per call, as a compiler would once per layer.
// docs/quantization.md 2.11.
#include <memory>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"
#include "ember/QuantMath.h"

namespace ember::kernels {
namespace {

quant::QuantRange rangeOf(ElemKind kind) {
  return kind == ElemKind::UInt8Q ? quant::uint8Range() : quant::int8Range();
}

int32_t load8(const ConstTensorRef& t, int64_t i) {
  return t.type.kind == ElemKind::UInt8Q ? int32_t(t.as<uint8_t>()[i]) : int32_t(t.as<int8_t>()[i]);
}

void store8(const TensorRef& t, int64_t i, int32_t v) {
  if (t.type.kind == ElemKind::UInt8Q)
    t.as<uint8_t>()[i] = uint8_t(v);
  else
    t.as<int8_t>()[i] = int8_t(v);
}

/// The elements of `t` (dims broadcast to `dims`) in row-major order of `dims`.
template <typename T>
std::vector<T> broadcastTo(const ConstTensorRef& t, const Dims& dims) {
  std::vector<T> values(static_cast<size_t>(product(dims)));
  const T* data = t.as<T>();
  forEachOffset<1>(
      dims, {broadcastStrides(t.type.dims, dims)},
      [&](int64_t i, const std::array<int64_t, 1>& offset) { values[size_t(i)] = data[offset[0]]; });
  return values;
}

void quantizedSoftmax(const Attributes& attrs, const ConstTensorRef& in, const ConstTensorRef& mask,
                      const TensorRef& out) {
  const Dims& dims = in.type.dims;
  const size_t axis = normalizeAxis(QuantizedSoftmaxAttrs::from(attrs).axis, dims.size());
  const int64_t outer = product(dims, 0, axis), length = dims[axis], inner = product(dims, axis + 1);
  const std::vector<bool> keepAll = broadcastTo<bool>(mask, dims);
  const quant::SoftmaxParams params = quant::softmaxParams(in.type.scale, out.type.scale);
  const quant::QuantRange range = rangeOf(out.type.kind);
  std::vector<int32_t> row(static_cast<size_t>(length)), result(static_cast<size_t>(length));
  std::vector<int64_t> exps(static_cast<size_t>(length));
  std::unique_ptr<bool[]> keep(new bool[size_t(length)]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      for (int64_t k = 0; k < length; ++k) {
        row[size_t(k)] = load8(in, base + k * inner);
        keep[size_t(k)] = keepAll[size_t(base + k * inner)];
      }
      quant::softmaxRow(row.data(), keep.get(), length, params, out.type.offset, range.lo, range.hi,
                        exps.data(), result.data());
      for (int64_t k = 0; k < length; ++k) store8(out, base + k * inner, result[size_t(k)]);
    }
}

void quantizedLayerNorm(const Attributes& attrs, Inputs in, const TensorRef& out) {
  const Dims& dims = in[0].type.dims;
  const QuantizedLayerNormAttrs a = QuantizedLayerNormAttrs::from(attrs);
  const size_t axis = normalizeAxis(a.axis, dims.size());
  const Dims normalized(dims.begin() + ptrdiff_t(axis), dims.end());
  const int64_t rows = product(dims, 0, axis), n = product(normalized);
  const std::vector<float> gamma = broadcastTo<float>(in[1], normalized);
  const std::vector<float> beta = broadcastTo<float>(in[2], normalized);
  std::vector<quant::LayerNormChannel> channels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    channels[size_t(i)] = quant::layerNormChannel(gamma[size_t(i)], beta[size_t(i)], out.type.scale);
  const int64_t epsilon = quant::layerNormEpsilon(float(a.epsilon), in[0].type.scale, n);
  const quant::QuantRange range = rangeOf(out.type.kind);
  std::vector<int32_t> row(static_cast<size_t>(n)), result(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) row[size_t(i)] = load8(in[0], r * n + i);
    quant::layerNormRow(row.data(), n, in[0].type.offset, epsilon, channels.data(), out.type.offset, range.lo,
                        range.hi, result.data());
    for (int64_t i = 0; i < n; ++i) store8(out, r * n + i, result[size_t(i)]);
  }
}

void quantizedGelu(const ConstTensorRef& in, const TensorRef& out) {
  const quant::GeluParams params = quant::geluParams(in.type.scale, out.type.scale);
  const quant::QuantRange range = rangeOf(out.type.kind);
  for (int64_t i = 0; i < in.numElements(); ++i)
    store8(out, i,
           quant::geluQuantized(load8(in, i), in.type.offset, params, out.type.offset, range.lo, range.hi));
}

}  // namespace

Error runQuantizedTransformer(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::QuantizedSoftmax:
      quantizedSoftmax(attrs, in[0], in[1], out[0]);
      return Error::success();
    case OpKind::QuantizedLayerNorm:
      quantizedLayerNorm(attrs, in, out[0]);
      return Error::success();
    case OpKind::QuantizedGelu:
      quantizedGelu(in[0], out[0]);
      return Error::success();
    default:
      return makeError(opName(kind), ": not an integer-only transformer op");
  }
}

}  // namespace ember::kernels
