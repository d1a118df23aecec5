// The trampolines the generated code calls and the reference-kernel step.
#include "Steps.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "ember/Kernels.h"

namespace ember::cpu {

const bool kProfile = std::getenv("EMBER_CPU_PROFILE") != nullptr;

namespace {

/// EMBER_CPU_PROFILE=cpu times the caller thread's CPU time instead of the
/// wall clock: on a shared machine a 1-thread profile is then not inflated by
/// time slicing (with more threads it misses the workers' share).
const bool kProfileCpuTime = kProfile && std::strcmp(std::getenv("EMBER_CPU_PROFILE"), "cpu") == 0;

double profileClock() {
  if (kProfileCpuTime) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void Int8AddStep::run(uint8_t** regions, RunContext& context) const {
  Int8AddCall call = shape;
  call.a = at<uint8_t>(regions, lhs);
  call.b = at<uint8_t>(regions, rhs);
  call.out = at<uint8_t>(regions, output);
  call.count = count;
  int8Add(call, table.data(), *context.pool);
}

void ReferenceStep::run(uint8_t** regions, RunContext& context) const {
  if (context.error) return;
  std::vector<ConstTensorRef> inRefs;
  std::vector<TensorRef> outRefs;
  inRefs.reserve(ins.size());
  outRefs.reserve(outs.size());
  for (const auto& [type, a] : ins) inRefs.emplace_back(type, at<uint8_t>(regions, a));
  for (const auto& [type, a] : outs) outRefs.push_back(TensorRef{type, at<uint8_t>(regions, a)});
  if (Error e = runKernel(kind, attrs, inRefs, outRefs))
    context.error = e.withContext("cpu: " + std::string(opName(kind)) + " '" + name + "'");
}

void runStep(const Step* s, uint8_t** regions, void* context) {
  if (!kProfile) {
    s->run(regions, *static_cast<RunContext*>(context));
    return;
  }
  const double start = profileClock();
  s->run(regions, *static_cast<RunContext*>(context));
  s->seconds += profileClock() - start;
  ++s->calls;
}

void runParallel(void* context, void (*body)(int64_t, int64_t, uint8_t**), int64_t extent, int64_t inner,
                 uint8_t** regions) {
  ThreadPool& pool = *static_cast<RunContext*>(context)->pool;
  // Chunks of at least ~16K elements, a few per thread for balance.
  int64_t chunks = std::min<int64_t>(extent, std::max<int64_t>(1, extent * inner / 16384));
  chunks = std::min<int64_t>(chunks, 4 * pool.size());
  if (chunks <= 1 || pool.size() == 1) {
    body(0, extent, regions);
    return;
  }
  pool.parallelFor(chunks,
                   [&](int64_t i, int) { body(extent * i / chunks, extent * (i + 1) / chunks, regions); });
}

float tanhF(float x) { return std::tanh(x); }
float erfF(float x) { return std::erf(x); }
float sinF(float x) { return std::sin(x); }
float cosF(float x) { return std::cos(x); }
float expF(float x) { return std::exp(x); }
float logF(float x) { return std::log(x); }
float powF(float x, float y) { return std::pow(x, y); }

namespace {
// The trampoline's ABI: the step as an untyped pointer.
void runStepUntyped(const void* step, uint8_t** regions, void* context) {
  runStep(static_cast<const Step*>(step), regions, context);
}
}  // namespace

JitRuntime hostRuntime() {
  JitRuntime r;
  r.runStep = reinterpret_cast<void*>(&runStepUntyped);
  r.parallel = reinterpret_cast<void*>(&runParallel);
  r.tanhF = reinterpret_cast<void*>(&tanhF);
  r.erfF = reinterpret_cast<void*>(&erfF);
  r.sinF = reinterpret_cast<void*>(&sinF);
  r.cosF = reinterpret_cast<void*>(&cosF);
  r.expF = reinterpret_cast<void*>(&expF);
  r.logF = reinterpret_cast<void*>(&logF);
  r.powF = reinterpret_cast<void*>(&powF);
  return r;
}

}  // namespace ember::cpu
