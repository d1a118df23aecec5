// Calibration inputs for the transformer model tests (shared by the SQNR test
// and the NPU bit-exactness test, so both calibrate on the same samples).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "ember/Tensor.h"

namespace ember::test {

/// 8 calibration inputs like `input`, from a fixed seed: standard normal
/// values, or token ids from 0 to the largest id of `input`.
inline std::vector<Tensor> calibrationInputs(const Tensor& input) {
  std::vector<Tensor> samples;
  std::mt19937 rng(2024);
  const int64_t n = input.type().numElements();
  for (int s = 0; s < 8; ++s) {
    Tensor t(input.type());
    if (input.type().kind == ElemKind::I64) {
      const int64_t top = *std::max_element(input.as<int64_t>(), input.as<int64_t>() + n);
      std::uniform_int_distribution<int64_t> id(0, top);
      for (int64_t i = 0; i < n; ++i) t.as<int64_t>()[i] = id(rng);
    } else {
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = normal(rng);
    }
    samples.push_back(std::move(t));
  }
  return samples;
}

}  // namespace ember::test
