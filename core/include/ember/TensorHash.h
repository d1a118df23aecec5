// Tensor::hash of many tensors at once. The hash is byte-serial FNV-1a (its
// value keys quantization profiles, so it stays as it is); one tensor's chain
// cannot run faster than a multiply per byte, but the chains of different
// tensors are independent, so hashing several side by side keeps the
// multiplier busy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ember/Tensor.h"

namespace ember {

/// The hashes of `tensors`, element i equal to tensors[i]->hash().
std::vector<uint64_t> hashTensors(std::span<const Tensor* const> tensors);

}  // namespace ember
