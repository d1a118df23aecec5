// Issue 3's table: activation arena against its lower bound, the effect of
// the IR optimizer, copies removed, and compile time, per model.
//
// Usage: ir_memory_bench MODEL.onnx...   (prints a Markdown table)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/BuiltinBackends.h"
#include "ember/IR.h"
#include "ember/Importer.h"
#include "ember/Runtime.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Instructions that only move data: Copy, Concat and Slice.
int64_t countDataMovement(const IRFunction& ir) {
  return std::count_if(ir.instructions().begin(), ir.instructions().end(), [](const Instruction& i) {
    return i.kind == OpKind::Copy || i.kind == OpKind::Concat || i.kind == OpKind::Slice;
  });
}

/// Sum of every activation's size: one slot per buffer, no reuse.
uint64_t naiveArena(const IRFunction& ir) {
  uint64_t total = 0;
  for (ValueId v = 0; v < ir.numValues(); ++v)
    if (ir.value(v).kind == ValueKind::Activation) total += (ir.value(v).type.sizeInBytes() + 63) / 64 * 64;
  return total;
}

struct Measured {
  std::unique_ptr<IRFunction> ir;
  double compileSeconds = 0, importSeconds = 0;
};

Expected<Measured> compileOnce(const std::string& path, bool optimizeIRFlag) {
  Measured m;
  auto t0 = Clock::now();
  Module module;
  auto fn = importOnnxFile(path, module);
  if (!fn) return fn.error();
  auto t1 = Clock::now();
  auto backend = BackendRegistry::global().create("reference");
  if (!backend) return backend.error();
  CompileOptions options;
  options.optimizeIR = optimizeIRFlag;
  auto model = compileFunction(**fn, backend.take(), options);
  if (!model) return model.error();
  auto t2 = Clock::now();
  m.importSeconds = seconds(t0, t1);
  m.compileSeconds = seconds(t1, t2);
  m.ir = std::move(model->ir);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::printf("usage: ir_memory_bench MODEL.onnx...\n");
    return argc < 2 ? 2 : 0;
  }
  registerBuiltinBackends();
  std::printf("| model | lower bound (KiB) | arena (KiB) | arena / bound | arena no IR opt (KiB) | opt / no-opt | naive one-slot (KiB) | copy/concat/slice removed | compile s (median of 5) | with ONNX load s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 1; i < argc; ++i) {
    std::string path = argv[i];
    std::vector<double> compileTimes, totalTimes;
    Measured opt;
    for (int rep = 0; rep < 5; ++rep) {
      auto m = compileOnce(path, true);
      if (!m) {
        std::fprintf(stderr, "%s\n", m.error().message().c_str());
        return 1;
      }
      compileTimes.push_back(m->compileSeconds);
      totalTimes.push_back(m->compileSeconds + m->importSeconds);
      opt = std::move(*m);
    }
    auto noOpt = compileOnce(path, false);
    if (!noOpt) {
      std::fprintf(stderr, "%s\n", noOpt.error().message().c_str());
      return 1;
    }
    const MemoryPlan& p = opt.ir->plan();
    const MemoryPlan& q = noOpt->ir->plan();
    std::string name = path.substr(path.find_last_of('/') + 1);
    std::printf("| %s | %.1f | %.1f | %.4f | %.1f | %.3f | %.1f | %lld | %.3f | %.3f |\n", name.c_str(),
                p.activationLowerBoundBytes / 1024.0, p.activationBytes / 1024.0,
                double(p.activationBytes) / double(std::max<uint64_t>(p.activationLowerBoundBytes, 1)),
                q.activationBytes / 1024.0, double(p.activationBytes) / double(std::max<uint64_t>(q.activationBytes, 1)),
                naiveArena(*noOpt->ir) / 1024.0, (long long)(countDataMovement(*noOpt->ir) - countDataMovement(*opt.ir)), median(compileTimes),
                median(totalTimes));
  }
  return 0;
}
