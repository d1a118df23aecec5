// Reading and writing .npy files (NumPy format 1.0-3.0, little-endian, C order).
#pragma once

#include <string>

#include "ember/Error.h"
#include "ember/Tensor.h"

namespace ember {

/// Reads f32, f64, f16, i64, i32, i8, u8 and bool arrays.
/// Fortran order, big-endian and object arrays are errors naming the file.
Expected<Tensor> readNpy(const std::string& path);
Expected<Tensor> parseNpy(const std::string& bytes, const std::string& origin);
/// NumPy's default float64 data where `kind` (f32, f16 or bf16) is expected:
/// the values rounded to `kind` as numpy's astype does. Any other tensor is
/// returned unchanged, so callers still check the kind.
Tensor narrowFloat64(Tensor tensor, ElemKind kind);
/// Writes f32, f64, f16, i64, i32, bool, and quantized kinds as their raw integers.
Error writeNpy(const std::string& path, const Tensor& tensor);
std::string serializeNpy(const Tensor& tensor);

}  // namespace ember
