// What compile() produces and the JIT cache shares between identical IRs: the
// steps, the weight-packing plan and the native code.
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "Steps.h"

namespace ember::cpu {

/// Weight packing (per compiled function, from its own constants).
struct PackEntry {
  enum class Kind { GemmB, Depthwise, Int8Conv, Int8Depthwise, Winograd } kind = Kind::GemmB;
  Address src;       ///< in the constants region
  uint64_t dst = 0;  ///< byte offset in the packed region
  int64_t k = 0, n = 0, groups = 1;  ///< Winograd: k input, n output channels
  bool transposed = true;
  size_t groupFloats = 0;
  int64_t taps = 0, channels = 0;  ///< Depthwise
  Address bias, scales;            ///< Int8Conv: bias i32 [n], filter scales f32 [n]
  float inScale = 1, outScale = 1;
  int32_t zu = 0;
};

/// What compile() produces and the JIT cache shares between identical IRs.
struct Program {
  ~Program() {
    if (!kProfile) return;
    double total = 0;
    for (const auto& step : steps) total += step->seconds;
    std::fprintf(stderr, "cpu profile: %.3f ms per run in kernel steps\n",
                 1e3 * total / std::max<int64_t>(1, steps.empty() ? 1 : steps[0]->calls));
    for (const auto& step : steps)
      if (step->calls)
        std::fprintf(stderr, "  %8.3f ms  %s\n", 1e3 * step->seconds / double(step->calls),
                     step->label.c_str());
  }
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<PackEntry> packing;
  uint64_t packedBytes = 0;
  std::vector<JitOp> ops;  ///< what the JIT compiled; the AOT object is emitted from the same list
  std::unique_ptr<JitCode> code;
  GemmArch arch;
  size_t kernelSteps = 0, jitLoops = 0, referenceSteps = 0, fusedInstructions = 0;
};

}  // namespace ember::cpu
