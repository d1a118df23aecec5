// ONNX ops that select or place elements by index or position: the
// gather/scatter family, masks built from positions (Trilu, EyeLike, OneHot,
// Hardmax), ReverseSequence and Einsum.

#include <cmath>
#include <cstring>
#include <limits>

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

/// A constant i64 [1, .., n, .., 1] of `rank` holding 0..n-1 along `axis`.
Value iotaAlong(const NodeBuilder& b, int64_t n, size_t rank, size_t axis) {
  Dims dims(rank, 1);
  dims[axis] = n;
  Tensor t(Type(ElemKind::I64, dims));
  for (int64_t i = 0; i < n; ++i) t.as<int64_t>()[i] = i;
  return b.constant(std::move(t));
}

/// `v` with a size-1 dim inserted or its own dims placed at `axis` of a
/// `rank`-dim shape of ones (for broadcasting a vector along one axis).
Expected<Value> alongAxis(NodeBuilder& b, const Value& v, size_t rank, size_t axis, std::string_view suffix) {
  Dims dims(rank, 1);
  dims[axis] = v.type.numElements();
  return b.reshape(v, dims, suffix);
}

Expected<Value> toI64(NodeBuilder& b, const Value& v, std::string_view suffix) {
  if (v.type.kind == ElemKind::I64) return v;
  return b.emit(OpKind::Cast, {v}, Attributes{{"to", std::string(elemKindName(ElemKind::I64))}}, suffix);
}

/// ScatterElements and its deprecated alias Scatter (opset 9-10, no reduction).
Error importScatterElements(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> ins, b.inputs());
  if (ins.size() != 3) return makeError("expects 3 inputs, got ", ins.size());
  EMBER_TRY(int64_t axis, b.attrInt("axis", 0));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(ins[0].rank())));
  EMBER_TRY(std::string reduction, b.attrString("reduction", "none"));
  EMBER_TRY(Value out,
            b.emit(OpKind::ScatterElements, ins, Attributes{{"axis", axis}, {"reduction", reduction}}));
  return b.setOutput(0, out);
}

Error importGatherND(NodeBuilder& b) {
  EMBER_TRY(Value data, b.input(0));
  EMBER_TRY(Value indices, b.input(1));
  EMBER_TRY(int64_t batchDims, b.attrInt("batch_dims", 0));
  EMBER_TRY(Value out, b.emit(OpKind::GatherND, {data, indices}, Attributes{{"batch_dims", batchDims}}));
  return b.setOutput(0, out);
}

Error importScatterND(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> ins, b.inputs());
  if (ins.size() != 3) return makeError("expects 3 inputs, got ", ins.size());
  EMBER_TRY(std::string reduction, b.attrString("reduction", "none"));
  EMBER_TRY(Value out, b.emit(OpKind::ScatterND, ins, Attributes{{"reduction", reduction}}));
  return b.setOutput(0, out);
}

/// Trilu: x where the column minus the row is >= k (upper) or <= k (lower),
/// else 0. The mask over the last two dims is an import-time constant.
Error importTrilu(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (x.rank() < 2) return makeError("input must have rank >= 2, not ", x.rank());
  int64_t k = 0;
  if (b.hasInput(1)) {
    EMBER_TRY(std::vector<int64_t> ks, b.constInts(1, "k"));
    if (ks.size() != 1) return makeError("input 'k' must hold one value");
    k = ks[0];
  }
  EMBER_TRY(int64_t upper, b.attrInt("upper", 1));
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::Bool, {rows, cols})));
  Tensor mask(Type(ElemKind::Bool, {rows, cols}));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      // Compared as i128: k may be any int64.
      const __int128 diagonal = __int128(j) - i;
      mask.as<uint8_t>()[i * cols + j] = upper ? diagonal >= k : diagonal <= k;
    }
  EMBER_TRY(Value out, b.emit(OpKind::Select, {b.constant(std::move(mask)), x, b.scalar(x.type.kind, 0)}));
  return b.setOutput(0, out);
}

/// EyeLike: a constant of the input's shape with ones on diagonal k.
Error importEyeLike(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (x.rank() != 2) return makeError("input must have rank 2, not ", x.rank());
  ElemKind kind = x.type.kind;
  if (b.hasAttr("dtype")) {
    EMBER_TRY(int64_t dtype, b.attrInt("dtype"));
    auto target = typeFromOnnx(int32_t(dtype), {});
    if (!target) return target.error().withContext("attribute 'dtype'");
    kind = target->kind;
  }
  EMBER_TRY(int64_t k, b.attrInt("k", 0));
  const Type type = isQuantized(kind) ? Type(kind, x.dims(), 1.0f, 0) : Type(kind, x.dims());
  EMBER_RETURN_IF_ERROR(b.reserveConstant(type));
  Tensor eye(type);
  const int64_t rows = x.dims()[0], cols = x.dims()[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) eye.setElementFromDouble(i * cols + j, __int128(j) - i == k ? 1 : 0);
  return b.setOutput(0, b.constant(std::move(eye)));
}

/// Whether each position along `axis` of the one-hot result equals its
/// index (negative indices wrapped by `depth`).
Expected<Value> oneHotMask(NodeBuilder& b, const Value& indices, int64_t depth, size_t axis) {
  const size_t rank = indices.rank() + 1;
  EMBER_TRY(Value idx, toI64(b, indices, "i64"));
  const Value depthScalar = b.scalar(ElemKind::I64, double(depth));
  EMBER_TRY(Value negative, b.emit(OpKind::Less, {idx, b.scalar(ElemKind::I64, 0)}, {}, "negative"));
  EMBER_TRY(Value wrapped, b.emit(OpKind::Add, {idx, depthScalar}, {}, "wrapped"));
  EMBER_TRY(idx, b.emit(OpKind::Select, {negative, wrapped, idx}, {}, "index"));
  Dims expanded = indices.dims();
  expanded.insert(expanded.begin() + int64_t(axis), 1);
  EMBER_TRY(idx, b.reshape(idx, expanded, "expanded"));
  return b.emit(OpKind::Equal, {idx, iotaAlong(b, depth, rank, axis)}, {}, "hot");
}

/// OneHot: values[1] where the position along `axis` equals the (wrapped)
/// index, values[0] elsewhere.
Error importOneHot(NodeBuilder& b) {
  EMBER_TRY(Value indices, b.input(0));
  EMBER_TRY(std::vector<double> depths, b.constFloats(1, "depth"));
  if (depths.size() != 1) return makeError("input 'depth' must hold one value");
  if (!(depths[0] >= 1) || depths[0] > double(b.maxElements()))
    return makeError("depth ", depths[0], " is out of range");
  const int64_t depth = int64_t(depths[0]);
  EMBER_TRY(Value values, b.input(2));
  if (values.type.numElements() != 2) return makeError("input 'values' must hold two values (off, on)");
  const size_t rank = indices.rank() + 1;
  EMBER_TRY(int64_t axis, b.attrInt("axis", -1));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(rank)));

  EMBER_TRY(Value hot, oneHotMask(b, indices, depth, size_t(axis)));

  EMBER_TRY(Value flat, b.reshape(values, {2}, "values"));
  EMBER_TRY(Value off, b.emit(OpKind::Gather, {flat, b.scalar(ElemKind::I64, 0)},
                              Attributes{{"axis", int64_t(0)}}, "off"));
  EMBER_TRY(Value on, b.emit(OpKind::Gather, {flat, b.scalar(ElemKind::I64, 1)},
                             Attributes{{"axis", int64_t(0)}}, "on"));
  EMBER_TRY(Value out, b.emit(OpKind::Select, {hot, on, off}));
  return b.setOutput(0, out);
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before
/// opset 13 the input is flattened to 2-D at `axis` first.
Error importHardmax(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const int64_t rank = int64_t(x.rank());
  const bool coerce = b.opset() < 13;
  EMBER_TRY(int64_t axis, softmaxAxis(b, rank));
  Value v = x;
  // Whether x was coerced to 2-D: the result goes back to x's dims whatever
  // the ranks (a 2x1 input coerced at axis 0 is 1x2, of the same rank).
  const bool coerced = coerce && axis != rank - 1;
  if (coerced) {
    const Dims& d = x.dims();
    EMBER_TRY(v, b.reshape(x, {product(d, 0, size_t(axis)), product(d, size_t(axis), d.size())}, "2d"));
    axis = 1;
  }
  EMBER_TRY(Value argmax,
            b.emit(OpKind::ArgMax, {v},
                   Attributes{{"axis", axis}, {"keepdims", int64_t(1)}, {"select_last_index", int64_t(0)}},
                   "argmax"));
  const int64_t n = v.dims()[size_t(axis)];
  EMBER_TRY(Value hot, b.emit(OpKind::Equal, {argmax, iotaAlong(b, n, v.rank(), size_t(axis))}, {}, "hot"));
  EMBER_TRY(Value out, b.emit(OpKind::Cast, {hot}, Attributes{{"to", std::string(elemKindName(x.type.kind))}},
                              coerced ? "cast" : ""));
  if (coerced) {
    EMBER_TRY(out, b.reshape(out, x.dims(), ""));
  }
  return b.setOutput(0, out);
}

/// ReverseSequence: along time_axis, the first sequence_lens[b] elements of
/// batch b reversed, the rest kept. Built as GatherElements with index
/// t < len ? len - 1 - t : t, so sequence_lens may be a runtime value.
Error importReverseSequence(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value lens, b.input(1));
  if (x.rank() < 2) return makeError("input must have rank >= 2, not ", x.rank());
  EMBER_TRY(int64_t batchAxis, b.attrInt("batch_axis", 1));
  EMBER_TRY(int64_t timeAxis, b.attrInt("time_axis", 0));
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return makeError("batch_axis ", batchAxis, " and time_axis ", timeAxis, " must be 0 and 1 in some order");
  const size_t rank = x.rank();
  if (lens.rank() != 1 || lens.dims()[0] != x.dims()[size_t(batchAxis)])
    return makeError("sequence_lens ", lens.type.str(), " must be a vector of the batch size ",
                     x.dims()[size_t(batchAxis)]);
  EMBER_TRY(Value len, toI64(b, lens, "lens_i64"));
  EMBER_TRY(len, alongAxis(b, len, rank, size_t(batchAxis), "lens"));
  const Value time = iotaAlong(b, x.dims()[size_t(timeAxis)], rank, size_t(timeAxis));
  EMBER_TRY(Value inside, b.emit(OpKind::Less, {time, len}, {}, "inside"));
  EMBER_TRY(Value last, b.emit(OpKind::Sub, {len, b.scalar(ElemKind::I64, 1)}, {}, "last"));
  EMBER_TRY(Value reversed, b.emit(OpKind::Sub, {last, time}, {}, "reversed"));
  EMBER_TRY(Value index, b.emit(OpKind::Select, {inside, reversed, time}, {}, "index"));
  EMBER_TRY(index, b.emit(OpKind::Broadcast, {index}, Attributes{{"shape", x.dims()}}, "index_full"));
  EMBER_TRY(Value out, b.emit(OpKind::GatherElements, {x, index}, Attributes{{"axis", timeAxis}}));
  return b.setOutput(0, out);
}

/// Compress: the slices along `axis` (of the flattened input without one)
/// where `condition` is true. The output shape depends on the condition's
/// values, so it must be a constant (or a bound input).
Error importCompress(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::vector<double> condition, b.constFloats(1, "condition"));
  Value data = x;
  int64_t axis = 0;
  if (b.hasAttr("axis")) {
    EMBER_TRY(axis, b.attrInt("axis"));
    EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank())));
  } else {
    EMBER_TRY(data, b.reshape(x, {x.type.numElements()}, "flat"));
  }
  const int64_t extent = data.dims()[size_t(axis)];
  if (int64_t(condition.size()) > extent)
    return makeError("condition has ", condition.size(), " values but the axis has ", extent);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i] != 0) kept.push_back(int64_t(i));
  Value indices = b.constant(Tensor::fromValues<int64_t>(ElemKind::I64, {int64_t(kept.size())}, kept));
  EMBER_TRY(Value out, b.emit(OpKind::Gather, {data, indices}, Attributes{{"axis", axis}}));
  return b.setOutput(0, out);
}

/// CumSum's [n, n] 0/1 matrix m: y[..., j] = sum_i x[..., i] * m[i][j].
Tensor cumSumMatrix(ElemKind kind, int64_t n, bool exclusive, bool reverse) {
  Tensor m(Type(kind, {n, n}));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const bool take = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      m.setElementFromDouble(i * n + j, take ? 1 : 0);
    }
  return m;
}

/// x with its `axis` [n] multiplied by the constant [n, n] matrix m: the axis
/// moved last, a MatMul of the rows, and moved back.
Expected<Value> matMulAlongAxis(NodeBuilder& b, const Value& x, size_t axis, Tensor m) {
  const size_t rank = x.rank();
  const int64_t n = x.dims()[axis];
  std::vector<int64_t> perm;
  perm.reserve(rank);
  for (size_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(int64_t(d));
  perm.push_back(int64_t(axis));
  std::vector<int64_t> inverse(rank);
  for (size_t d = 0; d < rank; ++d) inverse[size_t(perm[d])] = int64_t(d);
  const bool moved = axis != rank - 1;
  Value v = x;
  if (moved) {
    EMBER_TRY(v, b.transpose(x, perm, "axis_last"));
  }
  const Dims lastDims = v.dims();
  EMBER_TRY(v, b.reshape(v, {product(lastDims, 0, rank - 1), n}, "rows"));
  EMBER_TRY(v, b.emit(OpKind::MatMul, {v, b.constant(std::move(m))}, {}, "sums"));
  EMBER_TRY(v, b.reshape(v, lastDims, moved ? "sums_nd" : ""));
  if (moved) {
    EMBER_TRY(v, b.transpose(v, inverse, ""));
  }
  return v;
}

/// CumSum along a constant axis: a MatMul with a constant 0/1 triangular
/// matrix (upper for forward, lower for reverse; strict when exclusive), the
/// axis moved last and back.
Error importCumSum(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::vector<int64_t> axes, b.constInts(1, "axis"));
  if (axes.size() != 1) return makeError("input 'axis' must hold one value");
  if (x.rank() == 0) return makeError("input must have rank >= 1");
  EMBER_TRY(int64_t axis, normalizeAxis(axes[0], int64_t(x.rank())));
  EMBER_TRY(int64_t exclusive, b.attrInt("exclusive", 0));
  EMBER_TRY(int64_t reverse, b.attrInt("reverse", 0));
  const ElemKind kind = x.type.kind;
  if (kind != ElemKind::F32 && kind != ElemKind::F64 && kind != ElemKind::I32 && kind != ElemKind::I64)
    return makeError("unsupported element type ", elemKindName(kind));
  const int64_t n = x.dims()[size_t(axis)];
  if (n > 16384) return makeError("axis of ", n, " elements is too long for the MatMul form (at most 16384)");
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(kind, {n, n})));
  EMBER_TRY(Value sums,
            matMulAlongAxis(b, x, size_t(axis), cumSumMatrix(kind, n, exclusive != 0, reverse != 0)));
  return b.setOutput(0, sums);
}

/// The unpooled shape by the pooling arithmetic, which MaxUnpool's indices address.
Expected<Dims> unpooledDims(NodeBuilder& b, const Value& x) {
  const size_t spatial = x.rank() - 2;
  EMBER_TRY(std::vector<int64_t> kernel, b.attrInts("kernel_shape"));
  EMBER_TRY(std::vector<int64_t> strides, b.attrInts("strides", std::vector<int64_t>(spatial, 1)));
  EMBER_TRY(std::vector<int64_t> pads, b.attrInts("pads", std::vector<int64_t>(2 * spatial, 0)));
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
    return makeError("kernel_shape, strides and pads must describe ", spatial, " spatial axes");
  Dims pooledDims = {x.dims()[0], x.dims()[1]};
  for (size_t d = 0; d < spatial; ++d)
    pooledDims.push_back((x.dims()[d + 2] - 1) * strides[d] - pads[d] - pads[d + spatial] + kernel[d]);
  if (Error e = checkDims(pooledDims, b.maxElements())) return e.withContext("unpooled shape");
  return pooledDims;
}

/// MaxUnpool's output dims: the unpooled ones, or a constant output_shape
/// that holds them (same batch and channels, spatial dims at least as large).
Expected<Dims> maxUnpoolOutputDims(NodeBuilder& b, const Value& x, const Dims& pooledDims) {
  Dims outDims = pooledDims;
  if (b.hasInput(2)) {
    EMBER_TRY(outDims, b.constInts(2, "output_shape"));
    if (outDims.size() != x.rank())
      return makeError("output_shape has ", outDims.size(), " values for rank ", x.rank());
  }
  if (Error e = checkDims(outDims, b.maxElements())) return e.withContext("output shape");
  for (size_t d = 0; d < outDims.size(); ++d)
    if (d < 2 ? outDims[d] != pooledDims[d] : outDims[d] < pooledDims[d])
      return makeError("output_shape ", dimsStr(outDims), " does not hold the unpooled ",
                       dimsStr(pooledDims));
  return outDims;
}

/// Flat indices over `pooledDims` re-flattened over the larger `outDims`:
/// each is decomposed over the unpooled dims and keeps its coordinates.
Expected<Value> remapUnpoolIndices(NodeBuilder& b, const Value& flatIndices, const Dims& pooledDims,
                                   const Dims& outDims) {
  const ElemKind i64 = ElemKind::I64;
  Value rest = flatIndices;
  std::optional<Value> place;
  int64_t outStride = 1;
  for (size_t d = outDims.size(); d-- > 2;) {
    const std::string axis = std::to_string(d);
    const Value extent = b.scalar(i64, double(pooledDims[d]));
    EMBER_TRY(Value coord,
              b.emit(OpKind::Mod, {rest, extent}, Attributes{{"fmod", int64_t(0)}}, "coord" + axis));
    EMBER_TRY(rest, b.emit(OpKind::Div, {rest, extent}, {}, "rest" + axis));
    EMBER_TRY(Value term, b.emit(OpKind::Mul, {coord, b.scalar(i64, double(outStride))}, {}, "term" + axis));
    if (place) {
      EMBER_TRY(place, b.emit(OpKind::Add, {*place, term}, {}, "place" + axis));
    } else {
      place = term;
    }
    outStride *= outDims[d];
  }
  EMBER_TRY(Value planes, b.emit(OpKind::Mul, {rest, b.scalar(i64, double(outStride))}, {}, "planes"));
  return b.emit(OpKind::Add, {*place, planes}, {}, "remapped");
}

/// MaxUnpool: each input value goes to its flat index (MaxPool's Indices:
/// over the whole N, C, spatial tensor of the unpooled shape) of a zero
/// tensor; a ScatterElements on the flattened tensors. A larger
/// `output_shape` (a constant) keeps each value's spatial coordinates.
Error importMaxUnpool(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value indices, b.input(1));
  if (x.rank() < 3) return makeError("input must have rank >= 3, not ", x.rank());
  if (indices.dims() != x.dims())
    return makeError("indices ", indices.type.str(), " must match the input ", x.type.str());
  EMBER_TRY(Dims pooledDims, unpooledDims(b, x));
  EMBER_TRY(Dims outDims, maxUnpoolOutputDims(b, x, pooledDims));
  const Type outType = x.type.withDims(outDims);
  EMBER_RETURN_IF_ERROR(b.reserveConstant(outType));
  Tensor zeros(outType);
  if (zeros.sizeInBytes() > 0) std::memset(zeros.data(), 0, zeros.sizeInBytes());
  const int64_t total = outType.numElements(), count = x.type.numElements();
  EMBER_TRY(Value flatZeros, b.reshape(b.constant(std::move(zeros)), {total}, "zeros"));
  EMBER_TRY(Value flatIndices, b.reshape(indices, {count}, "flat_indices"));
  EMBER_TRY(flatIndices, toI64(b, flatIndices, "indices_i64"));
  if (outDims != pooledDims) {
    EMBER_TRY(flatIndices, remapUnpoolIndices(b, flatIndices, pooledDims, outDims));
  }
  EMBER_TRY(Value flatValues, b.reshape(x, {count}, "flat_values"));
  EMBER_TRY(Value scattered,
            b.emit(OpKind::ScatterElements, {flatZeros, flatIndices, flatValues},
                   Attributes{{"axis", int64_t(0)}, {"reduction", std::string("none")}}, "scatter"));
  EMBER_TRY(Value out, b.reshape(scattered, outDims, ""));
  return b.setOutput(0, out);
}

Error importEinsum(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> ins, b.inputs());
  EMBER_TRY(std::string equation, b.attrString("equation"));
  EMBER_TRY(Value out, b.emit(OpKind::Einsum, ins, Attributes{{"equation", equation}}));
  return b.setOutput(0, out);
}

}  // namespace

void registerIndexingOps(OpTable& t) {
  t["GatherElements"] = [](NodeBuilder& b) { return importGatherAlongAxis(b, OpKind::GatherElements); };
  t["ScatterElements"] = importScatterElements;
  t["Scatter"] = importScatterElements;
  t["GatherND"] = importGatherND;
  t["ScatterND"] = importScatterND;
  t["Trilu"] = importTrilu;
  t["EyeLike"] = importEyeLike;
  t["OneHot"] = importOneHot;
  t["Hardmax"] = importHardmax;
  t["ReverseSequence"] = importReverseSequence;
  t["Einsum"] = importEinsum;
  t["Compress"] = importCompress;
  t["CumSum"] = importCumSum;
  t["MaxUnpool"] = importMaxUnpool;
}

}  // namespace ember::onnx_import
