// Data movement: Transpose, Reshape, Slice, Concat, Pad, Tile, Broadcast,
// Gather and Copy. These only move elements, so they work on every element
// kind by its size.
#include <algorithm>
#include <cstring>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// out[i] = in[offset(i)] for an output index walk with the given input strides.
void gatherByStrides(const ConstTensorRef& in, const TensorRef& out, const Dims& inStrides,
                     int64_t base = 0) {
  std::array<Dims, 1> strides = {inStrides};
  visitBySize(in.type.kind, [&]<typename W>() {
    const W* pi = in.as<W>() + base;
    W* po = out.as<W>();
    forEachOffset(out.type.dims, strides,
                  [&](int64_t i, const std::array<int64_t, 1>& off) { po[i] = pi[off[0]]; });
  });
}

void transpose(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const std::vector<int64_t> perm = TransposeAttrs::from(attrs).perm;
  Dims inStrides = in.type.strides();
  Dims permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) permuted[i] = inStrides[size_t(perm[i])];
  gatherByStrides(in, out, permuted);
}

void slice(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const SliceAttrs a = SliceAttrs::from(attrs);
  const std::vector<int64_t>&starts = a.starts, &steps = a.steps;
  if (out.numElements() == 0) return;
  Dims inStrides = in.type.strides();
  Dims stepped(inStrides.size());
  int64_t base = 0;
  for (size_t i = 0; i < inStrides.size(); ++i) {
    base += starts[i] * inStrides[i];
    stepped[i] = steps[i] * inStrides[i];
  }
  gatherByStrides(in, out, stepped, base);
}

void concat(const Attributes& attrs, Inputs in, const TensorRef& out) {
  size_t axis = normalizeAxis(ConcatAttrs::from(attrs).axis, out.type.rank());
  size_t elem = elemSize(out.type.kind);
  int64_t outer = product(out.type.dims, 0, axis);
  int64_t outRow = product(out.type.dims, axis) * int64_t(elem);
  auto* po = static_cast<std::byte*>(out.data);
  int64_t column = 0;  // byte offset of the current input inside an output row
  for (const ConstTensorRef& part : in) {
    int64_t row = product(part.type.dims, axis) * int64_t(elem);
    const auto* pi = static_cast<const std::byte*>(part.data);
    for (int64_t o = 0; o < outer && row > 0; ++o)
      std::memcpy(po + o * outRow + column, pi + o * row, size_t(row));
    column += row;
  }
}

/// The value `v` encoded as one element of type `t` (quantized: round(v /
/// scale) + offset, saturated), in the low bytes of a word.
uint64_t encodeElement(double v, const Type& t) {
  auto quantize = [&](auto lowest, auto highest) -> double {
    double q = std::nearbyint(v / double(t.scale)) + double(t.offset);
    return std::clamp(std::isnan(q) ? 0.0 : q, double(lowest), double(highest));
  };
  switch (t.kind) {
    case ElemKind::F32: {
      float f = float(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    case ElemKind::F16:
      return floatToHalf(float(v));
    case ElemKind::BF16:
      return floatToBFloat16(float(v));
    case ElemKind::Int8Q:
      return uint8_t(int8_t(quantize(INT8_MIN, INT8_MAX)));
    case ElemKind::UInt8Q:
      return uint8_t(quantize(0, UINT8_MAX));
    case ElemKind::Int32Q:
      return uint32_t(int32_t(quantize(INT32_MIN, INT32_MAX)));
    case ElemKind::I32:
      return uint32_t(saturatingCast<int32_t>(v));
    case ElemKind::I64:
      return uint64_t(saturatingCast<int64_t>(v));
    case ElemKind::Bool:
      return v != 0 ? 1 : 0;
    case ElemKind::F64: {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      return bits;
    }
  }
  return 0;
}

/// Per axis, the source index of each output index, or -1 for the constant.
std::vector<std::vector<int64_t>> padSources(const Dims& in, const Dims& out,
                                             const std::vector<int64_t>& pads, PadMode mode) {
  size_t rank = in.size();
  std::vector<std::vector<int64_t>> sources(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[rank + d];
    // The part of the input that survives cropping.
    int64_t lo = std::max<int64_t>(0, -begin), hi = in[d] - std::max<int64_t>(0, -end);
    sources[d].resize(size_t(out[d]));
    for (int64_t o = 0; o < out[d]; ++o) {
      int64_t i = o - begin;
      if (i < lo || i >= hi) {
        if (mode == PadMode::Constant)
          i = -1;
        else if (mode == PadMode::Edge)
          i = std::clamp(i, lo, hi - 1);
        else
          i = i < lo ? 2 * lo - i : 2 * (hi - 1) - i;  // reflect, without repeating the border
      }
      sources[d][size_t(o)] = i;
    }
  }
  return sources;
}

void pad(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const PadAttrs a = PadAttrs::from(attrs);
  const Dims& outDims = out.type.dims;
  if (out.numElements() == 0) return;
  std::vector<std::vector<int64_t>> sources = padSources(in.type.dims, outDims, a.pads, a.mode);
  Dims inStrides = in.type.strides();
  uint64_t fill = encodeElement(a.value, out.type);
  size_t rank = outDims.size();
  visitBySize(in.type.kind, [&]<typename W>() {
    const W* pi = in.as<W>();
    W* po = out.as<W>();
    forEachIndex(outDims, [&](int64_t i, const std::array<int64_t, kMaxRank>& index) {
      int64_t offset = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        int64_t s = sources[d][size_t(index[d])];
        inside = inside && s >= 0;
        offset += s * inStrides[d];
      }
      po[i] = inside ? pi[offset] : W(fill);
    });
  });
}

void tile(const ConstTensorRef& in, const TensorRef& out) {
  const Dims& inDims = in.type.dims;
  const Dims& outDims = out.type.dims;
  Dims inStrides = in.type.strides();
  size_t rank = outDims.size();
  visitBySize(in.type.kind, [&]<typename W>() {
    const W* pi = in.as<W>();
    W* po = out.as<W>();
    forEachIndex(outDims, [&](int64_t i, const std::array<int64_t, kMaxRank>& index) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) offset += (index[d] % inDims[d]) * inStrides[d];
      po[i] = pi[offset];
    });
  });
}

Error gather(const Attributes& attrs, const ConstTensorRef& data, const ConstTensorRef& indices,
             const TensorRef& out) {
  size_t axis = normalizeAxis(GatherAttrs::from(attrs).axis, data.type.rank());
  int64_t outer = product(data.type.dims, 0, axis);
  int64_t extent = data.type.dims[axis];
  int64_t block = product(data.type.dims, axis + 1) * int64_t(elemSize(data.type.kind));
  int64_t count = indices.numElements();
  // Resolve and check every index before writing anything.
  std::vector<int64_t> resolved(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    int64_t idx = indices.type.kind == ElemKind::I32 ? indices.as<int32_t>()[j] : indices.as<int64_t>()[j];
    if (idx < -extent || idx >= extent)
      return makeError("Gather: index ", idx, " is out of range for axis ", axis, " of size ", extent);
    resolved[size_t(j)] = idx < 0 ? idx + extent : idx;
  }
  const auto* pi = static_cast<const std::byte*>(data.data);
  auto* po = static_cast<std::byte*>(out.data);
  if (block == 0) return Error::success();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(po + (o * count + j) * block, pi + (o * extent + resolved[size_t(j)]) * block,
                  size_t(block));
  return Error::success();
}

/// Reshape and Copy: the same bytes (memmove: the IR may run them in place).
void copyBytes(const ConstTensorRef& in, const TensorRef& out) {
  size_t bytes = out.type.sizeInBytes();
  if (bytes > 0 && in.data != out.data) std::memmove(out.data, in.data, bytes);
}

}  // namespace

Error runDataMovement(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::Transpose:
      transpose(attrs, in[0], out[0]);
      break;
    case OpKind::Reshape:
    case OpKind::Copy:
      copyBytes(in[0], out[0]);
      break;
    case OpKind::Slice:
      slice(attrs, in[0], out[0]);
      break;
    case OpKind::Concat:
      concat(attrs, in, out[0]);
      break;
    case OpKind::Pad:
      pad(attrs, in[0], out[0]);
      break;
    case OpKind::Tile:
      tile(in[0], out[0]);
      break;
    case OpKind::Broadcast:
      gatherByStrides(in[0], out[0], broadcastStrides(in[0].type.dims, out[0].type.dims));
      break;
    case OpKind::Gather:
      return gather(attrs, in[0], in[1], out[0]);
    default:
      return makeError(opName(kind), ": not a data-movement kernel");
  }
  return Error::success();
}

}  // namespace ember::kernels
