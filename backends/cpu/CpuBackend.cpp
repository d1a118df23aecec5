// The cpu backend: compiles planned instruction IR into one JIT'd function
// (Jit.cpp) that calls the hand-written AVX2/FMA kernels (Kernel*.cpp) with
// compile-time descriptors and runs elementwise loops generated for the exact
// shapes. See docs/backends/cpu.md.
//
// compile():
//   1. fuse: Conv/MatMul followed by Add (residual or bias) and Relu/Clip
//      becomes one GEMM with an epilogue, when the intermediate buffers have
//      no other reader and the final output does not overlap the inputs;
//   2. build a step per instruction (GEMM, depthwise, pool, reduce,
//      transpose, elementwise loop, copy, or the reference kernel for the rest)
//      and a plan to pack the constant weights into a fourth region;
//   3. JIT the program, cached by the IR's hash.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "CpuKernels.h"
#include "Jit.h"
#include "ThreadPool.h"
#include "ember/Backend.h"
#include "ember/Kernels.h"
#include "ember/Plugin.h"

namespace ember::cpu {
namespace {

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

/// EMBER_CPU_PROFILE=1: time every kernel step and print a table when the
/// program is destroyed.
const bool kProfile = std::getenv("EMBER_CPU_PROFILE") != nullptr;

template <typename T = float>
T* at(uint8_t** regions, const Address& a) {
  return reinterpret_cast<T*>(regions[a.region] + a.offset);
}

extern "C" void ember_cpu_run_step(const void* step, uint8_t** regions, void* context) {
  const Step* s = static_cast<const Step*>(step);
  if (!kProfile) {
    s->run(regions, *static_cast<RunContext*>(context));
    return;
  }
  auto start = std::chrono::steady_clock::now();
  s->run(regions, *static_cast<RunContext*>(context));
  s->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++s->calls;
}

extern "C" void ember_cpu_parallel(void* context, void (*body)(int64_t, int64_t, uint8_t**), int64_t extent,
                                   int64_t inner, uint8_t** regions) {
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
    depthwiseConv(call, *context.pool);
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

/// Any other primitive: the reference kernel.
class ReferenceStep final : public Step {
 public:
  OpKind kind;
  std::string name;
  Attributes attrs;
  std::vector<std::pair<Type, Address>> ins, outs;
  void run(uint8_t** regions, RunContext& context) const override {
    if (context.error) return;
    std::vector<ConstTensorRef> inRefs;
    std::vector<TensorRef> outRefs;
    for (const auto& [type, a] : ins) inRefs.emplace_back(type, at<uint8_t>(regions, a));
    for (const auto& [type, a] : outs) outRefs.push_back(TensorRef{type, at<uint8_t>(regions, a)});
    if (Error e = runKernel(kind, attrs, inRefs, outRefs))
      context.error = e.withContext("cpu: " + std::string(opName(kind)) + " '" + name + "'");
  }
};

// ---- Weight packing (per compiled function, from its own constants) -------------

struct PackEntry {
  enum class Kind { GemmB, Depthwise } kind = Kind::GemmB;
  Address src;       ///< in the constants region
  uint64_t dst = 0;  ///< byte offset in the packed region
  int64_t k = 0, n = 0, groups = 1;
  bool transposed = true;
  size_t groupFloats = 0;
  int64_t taps = 0, channels = 0;  ///< Depthwise
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
  std::unique_ptr<JitCode> code;
  GemmArch arch;
  size_t kernelSteps = 0, jitLoops = 0, referenceSteps = 0, fusedInstructions = 0;
};

// ---- Compilation -----------------------------------------------------------------------

struct Range {
  int region;
  uint64_t begin, end;
  bool overlaps(const Range& o) const { return region == o.region && begin < o.end && o.begin < end; }
  bool operator==(const Range& o) const = default;
};

class Compiler {
 public:
  Compiler(const IRFunction& ir, GemmArch arch) : ir_(ir), arch_(arch) {}

  Expected<std::shared_ptr<Program>> run() {
    program_ = std::make_shared<Program>();
    program_->arch = arch_;
    countReaders();
    const auto& instrs = ir_.instructions();
    std::vector<bool> consumed(instrs.size(), false);
    for (size_t i = 0; i < instrs.size(); ++i) {
      if (consumed[i]) continue;
      const Instruction& inst = instrs[i];
      if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) continue;
      if (inst.kind == OpKind::Copy) {
        JitOp op;
        op.kind = JitOp::Kind::Copy;
        op.dst = address(inst.operands[0].value);
        op.src = address(inst.operands[1].value);
        op.bytes = type(inst.operands[0].value).sizeInBytes();
        ops_.push_back(op);
        continue;
      }
      label_ =
          std::string(opName(inst.kind)) + " " + type(inst.operands[0].value).str() + " '" + inst.name + "'";
      if (opInfo(inst.kind).category != OpCategory::Primitive)
        return makeError("cpu: unexpected non-primitive instruction '", inst.name, "' (", opName(inst.kind),
                         ")");
      if (inst.kind == OpKind::Conv || inst.kind == OpKind::MatMul) {
        Fusion fusion = planFusion(i);
        if (lowerLinear(inst, fusion)) {
          for (size_t j : fusion.consumed) consumed[j] = true;
          program_->fusedInstructions += fusion.consumed.size();
          continue;
        }
      }
      if (lowerOther(inst)) continue;
      EMBER_RETURN_IF_ERROR(addReference(inst));
    }
    return program_;
  }

  std::vector<JitOp>& ops() { return ops_; }

 private:
  struct Fusion {
    ValueId output;  ///< where the fused result is written
    EpilogueAddrs epilogue;
    std::optional<ValueId> residual, bias;
    std::vector<size_t> consumed;
  };

  const Type& type(ValueId v) const { return ir_.value(v).type; }

  Address address(ValueId v) const {
    auto [root, offset] = ir_.resolve(v);
    const IRValue& value = ir_.value(root);
    Address a;
    switch (ir_.regionOf(root)) {
      case Region::Constants:
        a.region = kConstants;
        break;
      case Region::IO:
        a.region = kIO;
        break;
      case Region::Activations:
        a.region = kActivations;
        break;
    }
    a.offset = value.offset + offset;
    return a;
  }

  Range range(ValueId v) const {
    Address a = address(v);
    return Range{a.region, a.offset, a.offset + type(v).sizeInBytes()};
  }

  void countReaders() {
    const auto& instrs = ir_.instructions();
    for (size_t i = 0; i < instrs.size(); ++i) {
      if (instrs[i].kind == OpKind::DeallocActivation || instrs[i].kind == OpKind::AllocActivation) continue;
      for (const Operand& op : instrs[i].operands) {
        ValueId root = ir_.resolve(op.value).first;
        if (op.access != Access::Out) readers_[root].push_back(i);
        if (op.access != Access::In) writers_[root].push_back(i);
      }
    }
  }

  /// The next instruction after `i` that is not an alloc/dealloc.
  std::optional<size_t> nextReal(size_t i) const {
    const auto& instrs = ir_.instructions();
    for (size_t j = i + 1; j < instrs.size(); ++j)
      if (instrs[j].kind != OpKind::AllocActivation && instrs[j].kind != OpKind::DeallocActivation) return j;
    return std::nullopt;
  }

  /// Whether the value `v` written by instruction `producer` is an activation
  /// that only instruction `consumer` reads before the buffer is written again.
  bool privateIntermediate(ValueId v, size_t producer, size_t consumer) const {
    ValueId root = ir_.resolve(v).first;
    if (ir_.value(root).kind != ValueKind::Activation || type(v) != type(root)) return false;
    size_t nextWrite = SIZE_MAX;
    if (auto w = writers_.find(root); w != writers_.end())
      for (size_t i : w->second)
        if (i > producer) {
          nextWrite = i;
          break;
        }
    auto r = readers_.find(root);
    if (r == readers_.end()) return false;
    bool seen = false;
    for (size_t i : r->second) {
      if (i <= producer || i > nextWrite) continue;
      if (i != consumer) return false;
      seen = true;
    }
    return seen;
  }

  /// Follows Conv/MatMul at `i` with Add (bias or same-shape residual) and then Relu/Clip.
  Fusion planFusion(size_t i) {
    const auto& instrs = ir_.instructions();
    const Instruction& lin = instrs[i];
    Fusion f;
    f.output = lin.operands[0].value;
    if (std::getenv("EMBER_CPU_NO_FUSION")) return f;
    std::vector<Range> inputs;
    for (size_t k = 1; k < lin.operands.size(); ++k) inputs.push_back(range(lin.operands[k].value));
    const Type outType = type(f.output);
    if (outType.kind != ElemKind::F32) return f;
    auto isF32Same = [&](ValueId v) { return type(v).kind == ElemKind::F32 && type(v).dims == outType.dims; };
    auto safeTarget = [&](ValueId target) {
      Range r = range(target);
      for (const Range& in : inputs)
        if (r.overlaps(in)) return false;
      if (f.residual) {
        Range res = range(*f.residual);
        if (res.overlaps(r) && !(res == r)) return false;
      }
      return true;
    };
    size_t cursor = i;
    bool addDone = false;
    for (int stage = 0; stage < 2; ++stage) {
      std::optional<size_t> j = nextReal(cursor);
      if (!j) break;
      const Instruction& next = instrs[*j];
      ValueId current = f.output;
      if (!privateIntermediate(current, cursor, *j)) break;
      if (next.kind == OpKind::Add && !addDone) {
        ValueId lhs = next.operands[1].value, rhs = next.operands[2].value;
        std::optional<ValueId> other;
        if (lhs == current || range(lhs) == range(current))
          other = rhs;
        else if (rhs == current || range(rhs) == range(current))
          other = lhs;
        if (!other || *other == current || range(*other) == range(current)) break;
        ValueId result = next.operands[0].value;
        if (!isF32Same(result)) break;
        const Type& ot = type(*other);
        if (isF32Same(*other)) {
          f.residual = *other;
        } else if (lin.kind == OpKind::MatMul && ot.kind == ElemKind::F32 && !ot.dims.empty() &&
                   ot.dims.back() == outType.dims.back() && ot.numElements() == ot.dims.back() &&
                   ot.rank() <= outType.rank()) {
          f.bias = *other;
        } else {
          break;
        }
        if (!safeTarget(result)) {
          f.residual.reset();
          f.bias.reset();
          break;
        }
        f.output = result;
        f.consumed.push_back(*j);
        addDone = true;
        cursor = *j;
        continue;
      }
      if ((next.kind == OpKind::Relu || next.kind == OpKind::Clip) && next.operands[1].value == current) {
        ValueId result = next.operands[0].value;
        if (!isF32Same(result) || !safeTarget(result)) break;
        f.epilogue.activation = next.kind == OpKind::Relu ? Activation::Relu : Activation::Clip;
        if (next.kind == OpKind::Clip) {
          f.epilogue.lo = float(next.attrs.getFloat("min"));
          f.epilogue.hi = float(next.attrs.getFloat("max"));
        }
        f.output = result;
        f.consumed.push_back(*j);
        break;
      }
      break;
    }
    if (f.residual) f.epilogue.residual = address(*f.residual);
    if (f.bias) f.epilogue.bias = address(*f.bias);
    return f;
  }

  /// The constant behind `v` as a whole tensor, if it is one.
  std::optional<Address> constantAddress(ValueId v) const {
    auto [root, offset] = ir_.resolve(v);
    if (ir_.value(root).kind != ValueKind::Constant) return std::nullopt;
    return address(v);
  }

  uint64_t reservePacked(size_t floats) {
    uint64_t offset = program_->packedBytes;
    program_->packedBytes += (floats * 4 + 63) / 64 * 64;
    return offset;
  }

  bool lowerLinear(const Instruction& inst, Fusion& fusion) {
    const ValueId out = inst.operands[0].value;
    for (const Operand& op : inst.operands)
      if (type(op.value).kind != ElemKind::F32) return false;
    if (inst.kind == OpKind::Conv) return lowerConv(inst, fusion);

    const Type& lt = type(inst.operands[1].value);
    const Type& rt = type(inst.operands[2].value);
    const Type& ot = type(out);
    const int64_t m = lt.dims[lt.rank() - 2], k = lt.dims.back(), n = rt.dims.back();
    int64_t rhsBatch = 1;
    for (size_t d = 0; d + 2 < rt.rank(); ++d) rhsBatch *= rt.dims[d];
    std::optional<Address> constRhs = constantAddress(inst.operands[2].value);
    int64_t outBatch = ot.numElements() / std::max<int64_t>(1, m * n);
    if (constRhs && rhsBatch == 1 && lt.numElements() == outBatch * m * k) {
      // Constant weights: pack once; fold the lhs batch into M.
      auto step = std::make_unique<GemmStep>();
      step->shape.m = outBatch * m;
      step->shape.n = n;
      step->shape.k = k;
      step->shape.a.lda = k;
      step->shape.ldc = n;
      step->a = address(inst.operands[1].value);
      step->c = address(fusion.output);
      size_t floats = packedBSize(arch_, k, n);
      step->packedB = Address{kPacked, reservePacked(floats)};
      step->packedGroupFloats = floats;
      step->epilogue = fusion.epilogue;
      PackEntry pack;
      pack.kind = PackEntry::Kind::GemmB;
      pack.src = *constRhs;
      pack.dst = step->packedB.offset;
      pack.k = k;
      pack.n = n;
      pack.transposed = false;
      pack.groupFloats = floats;
      program_->packing.push_back(pack);
      addStep(std::move(step));
      return true;
    }
    // Batched or computed rhs.
    auto step = std::make_unique<MatMulStep>();
    step->lhs = address(inst.operands[1].value);
    step->rhs = address(inst.operands[2].value);
    step->out = address(fusion.output);
    step->m = m;
    step->k = k;
    step->n = n;
    Dims outBatchDims(ot.dims.begin(), ot.dims.end() - 2);
    Dims lb(lt.dims.begin(), lt.dims.end() - 2), rb(rt.dims.begin(), rt.dims.end() - 2);
    auto strides = [&](const Dims& in) {
      Dims s(outBatchDims.size(), 0);
      int64_t stride = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        size_t ia = in.size() - 1 - i, oa = outBatchDims.size() - 1 - i;
        s[oa] = (in[ia] == 1 && outBatchDims[oa] != 1) ? 0 : stride;
        stride *= in[ia];
      }
      return s;
    };
    Dims ls = strides(lb), rs = strides(rb);
    std::vector<int64_t> index(outBatchDims.size(), 0);
    for (int64_t b = 0; b < outBatch; ++b) {
      int64_t lo = 0, ro = 0;
      for (size_t d = 0; d < index.size(); ++d) {
        lo += index[d] * ls[d];
        ro += index[d] * rs[d];
      }
      step->lhsBatchOffsets.push_back(lo);
      step->rhsBatchOffsets.push_back(ro);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < outBatchDims[d]) break;
        index[d] = 0;
      }
    }
    step->epilogue = fusion.epilogue;
    addStep(std::move(step));
    return true;
  }

  bool lowerConv(const Instruction& inst, Fusion& fusion) {
    std::optional<Address> filter = constantAddress(inst.operands[2].value);
    if (!filter) return false;
    const Dims& in = type(inst.operands[1].value).dims;
    const Dims& fd = type(inst.operands[2].value).dims;
    const Dims& od = type(inst.operands[0].value).dims;
    const auto& strides = inst.attrs.getInts("strides");
    const auto& pads = inst.attrs.getInts("pads");
    const auto& dil = inst.attrs.getInts("dilations");
    const int64_t group = inst.attrs.getInt("group");
    const int64_t c = in[3], o = od[3], cg = c / group, og = o / group;
    EpilogueAddrs epilogue = fusion.epilogue;
    epilogue.bias = address(inst.operands[3].value);

    if (group == c && group == o && cg == 1) {
      auto step = std::make_unique<DepthwiseStep>();
      step->shape =
          DepthwiseCall{nullptr, nullptr, nullptr,    in[0],      in[1],   in[2],   c,      od[1],  od[2],
                        fd[1],   fd[2],   strides[0], strides[1], pads[0], pads[1], dil[0], dil[1], {}};
      step->input = address(inst.operands[1].value);
      step->output = address(fusion.output);
      step->epilogue = epilogue;
      PackEntry pack;
      pack.kind = PackEntry::Kind::Depthwise;
      pack.src = *filter;
      pack.taps = fd[1] * fd[2];
      pack.channels = c;
      pack.dst = reservePacked(size_t(pack.taps * c));
      step->filter = Address{kPacked, pack.dst};
      program_->packing.push_back(pack);
      addStep(std::move(step));
      return true;
    }

    auto step = std::make_unique<GemmStep>();
    const int64_t k = fd[1] * fd[2] * cg;
    step->shape.m = od[0] * od[1] * od[2];
    step->shape.n = og;
    step->shape.k = k;
    step->shape.ldc = o;
    const bool pointwise = fd[1] == 1 && fd[2] == 1 && strides[0] == 1 && strides[1] == 1 && pads[0] == 0 &&
                           pads[1] == 0 && in[1] == od[1] && in[2] == od[2];
    if (pointwise) {
      step->shape.a.lda = c;
    } else {
      ASource& a = step->shape.a;
      a.conv = true;
      a.h = in[1];
      a.w = in[2];
      a.c = c;
      a.oh = od[1];
      a.ow = od[2];
      a.kh = fd[1];
      a.kw = fd[2];
      a.cg = cg;
      a.sh = strides[0];
      a.sw = strides[1];
      a.pt = pads[0];
      a.pl = pads[1];
      a.dh = dil[0];
      a.dw = dil[1];
    }
    step->a = address(inst.operands[1].value);
    step->c = address(fusion.output);
    step->groups = group;
    step->groupInChannels = cg;
    step->groupOutChannels = og;
    size_t groupFloats = packedBSize(arch_, k, og);
    step->packedGroupFloats = groupFloats;
    step->packedB = Address{kPacked, reservePacked(groupFloats * size_t(group))};
    step->epilogue = epilogue;
    PackEntry pack;
    pack.kind = PackEntry::Kind::GemmB;
    pack.src = *filter;
    pack.dst = step->packedB.offset;
    pack.k = k;
    pack.n = og;
    pack.groups = group;
    pack.transposed = true;
    pack.groupFloats = groupFloats;
    program_->packing.push_back(pack);
    addStep(std::move(step));
    return true;
  }

  /// Collapses adjacent output dims where every operand's strides stay contiguous.
  static void collapse(std::vector<int64_t>& dims, std::vector<std::vector<int64_t>>& strides) {
    std::vector<int64_t> d2;
    std::vector<std::vector<int64_t>> s2(strides.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1 && dims.size() > 1) continue;
      bool merge = !d2.empty();
      for (size_t k = 0; k < strides.size() && merge; ++k) merge = s2[k].back() == strides[k][d] * dims[d];
      if (merge) {
        d2.back() *= dims[d];
        for (size_t k = 0; k < strides.size(); ++k) s2[k].back() = strides[k][d];
      } else {
        d2.push_back(dims[d]);
        for (size_t k = 0; k < strides.size(); ++k) s2[k].push_back(strides[k][d]);
      }
    }
    if (d2.empty()) {
      d2.push_back(1);
      for (auto& s : s2) s.push_back(0);
    }
    dims = d2;
    strides = s2;
  }

  bool lowerOther(const Instruction& inst) {
    const ValueId out = inst.operands[0].value;
    const Type& ot = type(out);
    std::vector<ValueId> ins;
    for (const Operand& op : inst.operands)
      if (op.access == Access::In) ins.push_back(op.value);

    if (jitSupportsElementwise(inst.kind)) {
      if (ot.kind != ElemKind::F32) return false;
      for (ValueId v : ins)
        if (type(v).kind != ElemKind::F32) return false;
      if (ot.numElements() == 0) return true;
      JitOp op;
      op.kind = JitOp::Kind::Elementwise;
      ElementwiseLoop& loop = op.loop;
      loop.kind = inst.kind;
      if (inst.kind == OpKind::Clip) {
        loop.lo = float(inst.attrs.getFloat("min"));
        loop.hi = float(inst.attrs.getFloat("max"));
      }
      // Strides of every operand over the output dims (output first, contiguous).
      std::vector<std::vector<int64_t>> strides;
      strides.push_back(ot.strides());
      for (ValueId v : ins) {
        const Dims& d = type(v).dims;
        std::vector<int64_t> s(ot.rank(), 0);
        int64_t stride = 1;
        for (size_t i = 0; i < d.size(); ++i) {
          size_t ia = d.size() - 1 - i, oa = ot.rank() - 1 - i;
          s[oa] = (d[ia] == 1 && ot.dims[oa] != 1) ? 0 : stride;
          stride *= d[ia];
        }
        strides.push_back(s);
      }
      loop.dims = ot.dims;
      if (loop.dims.empty()) {
        loop.dims.push_back(1);
        for (auto& s : strides) s.push_back(0);
      }
      collapse(loop.dims, strides);
      // The emitter recomputes the output offset from row-major dims.
      loop.out = address(out);
      for (size_t k = 0; k < ins.size(); ++k) {
        loop.ins.push_back(address(ins[k]));
        loop.inStrides.push_back(strides[k + 1]);
      }
      ops_.push_back(op);
      ++program_->jitLoops;
      return true;
    }

    switch (inst.kind) {
      case OpKind::MaxPool:
      case OpKind::AvgPool: {
        if (ot.kind != ElemKind::F32) return false;
        const Dims& in = type(ins[0]).dims;
        const auto& kernel = inst.attrs.getInts("kernel");
        const auto& strides = inst.attrs.getInts("strides");
        const auto& pads = inst.attrs.getInts("pads");
        std::vector<int64_t> dil =
            inst.kind == OpKind::MaxPool ? inst.attrs.getInts("dilations") : std::vector<int64_t>{1, 1};
        auto step = std::make_unique<PoolStep>();
        step->shape = PoolCall{nullptr,
                               nullptr,
                               in[0],
                               in[1],
                               in[2],
                               in[3],
                               ot.dims[1],
                               ot.dims[2],
                               kernel[0],
                               kernel[1],
                               strides[0],
                               strides[1],
                               pads[0],
                               pads[1],
                               pads[2],
                               pads[3],
                               dil[0],
                               dil[1],
                               inst.kind == OpKind::MaxPool,
                               inst.kind == OpKind::AvgPool && inst.attrs.getInt("count_include_pad") != 0};
        step->input = address(ins[0]);
        step->output = address(out);
        addStep(std::move(step));
        return true;
      }
      case OpKind::ReduceSum:
      case OpKind::ReduceMax:
      case OpKind::ReduceMin:
      case OpKind::ReduceProd: {
        if (ot.kind != ElemKind::F32) return false;
        const Dims& d = type(ins[0]).dims;
        const auto& axes = inst.attrs.getInts("axes");
        for (size_t i = 1; i < axes.size(); ++i)
          if (axes[i] != axes[i - 1] + 1) return false;  // not one contiguous block
        auto step = std::make_unique<ReduceStep>();
        step->outer = step->reduce = step->inner = 1;
        for (size_t i = 0; i < d.size(); ++i) {
          int64_t a = int64_t(i);
          (a < axes.front() ? step->outer : a > axes.back() ? step->inner : step->reduce) *= d[i];
        }
        step->kind = inst.kind == OpKind::ReduceSum   ? ReduceKind::Sum
                     : inst.kind == OpKind::ReduceMax ? ReduceKind::Max
                     : inst.kind == OpKind::ReduceMin ? ReduceKind::Min
                                                      : ReduceKind::Prod;
        step->input = address(ins[0]);
        step->output = address(out);
        addStep(std::move(step));
        return true;
      }
      case OpKind::Transpose: {
        const Type& it = type(ins[0]);
        auto step = std::make_unique<TransposeStep>();
        step->input = address(ins[0]);
        step->output = address(out);
        step->elemSize = elemSize(it.kind);
        step->dims = it.dims;
        step->perm = inst.attrs.getInts("perm");
        if (range(ins[0]).overlaps(range(out))) return false;
        addStep(std::move(step));
        return true;
      }
      default:
        return false;
    }
  }

  Error addReference(const Instruction& inst) {
    std::vector<Type> inTypes, outTypes;
    auto step = std::make_unique<ReferenceStep>();
    step->kind = inst.kind;
    step->name = inst.name;
    step->attrs = inst.attrs;
    for (const Operand& op : inst.operands) {
      const Type& t = type(op.value);
      (op.access == Access::In ? inTypes : outTypes).push_back(t);
      (op.access == Access::In ? step->ins : step->outs).push_back({t, address(op.value)});
    }
    if (!kernelSupports(inst.kind, inTypes, outTypes))
      return makeError("cpu: no kernel for instruction '", inst.name, "' (", opName(inst.kind), ")");
    ++program_->referenceSteps;
    step->label = label_;
    program_->steps.push_back(std::move(step));
    JitOp op;
    op.step = program_->steps.back().get();
    ops_.push_back(op);
    return Error::success();
  }

  void addStep(std::unique_ptr<Step> step) {
    ++program_->kernelSteps;
    step->label = label_;
    program_->steps.push_back(std::move(step));
    JitOp op;
    op.step = program_->steps.back().get();
    ops_.push_back(op);
  }

  const IRFunction& ir_;
  GemmArch arch_;
  std::shared_ptr<Program> program_;
  std::vector<JitOp> ops_;
  std::map<ValueId, std::vector<size_t>> readers_, writers_;
  std::string label_;
};

// ---- The JIT cache -------------------------------------------------------------------

uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

class ProgramCache {
 public:
  static ProgramCache& global() {
    static ProgramCache cache;
    return cache;
  }
  std::shared_ptr<Program> find(uint64_t key, const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.first == text ? it->second.second : nullptr;
  }
  void insert(uint64_t key, std::string text, std::shared_ptr<Program> program) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() > 64) entries_.clear();  // a bound, not an LRU: programs are small
    entries_[key] = {std::move(text), std::move(program)};
  }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::pair<std::string, std::shared_ptr<Program>>> entries_;
};

// ---- The compiled function -------------------------------------------------------------

class Arena {
 public:
  explicit Arena(uint64_t bytes)
      : data_(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 64) / 64 * 64))) {
    std::memset(data_, 0, (bytes + 64) / 64 * 64);
  }
  ~Arena() { std::free(data_); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  uint8_t* data() { return data_; }

 private:
  uint8_t* data_;
};

class CpuFunction final : public CompiledFunction {
 public:
  CpuFunction(const IRFunction& ir, std::shared_ptr<Program> program, int threads)
      : program_(std::move(program)),
        pool_(threads),
        constants_(ir.plan().constantBytes),
        io_(ir.plan().ioBytes),
        activations_(ir.plan().activationBytes),
        packed_(program_->packedBytes) {
    for (ValueId v = 0; v < ir.numValues(); ++v) {
      const IRValue& value = ir.value(v);
      if (value.kind == ValueKind::Constant)
        std::memcpy(constants_.data() + value.offset, value.payload->data(), value.type.sizeInBytes());
      if (value.kind == ValueKind::Input) inputs_.push_back({value.name, value.type, value.offset});
      if (value.kind == ValueKind::Output) outputs_.push_back({value.name, value.type, value.offset});
    }
    regions_[kConstants] = constants_.data();
    regions_[kIO] = io_.data();
    regions_[kActivations] = activations_.data();
    regions_[kPacked] = packed_.data();
    pack();
  }

  Error execute(ExecutionContext& context) override {
    for (const Port& in : inputs_) {
      const Tensor* t = context.input(in.name);
      if (!t) return makeError("missing model input '", in.name, "'");
      if (t->type().kind != in.type.kind || t->type().dims != in.type.dims)
        return makeError("input '", in.name, "': expected ", in.type.str(), ", got ", t->type().str());
      std::memcpy(io_.data() + in.offset, t->data(), in.type.sizeInBytes());
    }
    RunContext run;
    run.pool = &pool_;
    run.arch = program_->arch;
    program_->code->entry()(regions_, &run);
    if (run.error) return run.error;
    for (const Port& out : outputs_) {
      Tensor t(out.type);
      std::memcpy(t.data(), io_.data() + out.offset, out.type.sizeInBytes());
      context.setOutput(out.name, std::move(t));
    }
    return Error::success();
  }

 private:
  struct Port {
    std::string name;
    Type type;
    uint64_t offset;
  };

  void pack() {
    for (const PackEntry& p : program_->packing) {
      const float* src = reinterpret_cast<const float*>(regions_[p.src.region] + p.src.offset);
      float* dst = reinterpret_cast<float*>(packed_.data() + p.dst);
      if (p.kind == PackEntry::Kind::Depthwise) {
        // [C, KH, KW, 1] -> [KH, KW, C]
        for (int64_t ch = 0; ch < p.channels; ++ch)
          for (int64_t t = 0; t < p.taps; ++t) dst[t * p.channels + ch] = src[ch * p.taps + t];
        continue;
      }
      for (int64_t g = 0; g < p.groups; ++g) {
        // Conv filters are B^T ([N, K] rows); MatMul weights are B ([K, N]).
        const float* b = src + g * p.n * p.k;
        packB(program_->arch, b, p.transposed ? p.k : p.n, p.transposed, p.k, p.n, dst + g * p.groupFloats);
      }
    }
  }

  std::shared_ptr<Program> program_;
  ThreadPool pool_;
  Arena constants_, io_, activations_, packed_;
  uint8_t* regions_[kNumRegions];
  std::vector<Port> inputs_, outputs_;
};

int threadsFromEnvironment() {
  for (const char* name : {"EMBER_CPU_THREADS", "EMBER_THREADS"})
    if (const char* v = std::getenv(name)) {
      int n = std::atoi(v);
      if (n >= 1 && n <= 1024) return n;
    }
  return 1;
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

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
      Compiler compiler(ir, arch);
      EMBER_ASSIGN_OR_RETURN(program, compiler.run());
      EMBER_ASSIGN_OR_RETURN(program->code, jitCompile(ir.name(), compiler.ops(), runtime()));
      if (std::getenv("EMBER_CPU_DUMP_IR")) std::fprintf(stderr, "%s\n", program->code->irText().c_str());
      if (std::getenv("EMBER_CPU_VERBOSE"))
        std::fprintf(stderr, "cpu: %zu kernel steps, %zu JIT loops, %zu reference steps, %zu fused\n",
                     program->kernelSteps, program->jitLoops, program->referenceSteps,
                     program->fusedInstructions);
      ProgramCache::global().insert(key, std::move(text), program);
    }
    return std::unique_ptr<CompiledFunction>(new CpuFunction(ir, program, threads_));
  }

 private:
  static JitRuntime runtime() {
    JitRuntime r;
    r.runStep = reinterpret_cast<void*>(&ember_cpu_run_step);
    r.parallel = reinterpret_cast<void*>(&ember_cpu_parallel);
    r.tanhF = reinterpret_cast<void*>(&tanhF);
    r.erfF = reinterpret_cast<void*>(&erfF);
    r.sinF = reinterpret_cast<void*>(&sinF);
    r.cosF = reinterpret_cast<void*>(&cosF);
    r.expF = reinterpret_cast<void*>(&expF);
    r.logF = reinterpret_cast<void*>(&logF);
    r.powF = reinterpret_cast<void*>(&powF);
    return r;
  }

  int threads_ = threadsFromEnvironment();
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
