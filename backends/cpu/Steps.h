// The cpu backend's run-time steps: each kernel call the generated code makes,
// with its compile-time descriptor (shapes, strides, region addresses), and the
// trampolines the generated code calls. See docs/backends/cpu.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CpuKernels.h"
#include "Jit.h"
#include "KernelConv.h"
#include "KernelInt8.h"
#include "KernelWinograd.h"
#include "ThreadPool.h"
#include "ember/Attributes.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Type.h"

namespace ember::cpu {

/// EMBER_CPU_PROFILE=1: time every kernel step and print a table when the
/// program is destroyed.
extern const bool kProfile;

template <typename T = float>
T* at(uint8_t** regions, const Address& a) {
  return reinterpret_cast<T*>(regions[a.region] + a.offset);
}

struct RunContext {
  ThreadPool* pool = nullptr;
  GemmArch arch;
  Error error;  ///< first error of a reference-kernel step
};

/// A kernel call with its compile-time descriptor.
class Step {
 public:
  virtual ~Step() = default;
  virtual void run(uint8_t** regions, RunContext& context) const = 0;
  std::string label;  ///< "Conv 'name'", for EMBER_CPU_PROFILE
  mutable double seconds = 0;
  mutable int64_t calls = 0;
};

// ---- Steps -------------------------------------------------------------------------

struct EpilogueAddrs {
  std::optional<Address> bias, residual;
  Activation activation = Activation::None;
  float lo = 0, hi = 0;
  Epilogue resolve(uint8_t** regions, int64_t biasOffset, int64_t residualOffset) const {
    Epilogue ep;
    if (bias) ep.bias = at(regions, *bias) + biasOffset;
    if (residual) ep.residual = at(regions, *residual) + residualOffset;
    ep.activation = activation;
    ep.lo = lo;
    ep.hi = hi;
    return ep;
  }
};

/// Conv (any group) and MatMul with a constant rhs, as packed GEMMs.
class GemmStep final : public Step {
 public:
  GemmCall shape;  ///< m, n, k, a (without data), ldc
  Address a, c, packedB;
  int64_t groups = 1, groupInChannels = 0, groupOutChannels = 0;
  size_t packedGroupFloats = 0;
  EpilogueAddrs epilogue;

  void run(uint8_t** regions, RunContext& context) const override {
    for (int64_t g = 0; g < groups; ++g) {
      GemmCall call = shape;
      call.a.data = at(regions, a);
      call.a.cOffset = g * groupInChannels;
      if (!call.a.conv) call.a.data += g * groupInChannels;
      call.packedB = at(regions, packedB) + g * packedGroupFloats;
      call.c = at(regions, c) + g * groupOutChannels;
      call.epilogue = epilogue.resolve(regions, g * groupOutChannels, g * groupOutChannels);
      gemm(context.arch, call, *context.pool);
    }
  }
};

/// MatMul whose rhs is computed at run time: packs each batch's rhs, then GEMM.
class MatMulStep final : public Step {
 public:
  Address lhs, rhs, out;
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> lhsBatchOffsets, rhsBatchOffsets;  ///< matrices, per output batch
  EpilogueAddrs epilogue;

  void run(uint8_t** regions, RunContext& context) const override {
    thread_local std::vector<float> packed;
    packed.resize(packedBSize(context.arch, k, n));
    for (size_t batch = 0; batch < lhsBatchOffsets.size(); ++batch) {
      packB(context.arch, at(regions, rhs) + rhsBatchOffsets[batch] * k * n, n, false, k, n, packed.data());
      GemmCall call;
      call.m = m;
      call.n = n;
      call.k = k;
      call.a.data = at(regions, lhs) + lhsBatchOffsets[batch] * m * k;
      call.a.lda = k;
      call.packedB = packed.data();
      call.c = at(regions, out) + int64_t(batch) * m * n;
      call.ldc = n;
      call.epilogue = epilogue.resolve(regions, 0, int64_t(batch) * m * n);
      gemm(context.arch, call, *context.pool);
    }
  }
};

/// Group-1 Conv with a constant filter as a direct (indirect-GEMM) convolution
/// over the packed filter panels (KernelConv.h).
class DirectConvStep final : public Step {
 public:
  DirectConvCall shape;
  Address input, output, packedB;
  EpilogueAddrs epilogue;
  void run(uint8_t** regions, RunContext& context) const override {
    DirectConvCall call = shape;
    call.input = at(regions, input);
    call.packedB = at(regions, packedB);
    call.output = at(regions, output);
    call.epilogue = epilogue.resolve(regions, 0, 0);
    directConv(context.arch, call, *context.pool);
  }
};

/// Group-1 3x3 stride-1 Conv with a constant filter as Winograd F(2x2, 3x3)
/// over the transformed, packed filter (KernelWinograd.h).
class WinogradConvStep final : public Step {
 public:
  WinogradConvCall shape;
  Address input, output, packedFilter;
  EpilogueAddrs epilogue;
  void run(uint8_t** regions, RunContext& context) const override {
    WinogradConvCall call = shape;
    call.input = at(regions, input);
    call.packedFilter = at(regions, packedFilter);
    call.output = at(regions, output);
    call.epilogue = epilogue.resolve(regions, 0, 0);
    winogradConv(context.arch, call, *context.pool);
  }
};

class DepthwiseStep final : public Step {
 public:
  DepthwiseCall shape;
  Address input, filter, output;
  EpilogueAddrs epilogue;
  void run(uint8_t** regions, RunContext& context) const override {
    DepthwiseCall call = shape;
    call.input = at(regions, input);
    call.filter = at(regions, filter);
    call.output = at(regions, output);
    call.epilogue = epilogue.resolve(regions, 0, 0);
    depthwiseConv(call, *context.pool, context.arch.avx512);
  }
};

class PoolStep final : public Step {
 public:
  PoolCall shape;
  Address input, output;
  void run(uint8_t** regions, RunContext& context) const override {
    PoolCall call = shape;
    call.input = at(regions, input);
    call.output = at(regions, output);
    pool2d(call, *context.pool);
  }
};

class ReduceStep final : public Step {
 public:
  Address input, output;
  int64_t outer = 0, reduce = 0, inner = 0;
  ReduceKind kind = ReduceKind::Sum;
  void run(uint8_t** regions, RunContext& context) const override {
    reduce3(at(regions, input), at(regions, output), outer, reduce, inner, kind, *context.pool);
  }
};

class TransposeStep final : public Step {
 public:
  Address input, output;
  size_t elemSize = 4;
  std::vector<int64_t> dims, perm;
  void run(uint8_t** regions, RunContext& context) const override {
    transpose(at<uint8_t>(regions, input), at<uint8_t>(regions, output), elemSize, dims, perm, *context.pool);
  }
};

/// QuantizedConv (group 1, constant filter, bias and scales): the int8 GEMM
/// with its requantizing epilogue (KernelInt8.h); `weights` is the packed block.
class Int8ConvStep final : public Step {
 public:
  Int8ConvCall shape;
  Address input, output, weights;
  Address residual;  ///< of the fused QuantizedAdd, when shape.hasResidual
  void run(uint8_t** regions, RunContext& context) const override {
    Int8ConvCall call = shape;
    call.input = at<uint8_t>(regions, input);
    call.output = at<uint8_t>(regions, output);
    call.weights = at<uint8_t>(regions, weights);
    if (call.hasResidual) call.residual = at<uint8_t>(regions, residual);
    int8Conv(call, *context.pool);
  }
};

/// QuantizedConv with group == C == O (depthwise), constant weights.
class Int8DepthwiseStep final : public Step {
 public:
  Int8DepthwiseCall shape;
  Address input, output, weights;
  void run(uint8_t** regions, RunContext& context) const override {
    Int8DepthwiseCall call = shape;
    call.input = at<uint8_t>(regions, input);
    call.output = at<uint8_t>(regions, output);
    call.weights = at<uint8_t>(regions, weights);
    int8Depthwise(call, *context.pool);
  }
};

/// MaxPool on 8-bit codes or QuantizedAvgPool (KernelInt8Pool.cpp).
class Int8PoolStep final : public Step {
 public:
  Int8PoolCall shape;
  Address input, output;
  void run(uint8_t** regions, RunContext& context) const override {
    Int8PoolCall call = shape;
    call.input = at<uint8_t>(regions, input);
    call.output = at<uint8_t>(regions, output);
    int8Pool(call, *context.pool);
  }
};

/// Quantize f32 -> 8-bit codes (KernelInt8Quantize.cpp).
class Int8QuantizeStep final : public Step {
 public:
  Int8QuantizeCall shape;
  Address input, output;
  void run(uint8_t** regions, RunContext& context) const override {
    Int8QuantizeCall call = shape;
    call.input = at<float>(regions, input);
    call.output = at<uint8_t>(regions, output);
    int8Quantize(call, *context.pool);
  }
};

/// QuantizedAdd of two same-shape 8-bit tensors: the output code of every
/// pair of input bytes is quant::addQuantized's, tabulated at compile time
/// (table[a * 256 + b]), so a run is one lookup per element.
class Int8AddStep final : public Step {
 public:
  Address lhs, rhs, output;
  int64_t count = 0;
  Int8AddCall shape;           ///< zero points, multipliers, range (the arithmetic, for AVX-512)
  std::vector<uint8_t> table;  ///< 65536 entries (for the other ISAs)
  void run(uint8_t** regions, RunContext& context) const override;
};

/// Any other primitive: the reference kernel.
class ReferenceStep final : public Step {
 public:
  OpKind kind;
  std::string name;
  Attributes attrs;
  std::vector<std::pair<Type, Address>> ins, outs;
  void run(uint8_t** regions, RunContext& context) const override;
};

/// What the generated code calls: a kernel step (timed with EMBER_CPU_PROFILE),
/// an elementwise loop body over chunks of [0, extent) on the context's pool,
/// and the libm functions LLVM would otherwise call by name. The JIT bakes
/// their addresses in; the AOT runtime wraps them in C functions.
void runStep(const Step* step, uint8_t** regions, void* context);
void runParallel(void* context, void (*body)(int64_t, int64_t, uint8_t**), int64_t extent, int64_t inner,
                 uint8_t** regions);
float tanhF(float x);
float erfF(float x);
float sinF(float x);
float cosF(float x);
float expF(float x);
float logF(float x);
float powF(float x, float y);

/// The host functions the generated code calls (kernel trampoline, parallel
/// loop, libm wrappers), as the JIT bakes their addresses in.
JitRuntime hostRuntime();

}  // namespace ember::cpu
