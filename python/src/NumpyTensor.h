// numpy arrays <-> ember::Tensor for the Python binding (docs/python.md,
// "Element types").
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "ember/Error.h"
#include "ember/Tensor.h"

namespace ember::python {

/// The numpy dtype of an element kind: f32 float32, f16 float16, bf16 uint16
/// (raw bits; numpy has no bfloat16), i8/u8/i32 quantized as their raw
/// integers, i32 int32, i64 int64, bool bool.
pybind11::dtype dtypeOf(ElemKind kind);

/// Copies `array` into a tensor of `expected` (kind and dims). float64 data
/// for an f32, f16 or bf16 input is rounded to it (narrowFloat64), as `ember
/// run` reads f64 .npy files; any other dtype or shape mismatch is an error
/// naming `name`.
Expected<Tensor> tensorFromArray(const pybind11::array& array, const Type& expected, const std::string& name);

/// A tensor whose kind is chosen from the array's dtype (calibration data,
/// simulator inputs): float32, float64, float16, int8, uint8, int32, int64, bool.
Expected<Tensor> tensorFromArrayAnyKind(const pybind11::array& array, const std::string& name);

/// Moves `tensor` into a numpy array that owns it: no copy.
pybind11::array arrayFromTensor(Tensor tensor);

}  // namespace ember::python
