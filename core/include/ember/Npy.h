// Reading and writing .npy files (NumPy format 1.0-3.0, little-endian, C order).
#pragma once

#include <string>

#include "ember/Error.h"
#include "ember/Tensor.h"

namespace ember {

/// Reads f32, f64 (converted to f32), i64, i32, i8, u8 and bool arrays.
/// Fortran order, big-endian and object arrays are errors naming the file.
Expected<Tensor> readNpy(const std::string& path);
Expected<Tensor> parseNpy(const std::string& bytes, const std::string& origin);
/// Writes f32, i64, i32, bool, and quantized kinds as their raw integers.
Error writeNpy(const std::string& path, const Tensor& tensor);
std::string serializeNpy(const Tensor& tensor);

}  // namespace ember
