// The AOT runtime library: what an AOT object (ember compile --backend cpu -o)
// calls, with C names and no LLVM. It wraps the same steps, kernels and thread
// pool the JIT calls (backends/cpu: ember_cpu_kernels), so both run one copy.
//
// A run: ember_aot_begin (checks the object's step format and micro-kernel
// against this library and this CPU, takes the process-wide run lock),
// ember_aot_run_step per kernel step (decoded once, then cached by blob
// address), ember_aot_parallel per elementwise loop, ember_aot_end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../StepCodec.h"

#define EMBER_AOT_EXPORT extern "C" __attribute__((visibility("default")))

namespace ember::cpu {
namespace {

struct AotState {
  std::mutex runLock;  ///< one run at a time: the pool and the step cache are shared
  std::unique_ptr<ThreadPool> pool;
  std::map<const uint8_t*, std::unique_ptr<Step>> steps;
  RunContext context;
  std::string lastError;
};

AotState& state() {
  static AotState s;
  return s;
}

}  // namespace
}  // namespace ember::cpu

using namespace ember::cpu;

EMBER_AOT_EXPORT void* ember_aot_begin(int32_t format, int32_t mr, int32_t nr, int32_t avx512) {
  AotState& s = state();
  s.runLock.lock();
  s.lastError.clear();
  std::string refused;
  if (format != kStepFormat)
    refused = "the object's step format " + std::to_string(format) + " does not match this runtime's " +
              std::to_string(kStepFormat) + " (compile the object with the same Ember SDK)";
  else if (!hostHasAvx2Fma())
    refused = "this CPU lacks AVX2 and FMA";
  else if (avx512 && !hostHasAvx512())
    refused = "the object was compiled for AVX-512 and this CPU lacks it";
  if (!refused.empty()) {
    s.lastError = "ember AOT: " + refused;
    s.runLock.unlock();
    return nullptr;
  }
  if (!s.pool) s.pool = std::make_unique<ThreadPool>(threadsFromEnvironment());
  s.context = RunContext{};
  s.context.pool = s.pool.get();
  s.context.arch.mr = mr;
  s.context.arch.nr = nr;
  s.context.arch.avx512 = avx512 != 0;
  return &s.context;
}

EMBER_AOT_EXPORT int32_t ember_aot_end(void* context) {
  AotState& s = state();
  RunContext& run = *static_cast<RunContext*>(context);
  int32_t status = 0;
  if (run.error) {
    s.lastError = "ember AOT: " + run.error.message();
    status = 1;
  }
  run.error = ember::Error::success();
  s.runLock.unlock();
  return status;
}

EMBER_AOT_EXPORT const char* ember_aot_last_error(void) { return state().lastError.c_str(); }

/// blob: the step's byte count (8 bytes, little-endian), then the step (StepCodec.h).
EMBER_AOT_EXPORT void ember_aot_run_step(const uint8_t* blob, uint8_t** regions, void* context) {
  AotState& s = state();
  RunContext& run = *static_cast<RunContext*>(context);
  if (run.error) return;
  auto it = s.steps.find(blob);
  if (it == s.steps.end()) {
    uint64_t size = 0;
    std::memcpy(&size, blob, 8);
    ember::Expected<std::unique_ptr<Step>> step = decodeStep(blob + 8, size);
    if (!step) {
      run.error = step.error();
      return;
    }
    it = s.steps.emplace(blob, step.take()).first;
  }
  runStep(it->second.get(), regions, context);
}

EMBER_AOT_EXPORT void ember_aot_parallel(void* context, void (*body)(int64_t, int64_t, uint8_t**),
                                         int64_t extent, int64_t inner, uint8_t** regions) {
  runParallel(context, body, extent, inner, regions);
}

EMBER_AOT_EXPORT float ember_aot_tanhf(float x) { return tanhF(x); }
EMBER_AOT_EXPORT float ember_aot_erff(float x) { return erfF(x); }
EMBER_AOT_EXPORT float ember_aot_sinf(float x) { return sinF(x); }
EMBER_AOT_EXPORT float ember_aot_cosf(float x) { return cosF(x); }
EMBER_AOT_EXPORT float ember_aot_expf(float x) { return expF(x); }
EMBER_AOT_EXPORT float ember_aot_logf(float x) { return logF(x); }
EMBER_AOT_EXPORT float ember_aot_powf(float x, float y) { return powF(x, y); }
