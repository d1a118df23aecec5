// The cpu backend: compiles planned instruction IR (Compiler.cpp) into one
// JIT'd function (Jit.cpp) that calls the hand-written AVX2/FMA kernels
// (Kernel*.cpp) through steps (Steps.h) and runs elementwise loops generated
// for the exact shapes; programs are cached by the IR's hash (ProgramCache.h).
// See docs/backends/cpu.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "Compiler.h"
#include "CpuFunction.h"
#include "KernelInt8.h"
#include "ProgramCache.h"
#include "ember/Backend.h"
#include "ember/Kernels.h"
#include "ember/Plugin.h"

namespace ember::cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  Error setOption(const std::string& key, const std::string& value) override {
    if (key != "header") return makeError("cpu backend: unknown option '", key, "' (known: header)");
    aotHeader_ = value;
    return Error::success();
  }
  std::vector<BackendOption> options() const override {
    return {
        {"header", "where `ember compile -o OBJ` writes the AOT bundle's C header (default: OBJ with .h)"}};
  }

  bool supports(const NodeInfo& info) const override {
    if (opInfo(info.kind).category != OpCategory::Primitive) return false;
    // f64 is a reference-backend kind: such nodes go to the fallback backend.
    auto isF64 = [](const Type& t) { return t.kind == ElemKind::F64; };
    if (std::ranges::any_of(info.inputTypes, isF64) || std::ranges::any_of(info.resultTypes, isF64))
      return false;
    // Every primitive the reference implements runs here: the hot f32 ones on
    // this backend's kernels, the rest on the reference kernels.
    return kernelSupports(info.kind, info.inputTypes, info.resultTypes);
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    if (!hostHasAvx2Fma()) return makeError("cpu backend: this CPU lacks AVX2 and FMA");
    const GemmArch arch = chooseGemmArch();
    std::string text = ir.str() + "\narch " + std::to_string(arch.mr) + "x" + std::to_string(arch.nr);
    const uint64_t key = fnv1a(text);
    std::shared_ptr<Program> program = ProgramCache::global().find(key, text);
    if (!program) {
      EMBER_ASSIGN_OR_RETURN(BuiltProgram built, buildProgram(ir, arch));
      program = built.program;
      program->ops = built.ops;
      const auto jitStart = std::chrono::steady_clock::now();
      EMBER_ASSIGN_OR_RETURN(program->code, jitCompile(ir.name(), built.ops, hostRuntime(), text));
      const double jitMs =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - jitStart).count();
      if (std::getenv("EMBER_CPU_DUMP_IR")) std::fprintf(stderr, "%s\n", program->code->irText().c_str());
      if (std::getenv("EMBER_CPU_VERBOSE"))
        std::fprintf(
            stderr,
            "cpu: %zu kernel steps, %zu JIT loops, %zu reference steps, %zu fused; f32 GEMM %dx%d %s, "
            "int8 %s; JIT %.1f ms (%s)\n",
            program->kernelSteps, program->jitLoops, program->referenceSteps, program->fusedInstructions,
            arch.mr, arch.nr, arch.avx512 ? "avx512" : "avx2+fma", int8KernelName(), jitMs,
            program->code->fromDiskCache() ? "disk cache hit" : "compiled");
      ProgramCache::global().insert(key, std::move(text), program);
    }
    return makeCpuFunction(ir, program, threads_, aotHeader_);
  }

 private:
  int threads_ = threadsFromEnvironment();
  std::string aotHeader_;
};

}  // namespace
}  // namespace ember::cpu

extern "C" const EmberBackendPlugin* ember_backend_plugin_cpu() {
  static const EmberBackendPlugin plugin{
      EMBER_PLUGIN_ABI_VERSION, "cpu",
      "LLVM ORC JIT of the instruction IR with AVX2/FMA kernels (f32 fast path)",
      []() -> ember::Backend* { return new ember::cpu::CpuBackend(); }};
  return &plugin;
}
