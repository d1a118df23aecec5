// The cpu backend's compiler (docs/backends/cpu.md):
//   1. fuse: Conv/MatMul followed by Add (residual or bias) and Relu/Clip
//      becomes one GEMM with an epilogue, when the intermediate buffers have
//      no other reader and the final output does not overlap the inputs;
//   2. build a step per instruction (GEMM, depthwise, pool, reduce,
//      transpose, elementwise loop, copy, or the reference kernel for the rest)
//      and a plan to pack the constant weights into a fourth region.
#include "Compiler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "ember/Kernels.h"
#include "ember/OpAttrs.h"
#include "ember/QuantMath.h"

namespace ember::cpu {
namespace {

struct Range {
  int region;
  uint64_t begin, end;
  bool overlaps(const Range& o) const { return region == o.region && begin < o.end && o.begin < end; }
  bool operator==(const Range& o) const = default;
};

/// The NHWC input and output sizes every window kernel's call shares.
template <class Call>
void fillSizes(Call& s, const Type& input, const Type& output) {
  s.n = input.dims[0];
  s.h = input.dims[1];
  s.w = input.dims[2];
  s.c = input.dims[3];
  s.oh = output.dims[1];
  s.ow = output.dims[2];
}

/// The sliding-window geometry every window kernel's call shares (the f32
/// direct conv; int8 conv, depthwise, pooling): NHWC input and output sizes, the window, strides, the
/// top/left pads and dilations.
template <class Call>
void fillWindow(Call& s, const Type& input, const Type& output, int64_t kh, int64_t kw,
                const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                const std::vector<int64_t>& dilations) {
  fillSizes(s, input, output);
  s.kh = kh;
  s.kw = kw;
  s.sh = strides[0];
  s.sw = strides[1];
  s.pt = pads[0];
  s.pl = pads[1];
  s.dh = dilations[0];
  s.dw = dilations[1];
}

/// The element strides of a row-major `in` read over the dims `out` it
/// broadcasts to (numpy rules: aligned at the last dim), 0 where it broadcasts.
Dims broadcastStridesOver(const Dims& out, const Dims& in) {
  Dims s(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t ia = in.size() - 1 - i, oa = out.size() - 1 - i;
    s[oa] = (in[ia] == 1 && out[oa] != 1) ? 0 : stride;
    stride *= in[ia];
  }
  return s;
}

bool is8BitCode(ElemKind kind) { return kind == ElemKind::Int8Q || kind == ElemKind::UInt8Q; }

/// The clamp of an 8-bit output: its kind's range narrowed by the fused
/// activation's clip_min/clip_max attributes (QuantizedConvAttrs,
/// QuantizedMatMulAttrs or QuantizedAddAttrs).
template <class ClippedAttrs>
quant::QuantRange outputClamp(const ClippedAttrs& attrs, const Type& output) {
  const quant::QuantRange full = output.kind == ElemKind::Int8Q ? quant::int8Range() : quant::uint8Range();
  return quant::activationRange(full, output.scale, output.offset, float(attrs.clipMin.value_or(-INFINITY)),
                                float(attrs.clipMax.value_or(INFINITY)));
}

/// The window attributes of a pool: MaxPool's, AvgPool's or QuantizedAvgPool's
/// (the averages have no dilations: 1).
struct PoolWindow {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool countIncludePad = false;
};

PoolWindow poolWindow(const Instruction& inst) {
  if (inst.kind == OpKind::MaxPool) {
    MaxPoolAttrs a = MaxPoolAttrs::from(inst.attrs);
    return {std::move(a.kernel), std::move(a.strides), std::move(a.pads), std::move(a.dilations), false};
  }
  if (inst.kind == OpKind::AvgPool) {
    AvgPoolAttrs a = AvgPoolAttrs::from(inst.attrs);
    return {std::move(a.kernel), std::move(a.strides), std::move(a.pads), {1, 1}, a.countIncludePad != 0};
  }
  QuantizedAvgPoolAttrs a = QuantizedAvgPoolAttrs::from(inst.attrs);
  return {std::move(a.kernel), std::move(a.strides), std::move(a.pads), {1, 1}, a.countIncludePad != 0};
}

template <class To, class From>
void copyWindow(To& d, const From& s) {
  d.n = s.n;
  d.h = s.h;
  d.w = s.w;
  d.c = s.c;
  d.oh = s.oh;
  d.ow = s.ow;
  d.kh = s.kh;
  d.kw = s.kw;
  d.sh = s.sh;
  d.sw = s.sw;
  d.pt = s.pt;
  d.pl = s.pl;
  d.dh = s.dh;
  d.dw = s.dw;
}

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
      label_ = labelOf(inst);
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
      if (inst.kind == OpKind::QuantizedConv) {
        const std::optional<size_t> add = planInt8ResidualAdd(i);
        if (add && lowerInt8Conv(inst, instrs[*add])) {
          consumed[*add] = true;
          ++program_->fusedInstructions;
          continue;
        }
      }
      if (inst.kind == OpKind::Transpose) {
        const std::optional<size_t> quantize = planQuantizeFirst(i);
        if (quantize && lowerQuantizeFirst(inst, instrs[*quantize])) {
          consumed[*quantize] = true;
          ++program_->fusedInstructions;
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

  /// The Conv/MatMul a fusion starts from: its kind, the ranges it reads and its output type.
  struct FusionRoot {
    OpKind kind;
    std::vector<Range> inputs;
    Type outType;
  };

  bool isF32Same(ValueId v, const FusionRoot& root) const {
    return type(v).kind == ElemKind::F32 && type(v).dims == root.outType.dims;
  }

  /// Whether the fused result may go to `target`: apart from the root's
  /// inputs, and apart from or exactly on the residual.
  bool safeTarget(const Fusion& f, const FusionRoot& root, ValueId target) const {
    Range r = range(target);
    for (const Range& in : root.inputs)
      if (r.overlaps(in)) return false;
    if (f.residual) {
      Range res = range(*f.residual);
      if (res.overlaps(r) && !(res == r)) return false;
    }
    return true;
  }

  /// Fuses the Add `next` of the current result and a same-shape residual (or,
  /// after a MatMul, a bias over the last dim).
  bool fuseAdd(Fusion& f, const FusionRoot& root, const Instruction& next) const {
    const ValueId current = f.output;
    ValueId lhs = next.operands[1].value, rhs = next.operands[2].value;
    std::optional<ValueId> other;
    if (lhs == current || range(lhs) == range(current))
      other = rhs;
    else if (rhs == current || range(rhs) == range(current))
      other = lhs;
    if (!other || *other == current || range(*other) == range(current)) return false;
    ValueId result = next.operands[0].value;
    if (!isF32Same(result, root)) return false;
    const Type& ot = type(*other);
    const Type& outType = root.outType;
    if (isF32Same(*other, root)) {
      f.residual = *other;
    } else if (root.kind == OpKind::MatMul && ot.kind == ElemKind::F32 && !ot.dims.empty() &&
               ot.dims.back() == outType.dims.back() && ot.numElements() == ot.dims.back() &&
               ot.rank() <= outType.rank()) {
      f.bias = *other;
    } else {
      return false;
    }
    if (!safeTarget(f, root, result)) {
      f.residual.reset();
      f.bias.reset();
      return false;
    }
    f.output = result;
    return true;
  }

  /// Fuses the Relu or Clip `next` of the current result.
  bool fuseActivation(Fusion& f, const FusionRoot& root, const Instruction& next) const {
    if ((next.kind != OpKind::Relu && next.kind != OpKind::Clip) || next.operands[1].value != f.output)
      return false;
    ValueId result = next.operands[0].value;
    if (!isF32Same(result, root) || !safeTarget(f, root, result)) return false;
    f.epilogue.activation = next.kind == OpKind::Relu ? Activation::Relu : Activation::Clip;
    if (next.kind == OpKind::Clip) {
      const ClipAttrs clip = ClipAttrs::from(next.attrs);
      f.epilogue.lo = float(clip.min);
      f.epilogue.hi = float(clip.max);
    }
    f.output = result;
    return true;
  }

  /// Follows Conv/MatMul at `i` with Add (bias or same-shape residual) and then Relu/Clip.
  Fusion planFusion(size_t i) {
    const auto& instrs = ir_.instructions();
    const Instruction& lin = instrs[i];
    Fusion f;
    f.output = lin.operands[0].value;
    if (std::getenv("EMBER_CPU_NO_FUSION")) return f;
    FusionRoot root{lin.kind, {}, type(f.output)};
    root.inputs.reserve(lin.operands.size() - 1);
    for (size_t k = 1; k < lin.operands.size(); ++k) root.inputs.push_back(range(lin.operands[k].value));
    if (root.outType.kind != ElemKind::F32) return f;
    size_t cursor = i;
    bool addDone = false;
    for (int stage = 0; stage < 2; ++stage) {
      std::optional<size_t> j = nextReal(cursor);
      if (!j || !privateIntermediate(f.output, cursor, *j)) break;
      const Instruction& next = instrs[*j];
      if (next.kind == OpKind::Add && !addDone) {
        if (!fuseAdd(f, root, next)) break;
        f.consumed.push_back(*j);
        addDone = true;
        cursor = *j;
        continue;
      }
      if (fuseActivation(f, root, next)) f.consumed.push_back(*j);
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
    for (const Operand& op : inst.operands)
      if (type(op.value).kind != ElemKind::F32) return false;
    if (inst.kind == OpKind::Conv) return lowerConv(inst, fusion);
    lowerMatMul(inst, fusion);
    return true;
  }

  /// f32 MatMul: one GEMM on the rhs packed at compile time when it is a
  /// constant matrix (the lhs batch folded into M), else a batched MatMul step.
  void lowerMatMul(const Instruction& inst, const Fusion& fusion) {
    const Type& lt = type(inst.operands[1].value);
    const Type& rt = type(inst.operands[2].value);
    const Type& ot = type(inst.operands[0].value);
    const int64_t m = lt.dims[lt.rank() - 2], k = lt.dims.back(), n = rt.dims.back();
    int64_t rhsBatch = 1;
    for (size_t d = 0; d + 2 < rt.rank(); ++d) rhsBatch *= rt.dims[d];
    std::optional<Address> constRhs = constantAddress(inst.operands[2].value);
    int64_t outBatch = ot.numElements() / std::max<int64_t>(1, m * n);
    if (constRhs && rhsBatch == 1 && lt.numElements() == outBatch * m * k)
      addPackedGemm(inst.operands[1].value, *constRhs, fusion, outBatch * m, k, n);
    else
      addBatchedMatMul(inst, fusion, m, k, n, outBatch);
  }

  /// C[m, n] = lhs[m, k] x rhs[k, n] with the constant rhs packed once.
  void addPackedGemm(ValueId lhs, Address rhs, const Fusion& fusion, int64_t m, int64_t k, int64_t n) {
    auto step = std::make_unique<GemmStep>();
    step->shape.m = m;
    step->shape.n = n;
    step->shape.k = k;
    step->shape.a.lda = k;
    step->shape.ldc = n;
    step->a = address(lhs);
    step->c = address(fusion.output);
    step->epilogue = fusion.epilogue;
    packGemmB(*step, rhs, k, n, /*groups=*/1, /*transposed=*/false);
    addStep(std::move(step));
  }

  /// Reserves the packed B panels of `step` (`groups` of them, each [k, n];
  /// transposed: the constant is [n, k], as a conv filter) and plans packing
  /// them from the constant at `src`.
  void packGemmB(GemmStep& step, Address src, int64_t k, int64_t n, int64_t groups, bool transposed) {
    step.packedGroupFloats = packedBSize(arch_, k, n);
    step.packedB = planPackedB(src, k, n, groups, transposed);
  }

  /// Reserves `groups` packed [k, n] B blocks and plans packing them from `src`.
  Address planPackedB(Address src, int64_t k, int64_t n, int64_t groups, bool transposed) {
    const size_t groupFloats = packedBSize(arch_, k, n);
    const Address packed{kPacked, reservePacked(groupFloats * size_t(groups))};
    PackEntry pack;
    pack.kind = PackEntry::Kind::GemmB;
    pack.src = src;
    pack.dst = packed.offset;
    pack.k = k;
    pack.n = n;
    pack.groups = groups;
    pack.transposed = transposed;
    pack.groupFloats = groupFloats;
    program_->packing.push_back(pack);
    return packed;
  }

  /// A MatMul step over `outBatch` broadcast batches of [m, k] x [k, n].
  void addBatchedMatMul(const Instruction& inst, const Fusion& fusion, int64_t m, int64_t k, int64_t n,
                        int64_t outBatch) {
    const Dims& ld = type(inst.operands[1].value).dims;
    const Dims& rd = type(inst.operands[2].value).dims;
    const Dims& od = type(inst.operands[0].value).dims;
    auto step = std::make_unique<MatMulStep>();
    step->lhs = address(inst.operands[1].value);
    step->rhs = address(inst.operands[2].value);
    step->out = address(fusion.output);
    step->m = m;
    step->k = k;
    step->n = n;
    Dims outBatchDims(od.begin(), od.end() - 2);
    Dims ls = broadcastStridesOver(outBatchDims, Dims(ld.begin(), ld.end() - 2));
    Dims rs = broadcastStridesOver(outBatchDims, Dims(rd.begin(), rd.end() - 2));
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
  }

  bool lowerConv(const Instruction& inst, Fusion& fusion) {
    std::optional<Address> filter = constantAddress(inst.operands[2].value);
    if (!filter) return false;
    const Dims& in = type(inst.operands[1].value).dims;
    const Dims& fd = type(inst.operands[2].value).dims;
    const Dims& od = type(inst.operands[0].value).dims;
    const ConvAttrs attrs = ConvAttrs::from(inst.attrs);
    const std::vector<int64_t>& strides = attrs.strides;
    const std::vector<int64_t>& pads = attrs.pads;
    const std::vector<int64_t>& dil = attrs.dilations;
    const int64_t group = attrs.group;
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

    const bool pointwise = fd[1] == 1 && fd[2] == 1 && strides[0] == 1 && strides[1] == 1 && pads[0] == 0 &&
                           pads[1] == 0 && in[1] == od[1] && in[2] == od[2];
    if (group == 1 &&
        winogradApplies(fd[1], fd[2], strides[0], strides[1], dil[0], dil[1], od[0], od[1], od[2], o)) {
      addWinogradConv(inst, fusion.output, epilogue, *filter);
      return true;
    }
    if (group == 1 && !std::getenv("EMBER_CPU_NO_DIRECT_CONV")) {
      addDirectConv(inst, fusion.output, epilogue, *filter);
      return true;
    }

    auto step = std::make_unique<GemmStep>();
    const int64_t k = fd[1] * fd[2] * cg;
    step->shape.m = od[0] * od[1] * od[2];
    step->shape.n = og;
    step->shape.k = k;
    step->shape.ldc = o;
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
    step->epilogue = epilogue;
    packGemmB(*step, *filter, k, og, group, /*transposed=*/true);
    addStep(std::move(step));
    return true;
  }

  /// A group-1, not pointwise Conv as a direct convolution (KernelConv.h) over
  /// the filter packed as the GEMM's B.
  void addDirectConv(const Instruction& inst, ValueId output, const EpilogueAddrs& epilogue, Address filter) {
    const Dims& fd = type(inst.operands[2].value).dims;
    const Dims& od = type(inst.operands[0].value).dims;
    const ConvAttrs attrs = ConvAttrs::from(inst.attrs);
    auto step = std::make_unique<DirectConvStep>();
    DirectConvCall& d = step->shape;
    fillWindow(d, type(inst.operands[1].value), type(inst.operands[0].value), fd[1], fd[2], attrs.strides,
               attrs.pads, attrs.dilations);
    d.o = od[3];
    step->input = address(inst.operands[1].value);
    step->output = address(output);
    step->epilogue = epilogue;
    step->packedB = planPackedB(filter, d.kh * d.kw * d.c, d.o, /*groups=*/1, /*transposed=*/true);
    addStep(std::move(step));
  }

  /// A group-1 3x3 stride-1 Conv as Winograd F(2x2, 3x3) (KernelWinograd.h)
  /// over its filter, transformed and packed when the function is created.
  void addWinogradConv(const Instruction& inst, ValueId output, const EpilogueAddrs& epilogue,
                       Address filter) {
    const ConvAttrs attrs = ConvAttrs::from(inst.attrs);
    auto step = std::make_unique<WinogradConvStep>();
    WinogradConvCall& w = step->shape;
    fillSizes(w, type(inst.operands[1].value), type(inst.operands[0].value));
    w.o = type(inst.operands[0].value).dims[3];
    w.pt = attrs.pads[0];
    w.pl = attrs.pads[1];
    step->input = address(inst.operands[1].value);
    step->output = address(output);
    step->epilogue = epilogue;
    PackEntry pack;
    pack.kind = PackEntry::Kind::Winograd;
    pack.src = filter;
    pack.k = w.c;
    pack.n = w.o;
    pack.dst = reservePacked(winogradFilterSize(arch_, w.c, w.o));
    step->packedFilter = Address{kPacked, pack.dst};
    program_->packing.push_back(pack);
    addStep(std::move(step));
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

  /// The instructions with no dedicated lowering above: jitted elementwise loops,
  /// pools, reductions, transposes and the int8 ops.
  bool lowerOther(const Instruction& inst) {
    const ValueId out = inst.operands[0].value;
    std::vector<ValueId> ins;
    for (const Operand& op : inst.operands)
      if (op.access == Access::In) ins.push_back(op.value);

    if (jitSupportsElementwise(inst.kind)) return lowerElementwise(inst, out, ins);

    switch (inst.kind) {
      case OpKind::MaxPool:
      case OpKind::AvgPool:
        return lowerPool(inst, out, ins);
      case OpKind::ReduceSum:
      case OpKind::ReduceMax:
      case OpKind::ReduceMin:
      case OpKind::ReduceProd:
        return lowerReduce(inst, out, ins);
      case OpKind::QuantizedConv:
        return lowerInt8Conv(inst);
      case OpKind::QuantizedAdd:
        return lowerInt8Add(inst);
      case OpKind::QuantizedMatMul:
        return lowerInt8MatMul(inst);
      case OpKind::QuantizedAvgPool:
        return lowerInt8Pool(inst);
      case OpKind::Quantize:
        return lowerInt8Quantize(inst);
      case OpKind::Transpose:
        return lowerTranspose(inst, out, ins);
      default:
        return false;
    }
  }

  /// Strides of every operand over the output dims `ot` (output first, contiguous),
  /// 0 along the dims an input broadcasts.
  std::vector<std::vector<int64_t>> broadcastStrides(const Type& ot, const std::vector<ValueId>& ins) {
    std::vector<std::vector<int64_t>> strides;
    strides.reserve(ins.size() + 1);
    strides.push_back(ot.strides());
    for (ValueId v : ins) strides.push_back(broadcastStridesOver(ot.dims, type(v).dims));
    return strides;
  }

  /// A jitted f32 elementwise loop.
  bool lowerElementwise(const Instruction& inst, ValueId out, const std::vector<ValueId>& ins) {
    const Type& ot = type(out);
    if (ot.kind != ElemKind::F32) return false;
    for (ValueId v : ins)
      if (type(v).kind != ElemKind::F32) return false;
    if (ot.numElements() == 0) return true;
    JitOp op;
    op.kind = JitOp::Kind::Elementwise;
    ElementwiseLoop& loop = op.loop;
    loop.kind = inst.kind;
    if (inst.kind == OpKind::Clip) {
      const ClipAttrs clip = ClipAttrs::from(inst.attrs);
      loop.lo = float(clip.min);
      loop.hi = float(clip.max);
    }
    std::vector<std::vector<int64_t>> strides = broadcastStrides(ot, ins);
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

  /// f32 MaxPool / AvgPool (int8 MaxPool goes to lowerInt8Pool).
  bool lowerPool(const Instruction& inst, ValueId out, const std::vector<ValueId>& ins) {
    const Type& ot = type(out);
    if (inst.kind == OpKind::MaxPool && (ot.kind == ElemKind::Int8Q || ot.kind == ElemKind::UInt8Q))
      return lowerInt8Pool(inst);
    if (ot.kind != ElemKind::F32) return false;
    const Dims& in = type(ins[0]).dims;
    const PoolWindow window = poolWindow(inst);
    const std::vector<int64_t>& kernel = window.kernel;
    const std::vector<int64_t>& strides = window.strides;
    const std::vector<int64_t>& pads = window.pads;
    const std::vector<int64_t>& dil = window.dilations;
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
                           window.countIncludePad};
    step->input = address(ins[0]);
    step->output = address(out);
    addStep(std::move(step));
    return true;
  }

  /// f32 reductions over one contiguous block of axes.
  bool lowerReduce(const Instruction& inst, ValueId out, const std::vector<ValueId>& ins) {
    const Type& ot = type(out);
    if (ot.kind != ElemKind::F32) return false;
    const Dims& d = type(ins[0]).dims;
    const std::vector<int64_t> axes = ReduceSumAttrs::from(inst.attrs).axes;  // ReduceMax/Min/Prod's too
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

  bool lowerTranspose(const Instruction& inst, ValueId out, const std::vector<ValueId>& ins) {
    const Type& it = type(ins[0]);
    auto step = std::make_unique<TransposeStep>();
    step->input = address(ins[0]);
    step->output = address(out);
    step->elemSize = elemSize(it.kind);
    step->dims = it.dims;
    step->perm = TransposeAttrs::from(inst.attrs).perm;
    if (range(ins[0]).overlaps(range(out))) return false;
    addStep(std::move(step));
    return true;
  }

  /// The QuantizedAdd right after the group-1 QuantizedConv at `i` that the
  /// int8 kernel can fuse into its epilogue: the conv's output is read by
  /// that add alone; the other operand (the residual) has the same shape; the
  /// add's output is apart from the conv's input and is the residual or apart
  /// from it. Only with AVX-512 VNNI (the other ISAs' fused add is scalar),
  /// and only on request (EMBER_CPU_INT8_FUSED_ADD=1): since the separate add
  /// runs on the VBMI lookup, conv + add measured faster than the fused step
  /// on resnet50's 56x56 to 14x14 blocks (docs/backends/cpu.md, "int8").
  std::optional<size_t> planInt8ResidualAdd(size_t i) const {
    static const bool requested = [] {
      const char* v = std::getenv("EMBER_CPU_INT8_FUSED_ADD");
      return v != nullptr && std::string(v) == "1";
    }();
    if (!requested || std::getenv("EMBER_CPU_NO_FUSION") || std::getenv("EMBER_CPU_NO_INT8") ||
        int8Isa() != Int8Isa::Avx512Vnni)
      return std::nullopt;
    const Instruction& conv = ir_.instructions()[i];
    if (QuantizedConvAttrs::from(conv.attrs).group != 1) return std::nullopt;
    const ValueId convOut = conv.operands[0].value;
    const std::optional<size_t> j = nextReal(i);
    if (!j || !privateIntermediate(convOut, i, *j)) return std::nullopt;
    const Instruction& add = ir_.instructions()[*j];
    if (add.kind != OpKind::QuantizedAdd) return std::nullopt;
    const ValueId out = add.operands[0].value, a = add.operands[1].value, b = add.operands[2].value;
    const bool convIsA = a == convOut || range(a) == range(convOut);
    if (!convIsA && !(b == convOut || range(b) == range(convOut))) return std::nullopt;
    const ValueId residual = convIsA ? b : a;
    if (range(residual) == range(convOut)) return std::nullopt;
    const Dims& dims = type(convOut).dims;
    if (!is8BitCode(type(residual).kind) || !is8BitCode(type(out).kind) || type(residual).dims != dims ||
        type(out).dims != dims)
      return std::nullopt;
    const Range target = range(out), res = range(residual);
    for (size_t k = 1; k < conv.operands.size(); ++k)
      if (target.overlaps(range(conv.operands[k].value))) return std::nullopt;
    if (target.overlaps(res) && !(target == res)) return std::nullopt;
    return j;
  }

  /// QuantizedConv, group 1 or depthwise, with constant filter, bias and scales, 8-bit
  /// input and output, the output not overlapping the input; with `add` (group 1,
  /// planInt8ResidualAdd), that QuantizedAdd fused into the epilogue.
  bool lowerInt8Conv(const Instruction& inst,
                     std::optional<std::reference_wrapper<const Instruction>> add = {}) {
    if (std::getenv("EMBER_CPU_NO_INT8")) return false;
    const ValueId out = inst.operands[0].value, in = inst.operands[1].value;
    std::optional<Address> filter = constantAddress(inst.operands[2].value);
    std::optional<Address> bias = constantAddress(inst.operands[3].value);
    std::optional<Address> scales = constantAddress(inst.operands[4].value);
    if (!filter || !bias || !scales) return false;
    const Type &it = type(in), &ot = type(out), &ft = type(inst.operands[2].value);
    const QuantizedConvAttrs attrs = QuantizedConvAttrs::from(inst.attrs);
    const int64_t group = attrs.group;
    const bool depthwise = group == it.dims[3] && group == ot.dims[3] && ft.dims[3] == 1;
    if (group != 1 && !depthwise) return false;
    if (!is8BitCode(it.kind) || !is8BitCode(ot.kind) || ft.kind != ElemKind::Int8Q) return false;
    if (type(inst.operands[3].value).kind != ElemKind::Int32Q ||
        type(inst.operands[4].value).kind != ElemKind::F32)
      return false;
    if (range(in).overlaps(range(out))) return false;
    auto step = std::make_unique<Int8ConvStep>();
    Int8ConvCall& s = step->shape;
    fillInt8ConvShape(s, attrs, it, ot, ft);
    if (depthwise) return !add && addInt8Depthwise(s, in, out, *filter, *bias, *scales);
    step->input = address(in);
    step->output = address(out);
    if (add) fuseInt8ResidualAdd(*step, out, add->get());
    addInt8ConvStep(std::move(step), *filter, *bias, *scales, s.kh * s.kw * s.c, /*transposed=*/true,
                    it.scale, ot.scale);
    return true;
  }

  /// Makes the conv step `step` (whose own output is `convOut`) compute the
  /// QuantizedAdd `add` of that output and the residual into the add's output.
  void fuseInt8ResidualAdd(Int8ConvStep& step, ValueId convOut, const Instruction& add) {
    const ValueId out = add.operands[0].value, a = add.operands[1].value, b = add.operands[2].value;
    const ValueId residual = a == convOut || range(a) == range(convOut) ? b : a;
    const Type &ct = type(convOut), &rt = type(residual), &ot = type(out);
    Int8AddCall& call = step.shape.residualAdd;
    call.aSigned = ct.kind == ElemKind::Int8Q;
    call.bSigned = rt.kind == ElemKind::Int8Q;
    call.aZero = ct.offset;
    call.bZero = rt.offset;
    // addQuantized is symmetric in its operands when their multipliers swap with them.
    setInt8AddMultipliers(call, quant::addMultipliers(ct.scale, rt.scale, ot.scale));
    call.outZero = ot.offset;
    const quant::QuantRange r = outputClamp(QuantizedAddAttrs::from(add.attrs), ot);
    call.lo = r.lo;
    call.hi = r.hi;
    step.shape.hasResidual = 1;
    step.residual = address(residual);
    step.output = address(out);
  }

  /// Packs a [K, N] (or, transposed, [N, K]) s8 weight matrix with its bias
  /// and scales for the int8 conv kernel and adds the step that reads it.
  void addInt8ConvStep(std::unique_ptr<Int8ConvStep> step, Address weights, Address bias, Address scales,
                       int64_t k, bool transposed, float inScale, float outScale) {
    PackEntry pack;
    pack.kind = PackEntry::Kind::Int8Conv;
    pack.transposed = transposed;
    pack.src = weights;
    pack.bias = bias;
    pack.scales = scales;
    pack.k = k;
    pack.n = step->shape.o;
    pack.inScale = inScale;
    pack.outScale = outScale;
    pack.zu = step->shape.zu;
    pack.dst = reservePacked((int8ConvWeightBytes(k, pack.n) + 3) / 4);
    step->weights = Address{kPacked, pack.dst};
    program_->packing.push_back(pack);
    addStep(std::move(step));
  }

  /// The shape, zero points and output clamp of a QuantizedConv's int8 kernel call.
  static void fillInt8ConvShape(Int8ConvCall& s, const QuantizedConvAttrs& attrs, const Type& it,
                                const Type& ot, const Type& ft) {
    fillWindow(s, it, ot, ft.dims[1], ft.dims[2], attrs.strides, attrs.pads, attrs.dilations);
    s.o = ot.dims[3];
    s.inputSigned = it.kind == ElemKind::Int8Q;
    s.zu = s.inputSigned ? it.offset + 128 : it.offset;
    s.outputSigned = ot.kind == ElemKind::Int8Q;
    s.outputZero = ot.offset;
    const quant::QuantRange r = outputClamp(attrs, ot);
    s.lo = r.lo;
    s.hi = r.hi;
  }

  /// A depthwise QuantizedConv with the shape `s`: its per-channel packed weights and its step.
  bool addInt8Depthwise(const Int8ConvCall& s, ValueId in, ValueId out, Address filter, Address bias,
                        Address scales) {
    const Type &it = type(in), &ot = type(out);
    auto dw = std::make_unique<Int8DepthwiseStep>();
    Int8DepthwiseCall& d = dw->shape;
    copyWindow(d, s);
    d.inputSigned = s.inputSigned;
    d.inputZero = it.offset;
    d.outputZero = s.outputZero;
    d.lo = s.lo;
    d.hi = s.hi;
    dw->input = address(in);
    dw->output = address(out);
    PackEntry pack;
    pack.kind = PackEntry::Kind::Int8Depthwise;
    pack.src = filter;
    pack.bias = bias;
    pack.scales = scales;
    pack.taps = s.kh * s.kw;
    pack.channels = s.c;
    pack.inScale = it.scale;
    pack.outScale = ot.scale;
    pack.dst = reservePacked((int8DepthwiseWeightBytes(pack.taps, s.c) + 3) / 4);
    dw->weights = Address{kPacked, pack.dst};
    program_->packing.push_back(pack);
    addStep(std::move(dw));
    return true;
  }

  /// QuantizedMatMul with a constant 2-D s8 rhs of zero point 0 (what the
  /// quantizer makes of Gemm/MatMul weights): the int8 convolution kernel as
  /// a 1x1 convolution over the lhs rows, the rhs packed transposed.
  bool lowerInt8MatMul(const Instruction& inst) {
    if (std::getenv("EMBER_CPU_NO_INT8")) return false;
    const ValueId out = inst.operands[0].value, lhs = inst.operands[1].value, rhs = inst.operands[2].value;
    std::optional<Address> weights = constantAddress(rhs);
    std::optional<Address> bias = constantAddress(inst.operands[3].value);
    std::optional<Address> scales = constantAddress(inst.operands[4].value);
    if (!weights || !bias || !scales) return false;
    const Type &lt = type(lhs), &rt = type(rhs), &ot = type(out);
    if (!is8BitCode(lt.kind) || !is8BitCode(ot.kind) || rt.kind != ElemKind::Int8Q || rt.offset != 0)
      return false;
    if (rt.dims.size() != 2 || lt.dims.size() < 2 || lt.dims.back() != rt.dims[0]) return false;
    if (type(inst.operands[3].value).kind != ElemKind::Int32Q ||
        type(inst.operands[4].value).kind != ElemKind::F32)
      return false;
    if (range(lhs).overlaps(range(out))) return false;
    const int64_t k = rt.dims[0], n = rt.dims[1];
    auto step = std::make_unique<Int8ConvStep>();
    Int8ConvCall& s = step->shape;
    s.n = 1;
    s.h = s.oh = lt.numElements() / k;
    s.w = s.ow = 1;
    s.c = k;
    s.o = n;
    s.kh = s.kw = 1;
    s.inputSigned = lt.kind == ElemKind::Int8Q;
    s.zu = s.inputSigned ? lt.offset + 128 : lt.offset;
    s.outputSigned = ot.kind == ElemKind::Int8Q;
    s.outputZero = ot.offset;
    const quant::QuantRange r = outputClamp(QuantizedMatMulAttrs::from(inst.attrs), ot);
    s.lo = r.lo;
    s.hi = r.hi;
    step->input = address(lhs);
    step->output = address(out);
    addInt8ConvStep(std::move(step), *weights, *bias, *scales, k, /*transposed=*/false, lt.scale, ot.scale);
    return true;
  }

  /// A step's name in profiles and errors: op, result type and node name.
  std::string labelOf(const Instruction& inst) const {
    return std::string(opName(inst.kind)) + " " + type(inst.operands[0].value).str() + " '" + inst.name + "'";
  }

  /// Whether the int8 kernels quantize `in` into `out`: f32 to 8-bit codes, apart.
  bool int8Quantizes(ValueId in, ValueId out) const {
    const Type &it = type(in), &ot = type(out);
    return !std::getenv("EMBER_CPU_NO_INT8") && it.kind == ElemKind::F32 &&
           (ot.kind == ElemKind::Int8Q || ot.kind == ElemKind::UInt8Q) && !range(in).overlaps(range(out));
  }

  /// The step quantizing the f32 elements at `in` into `out`'s codes (at `at`).
  void addInt8Quantize(Address in, const Type& out, Address at) {
    auto step = std::make_unique<Int8QuantizeStep>();
    const quant::QuantRange full = out.kind == ElemKind::Int8Q ? quant::int8Range() : quant::uint8Range();
    step->shape.count = out.numElements();
    step->shape.scale = out.scale;
    step->shape.zero = out.offset;
    step->shape.lo = full.lo;
    step->shape.hi = full.hi;
    step->input = in;
    step->output = at;
    addStep(std::move(step));
  }

  /// Quantize f32 -> 8-bit codes, output apart from the input.
  bool lowerInt8Quantize(const Instruction& inst) {
    const ValueId out = inst.operands[0].value, in = inst.operands[1].value;
    if (!int8Quantizes(in, out)) return false;
    addInt8Quantize(address(in), type(out), address(out));
    return true;
  }

  /// The Quantize right after the Transpose at `i` that reads its output
  /// alone (a quantized model's NCHW input made NHWC): quantizing first, the
  /// transpose moves 1-byte codes instead of 4-byte floats. Quantize is
  /// elementwise, so the order does not change a code.
  std::optional<size_t> planQuantizeFirst(size_t i) const {
    if (std::getenv("EMBER_CPU_NO_FUSION")) return std::nullopt;
    const Instruction& transpose = ir_.instructions()[i];
    const ValueId moved = transpose.operands[0].value;
    const std::optional<size_t> j = nextReal(i);
    if (!j || !privateIntermediate(moved, i, *j)) return std::nullopt;
    const Instruction& quantize = ir_.instructions()[*j];
    if (quantize.kind != OpKind::Quantize || range(quantize.operands[1].value) != range(moved))
      return std::nullopt;
    if (!int8Quantizes(moved, quantize.operands[0].value)) return std::nullopt;
    return j;
  }

  /// Transpose then Quantize (planQuantizeFirst) as Quantize into the
  /// transpose's own output region (free until the quantize wrote it), then
  /// a transpose of the codes into the quantize's output.
  bool lowerQuantizeFirst(const Instruction& transpose, const Instruction& quantize) {
    const ValueId in = transpose.operands[1].value, moved = transpose.operands[0].value;
    const ValueId out = quantize.operands[0].value;
    if (range(in).overlaps(range(moved))) return false;
    const std::string transposeLabel = label_;
    label_ = labelOf(quantize);
    addInt8Quantize(address(in), type(out), address(moved));
    label_ = transposeLabel;
    auto step = std::make_unique<TransposeStep>();
    step->input = address(moved);
    step->output = address(out);
    step->elemSize = 1;
    step->dims = type(in).dims;
    step->perm = TransposeAttrs::from(transpose.attrs).perm;
    addStep(std::move(step));
    return true;
  }

  /// MaxPool on 8-bit codes and QuantizedAvgPool, output apart from the input.
  bool lowerInt8Pool(const Instruction& inst) {
    if (std::getenv("EMBER_CPU_NO_INT8")) return false;
    const ValueId out = inst.operands[0].value, in = inst.operands[1].value;
    const Type &it = type(in), &ot = type(out);
    if (it.kind != ot.kind || it.dims.size() != 4 || range(in).overlaps(range(out))) return false;
    const bool average = inst.kind == OpKind::QuantizedAvgPool;
    const PoolWindow window = poolWindow(inst);
    auto step = std::make_unique<Int8PoolStep>();
    Int8PoolCall& s = step->shape;
    fillWindow(s, it, ot, window.kernel[0], window.kernel[1], window.strides, window.pads, window.dilations);
    s.pb = window.pads[2];
    s.pr = window.pads[3];
    s.inputSigned = it.kind == ElemKind::Int8Q;
    s.average = average ? 1 : 0;
    s.countIncludePad = window.countIncludePad;
    s.inputZero = it.offset;
    s.outputZero = ot.offset;
    const quant::QuantRange full = ot.kind == ElemKind::Int8Q ? quant::int8Range() : quant::uint8Range();
    s.lo = full.lo;
    s.hi = full.hi;
    s.inScale = it.scale;
    s.outScale = ot.scale;
    step->input = address(in);
    step->output = address(out);
    addStep(std::move(step));
    return true;
  }

  /// QuantizedAdd of same-shape 8-bit operands (in place allowed: each
  /// element reads its own inputs before it is written).
  bool lowerInt8Add(const Instruction& inst) {
    if (std::getenv("EMBER_CPU_NO_INT8")) return false;
    const ValueId out = inst.operands[0].value, a = inst.operands[1].value, b = inst.operands[2].value;
    const Type &ot = type(out), &at = type(a), &bt = type(b);
    if (!is8BitCode(ot.kind) || !is8BitCode(at.kind) || !is8BitCode(bt.kind) || at.dims != ot.dims ||
        bt.dims != ot.dims)
      return false;
    for (ValueId in : {a, b}) {
      Range r = range(in), o = range(out);
      if (r.overlaps(o) && !(r == o)) return false;  // partial overlap: not element-wise safe
    }
    auto step = std::make_unique<Int8AddStep>();
    step->lhs = address(a);
    step->rhs = address(b);
    step->output = address(out);
    step->count = ot.numElements();
    const quant::AddMultipliers m = quant::addMultipliers(at.scale, bt.scale, ot.scale);
    const quant::QuantRange r = outputClamp(QuantizedAddAttrs::from(inst.attrs), ot);
    auto code = [](ElemKind kind, int byte) {
      return kind == ElemKind::Int8Q ? int32_t(int8_t(byte)) : byte;
    };
    Int8AddCall& call = step->shape;
    call.aSigned = at.kind == ElemKind::Int8Q;
    call.bSigned = bt.kind == ElemKind::Int8Q;
    call.aZero = at.offset;
    call.bZero = bt.offset;
    setInt8AddMultipliers(call, m);
    call.outZero = ot.offset;
    call.lo = r.lo;
    call.hi = r.hi;
    step->table.resize(65536);
    for (int x = 0; x < 256; ++x)
      for (int y = 0; y < 256; ++y)
        step->table[size_t(x) * 256 + size_t(y)] = uint8_t(quant::addQuantized(
            code(at.kind, x), at.offset, code(bt.kind, y), bt.offset, m, ot.offset, r.lo, r.hi));
    addStep(std::move(step));
    return true;
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

}  // namespace

Expected<BuiltProgram> buildProgram(const IRFunction& ir, GemmArch arch) {
  Compiler compiler(ir, arch);
  BuiltProgram built;
  EMBER_ASSIGN_OR_RETURN(built.program, compiler.run());
  built.ops = std::move(compiler.ops());
  return built;
}

}  // namespace ember::cpu
