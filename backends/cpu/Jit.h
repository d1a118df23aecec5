// The LLVM side of the cpu backend: turns the backend's program (a list of
// JitOps) into one native function with ORC LLJIT. No LLVM type appears here,
// so the rest of the backend does not include LLVM headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"

namespace ember::cpu {

/// Memory the JIT'd code addresses: regions[i] + constant byte offset.
enum RegionIndex : int { kConstants = 0, kIO = 1, kActivations = 2, kPacked = 3, kNumRegions = 4 };

/// An address baked into the code: a region and a constant byte offset.
struct Address {
  int region = 0;
  uint64_t offset = 0;
};

/// An f32 elementwise loop over collapsed output dims; each operand has its
/// own element strides (0 on broadcast axes). Emitted directly as LLVM IR.
struct ElementwiseLoop {
  OpKind kind = OpKind::Add;
  float lo = 0, hi = 0;  ///< Clip bounds
  std::vector<int64_t> dims;
  Address out;
  std::vector<Address> ins;
  std::vector<std::vector<int64_t>> inStrides;  ///< per input, per dim
};

/// One step of the generated function, in program order.
struct JitOp {
  enum class Kind { Kernel, Elementwise, Copy } kind = Kind::Kernel;
  const void* step = nullptr;  ///< Kernel: passed to the kernel trampoline (JIT)
  std::vector<uint8_t> blob;   ///< Kernel: the encoded step (AOT; StepCodec.h)
  ElementwiseLoop loop;        ///< Elementwise
  Address dst, src;            ///< Copy
  uint64_t bytes = 0;          ///< Copy
};

/// Host functions the generated code calls (their addresses are baked in).
struct JitRuntime {
  /// void runStep(const void* step, uint8_t** regions, void* context)
  void* runStep = nullptr;
  /// void parallel(void* context, void (*body)(int64_t begin, int64_t end, uint8_t** regions),
  ///               int64_t extent, int64_t innerElements, uint8_t** regions)
  void* parallel = nullptr;
  /// float fn(float) / float fn(float, float) for math LLVM would call libm for.
  void *tanhF = nullptr, *erfF = nullptr, *sinF = nullptr, *cosF = nullptr, *expF = nullptr, *logF = nullptr,
       *powF = nullptr;
};

/// An AOT object: the same program as the JIT's, with each kernel step's
/// descriptor and the weights in read-only data, calling the AOT runtime
/// library (aot_runtime/) by name. Its one entry point is
///   int <symbol>_run(const void* const inputs[], void* const outputs[], void* scratch)
/// with the I/O and activation regions in `scratch` (docs/backends/cpu.md, "AOT").
struct AotPort {
  std::string name;
  Type type;
  uint64_t offset = 0;  ///< in the I/O region
};
struct AotModule {
  std::string symbol;
  std::vector<JitOp> ops;  ///< kernel ops carry `blob`
  const uint8_t* constants = nullptr;
  uint64_t constantBytes = 0;
  const uint8_t* packed = nullptr;
  uint64_t packedBytes = 0;
  uint64_t ioBytes = 0, activationBytes = 0;
  std::vector<AotPort> inputs, outputs;
  int32_t format = 0, mr = 0, nr = 0, avx512 = 0;  ///< checked by ember_aot_begin
};
/// Writes `module` as a relocatable ELF object for the host CPU.
Error writeAotObject(const AotModule& module, const std::string& path);

/// The native code of one program: entry(regions, context).
class JitCode {
 public:
  using Entry = void (*)(uint8_t** regions, void* context);
  virtual ~JitCode() = default;
  virtual Entry entry() const = 0;
  /// The optimised LLVM IR, for debugging (EMBER_CPU_DUMP_IR=1 prints it).
  virtual const std::string& irText() const = 0;
  /// Whether the object came from the on-disk cache (no LLVM compile ran).
  virtual bool fromDiskCache() const = 0;
};

/// Whether the JIT can emit `kind` as an f32 elementwise loop: whether the
/// table of elementwise emitters in Jit.cpp has an entry for it.
bool jitSupportsElementwise(OpKind kind);

/// Compiles `ops` to native code. With a non-empty `cacheKey` (the program's
/// IR text; the ops, the target and the Ember build are added) the object is
/// read from and written to the on-disk cache (JitDiskCache.h).
Expected<std::unique_ptr<JitCode>> jitCompile(const std::string& name, const std::vector<JitOp>& ops,
                                              const JitRuntime& runtime, const std::string& cacheKey = "");

}  // namespace ember::cpu
