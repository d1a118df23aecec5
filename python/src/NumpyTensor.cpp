#include "NumpyTensor.h"

#include <cstring>
#include <map>
#include <optional>

#include "ember/Npy.h"

namespace py = pybind11;

namespace ember::python {
namespace {

/// The element kind numpy's dtype maps to, before the model's type is known.
std::optional<ElemKind> kindOfDtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const size_t size = size_t(dtype.itemsize());
  if (kind == 'f' && size == 8) return ElemKind::F64;
  if (kind == 'f' && size == 4) return ElemKind::F32;
  if (kind == 'f' && size == 2) return ElemKind::F16;
  if (kind == 'i' && size == 1) return ElemKind::Int8Q;
  if (kind == 'u' && size == 1) return ElemKind::UInt8Q;
  if (kind == 'i' && size == 4) return ElemKind::I32;
  if (kind == 'i' && size == 8) return ElemKind::I64;
  if (kind == 'b' && size == 1) return ElemKind::Bool;
  return std::nullopt;
}

std::string dtypeName(const py::dtype& dtype) {
  return py::str(static_cast<py::handle>(dtype)).cast<std::string>();
}

Dims dimsOf(const py::array& array) {
  Dims dims;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) dims.push_back(int64_t(array.shape(i)));
  return dims;
}

/// A C-contiguous array of `dtype` holding `array`'s values (no copy when it already is one).
py::array contiguous(const py::array& array, const py::dtype& dtype) {
  return py::array::ensure(array.attr("astype")(dtype, py::arg("copy") = false),
                           py::array::c_style | py::array::forcecast);
}

}  // namespace

py::dtype dtypeOf(ElemKind kind) {
  // By name, so that a kind added to Type.h maps once named here (f64 included).
  static const std::map<std::string, std::string, std::less<>> kDtypes = {
      {"f32", "float32"}, {"f16", "float16"}, {"bf16", "uint16"}, {"f64", "float64"}, {"i8q", "int8"},
      {"u8q", "uint8"},   {"i32q", "int32"},  {"i32", "int32"},   {"i64", "int64"},   {"bool", "bool"}};
  auto it = kDtypes.find(elemKindName(kind));
  return py::dtype(it == kDtypes.end() ? std::string("uint8") : it->second);
}

Expected<Tensor> tensorFromArray(const py::array& array, const Type& expected, const std::string& name) {
  const py::dtype want = dtypeOf(expected.kind);
  const py::dtype got = array.dtype();
  // numpy's default float64 for a float input: rounded as astype would (narrowFloat64, as the tool's .npy).
  const bool narrows =
      got.kind() == 'f' && got.itemsize() == 8 &&
      (expected.kind == ElemKind::F32 || expected.kind == ElemKind::F16 || expected.kind == ElemKind::BF16);
  if (!got.is(want) && !got.equal(want) && !narrows)
    return makeError("input '", name, "': expected ", expected.str(), " (numpy ", dtypeName(want), "), got ",
                     dtypeName(got), " ", dimsStr(dimsOf(array)));
  if (dimsOf(array) != expected.dims)
    return makeError("input '", name, "': expected ", expected.str(), ", got shape ", dimsStr(dimsOf(array)));
  if (narrows) {
    py::array data = contiguous(array, got);
    Tensor wide(Type(ElemKind::F64, expected.dims));
    if (wide.sizeInBytes() > 0) std::memcpy(wide.data(), data.data(), wide.sizeInBytes());
    return narrowFloat64(std::move(wide), expected.kind);
  }
  py::array data = contiguous(array, want);
  Tensor tensor(expected);
  if (tensor.sizeInBytes() > 0) std::memcpy(tensor.data(), data.data(), tensor.sizeInBytes());
  return tensor;
}

Expected<Tensor> tensorFromArrayAnyKind(const py::array& array, const std::string& name) {
  py::dtype dtype = array.dtype();
  std::optional<ElemKind> kind = kindOfDtype(dtype);
  if (!kind)
    return makeError("input '", name, "': unsupported numpy dtype ", dtypeName(dtype),
                     " (float32, float64, float16, int8, uint8, int32, int64 or bool)");
  Type type(*kind, dimsOf(array));
  if (Error e = checkDims(type.dims)) return e.withContext("input '" + name + "'");
  return tensorFromArray(array, type, name);
}

py::array arrayFromTensor(Tensor tensor) {
  auto* owned = new Tensor(std::move(tensor));
  py::capsule owner(owned, [](void* p) { delete static_cast<Tensor*>(p); });
  const Type& type = owned->type();
  std::vector<py::ssize_t> shape(type.dims.begin(), type.dims.end());
  const py::ssize_t itemsize = py::ssize_t(elemSize(type.kind));
  std::vector<py::ssize_t> strides(shape.size(), itemsize);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<py::ssize_t>(shape[i], 1);
  // An empty tensor has no storage; numpy still wants a non-null pointer.
  static char emptyStorage[64];
  void* data = owned->sizeInBytes() ? owned->data() : emptyStorage;
  return py::array(dtypeOf(type.kind), shape, strides, data, owner);
}

}  // namespace ember::python
