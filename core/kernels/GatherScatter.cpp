// Index-driven data movement: GatherElements, ScatterElements, GatherND and
// ScatterND. Every index is resolved (negative counts from the end) and
// range-checked before anything is written, so a bad index is an Error and
// leaves the output untouched.
#include <cstddef>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

int64_t indexAt(const ConstTensorRef& indices, int64_t i) {
  return indices.type.kind == ElemKind::I32 ? indices.as<int32_t>()[i] : indices.as<int64_t>()[i];
}

Expected<int64_t> resolveIndex(OpKind op, int64_t idx, int64_t extent, size_t axis) {
  if (idx < -extent || idx >= extent)
    return makeError(opName(op), ": index ", idx, " is out of range for axis ", axis, " of size ", extent);
  return idx < 0 ? idx + extent : idx;
}

/// Row-major element strides of `dims`.
Dims stridesOf(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

void copyInput(const ConstTensorRef& in, const TensorRef& out) {
  size_t bytes = out.type.sizeInBytes();
  if (bytes > 0 && in.data != out.data) std::memmove(out.data, in.data, bytes);
}

/// For each element of `indexDims` (row-major), the data element offset it
/// addresses: its own position with the coordinate on `axis` replaced by the
/// resolved index.
Expected<std::vector<int64_t>> elementOffsets(OpKind op, const ConstTensorRef& indices, const Dims& dataDims,
                                              size_t axis) {
  const Dims& indexDims = indices.type.dims;
  const Dims dataStrides = stridesOf(dataDims);
  std::vector<int64_t> offsets(size_t(indices.numElements()));
  std::vector<int64_t> position(indexDims.size(), 0);
  for (size_t i = 0; i < offsets.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(int64_t idx, resolveIndex(op, indexAt(indices, int64_t(i)), dataDims[axis], axis));
    int64_t offset = 0;
    for (size_t d = 0; d < indexDims.size(); ++d) offset += (d == axis ? idx : position[d]) * dataStrides[d];
    offsets[i] = offset;
    for (size_t d = indexDims.size(); d-- > 0;) {
      if (++position[d] < indexDims[d]) break;
      position[d] = 0;
    }
  }
  return offsets;
}

/// Element offsets of the slices that the index rows [..., K] of `indices`
/// address in `dataDims`, after `batchDims` leading batch dims (each batch
/// addresses its own block of data).
Expected<std::vector<int64_t>> sliceOffsets(OpKind op, const ConstTensorRef& indices, const Dims& dataDims,
                                            size_t batchDims) {
  const Dims& indexDims = indices.type.dims;
  const size_t rowLength = size_t(indexDims.back());
  const Dims dataStrides = stridesOf(dataDims);
  const int64_t batches = product(indexDims, 0, batchDims);
  const int64_t rowsPerBatch = product(indexDims, batchDims, indexDims.size() - 1);
  const int64_t batchStride = product(dataDims, batchDims);
  std::vector<int64_t> offsets;
  offsets.reserve(size_t(batches * rowsPerBatch));
  for (int64_t batch = 0; batch < batches; ++batch)
    for (int64_t row = 0; row < rowsPerBatch; ++row) {
      const int64_t first = (batch * rowsPerBatch + row) * int64_t(rowLength);
      int64_t offset = batch * batchStride;
      for (size_t k = 0; k < rowLength; ++k) {
        const size_t axis = batchDims + k;
        EMBER_ASSIGN_OR_RETURN(int64_t idx,
                               resolveIndex(op, indexAt(indices, first + int64_t(k)), dataDims[axis], axis));
        offset += idx * dataStrides[axis];
      }
      offsets.push_back(offset);
    }
  return offsets;
}

template <typename T>
T combine(ScatterElementsReduction reduction, T current, T update) {
  switch (reduction) {
    case ScatterElementsReduction::Add:
      return current + update;
    case ScatterElementsReduction::Mul:
      return current * update;
    case ScatterElementsReduction::Max:
      return current < update ? update : current;
    case ScatterElementsReduction::Min:
      return update < current ? update : current;
    case ScatterElementsReduction::None:
      break;
  }
  return update;
}

/// out[offsets[i] + j] (op)= updates[i * slice + j] for every i and j < slice.
/// ScatterNDReduction is the same enum as ScatterElementsReduction.
Error scatter(OpKind op, ScatterElementsReduction reduction, const std::vector<int64_t>& offsets,
              int64_t slice, const ConstTensorRef& updates, const TensorRef& out) {
  if (reduction == ScatterElementsReduction::None) {
    const size_t size = elemSize(out.type.kind);
    const auto* src = static_cast<const std::byte*>(updates.data);
    auto* dst = static_cast<std::byte*>(out.data);
    for (size_t i = 0; i < offsets.size(); ++i)
      std::memcpy(dst + offsets[i] * int64_t(size), src + int64_t(i) * slice * int64_t(size),
                  size_t(slice) * size);
    return Error::success();
  }
  bool done = visitNumeric(out.type.kind, [&]<typename T>() {
    const T* src = updates.as<T>();
    T* dst = out.as<T>();
    for (size_t i = 0; i < offsets.size(); ++i)
      for (int64_t j = 0; j < slice; ++j) {
        T& target = dst[offsets[i] + j];
        target = combine<T>(reduction, target, src[int64_t(i) * slice + j]);
      }
  });
  if (!done)
    return makeError(opName(op), ": no reference kernel for reduction '", toString(reduction), "' on ",
                     out.type.str());
  return Error::success();
}

Error gatherSlices(const std::vector<int64_t>& offsets, int64_t slice, const ConstTensorRef& data,
                   const TensorRef& out) {
  const size_t size = elemSize(out.type.kind);
  const auto* src = static_cast<const std::byte*>(data.data);
  auto* dst = static_cast<std::byte*>(out.data);
  for (size_t i = 0; i < offsets.size(); ++i)
    std::memcpy(dst + int64_t(i) * slice * int64_t(size), src + offsets[i] * int64_t(size),
                size_t(slice) * size);
  return Error::success();
}

}  // namespace

Error runGatherScatter(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  const ConstTensorRef& data = in[0];
  const ConstTensorRef& indices = in[1];
  const Dims& dataDims = data.type.dims;
  switch (kind) {
    case OpKind::GatherElements: {
      const size_t axis = normalizeAxis(GatherElementsAttrs::from(attrs).axis, dataDims.size());
      EMBER_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, elementOffsets(kind, indices, dataDims, axis));
      return gatherSlices(offsets, 1, data, out[0]);
    }
    case OpKind::ScatterElements: {
      const ScatterElementsAttrs a = ScatterElementsAttrs::from(attrs);
      const size_t axis = normalizeAxis(a.axis, dataDims.size());
      EMBER_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, elementOffsets(kind, indices, dataDims, axis));
      copyInput(data, out[0]);
      return scatter(kind, a.reduction, offsets, 1, in[2], out[0]);
    }
    case OpKind::GatherND: {
      const size_t batchDims = size_t(GatherNDAttrs::from(attrs).batchDims);
      EMBER_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, sliceOffsets(kind, indices, dataDims, batchDims));
      const int64_t slice = product(dataDims, batchDims + size_t(indices.type.dims.back()));
      return gatherSlices(offsets, slice, data, out[0]);
    }
    case OpKind::ScatterND: {
      EMBER_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, sliceOffsets(kind, indices, dataDims, 0));
      const int64_t slice = product(dataDims, size_t(indices.type.dims.back()));
      copyInput(data, out[0]);
      return scatter(kind, ScatterNDAttrs::from(attrs).reduction, offsets, slice, in[2], out[0]);
    }
    default:
      return makeError(opName(kind), ": not a gather/scatter kernel");
  }
}

}  // namespace ember::kernels
