// "fused": a test backend that keeps f32 Gemm and Softmax high-level
// (shouldLower() == false) and runs each as one kernel of its own; every
// other instruction runs on Ember's reference kernels.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ember/Backend.h"

namespace fused {

/// How many Gemm and Softmax instructions the fused kernels have run, across
/// every function of this process (the test checks the backend's own kernel
/// ran, not a lowered copy).
struct KernelCounts {
  std::atomic<uint64_t> gemm{0}, softmax{0};
};
KernelCounts& kernelCounts();

std::unique_ptr<ember::Backend> createFusedBackend();

}  // namespace fused
