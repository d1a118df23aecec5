#include "Compiler.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "CompileContext.h"
#include "IsaLimits.h"
#include "LowerTransformer.h"
#include "Lowering.h"
#include "ResidualFusion.h"
#include "ember/OpAttrs.h"
#include "ember/npu/ProgramCheck.h"

namespace ember::npu_backend {

bool addBroadcastSupported(const Dims& out, const Dims& a, const Dims& b);  // LowerVector.cpp
bool requantizeSupported(const Type& in, const Type& out);                  // LowerVector.cpp

namespace {

bool allI8(const std::vector<Type>& types) { return std::all_of(types.begin(), types.end(), isI8); }

/// Weights, bias and scales are folded into the weight image at compile time,
/// so a claimed conv/matmul must have them as compile-time constants.
bool constantParameters(const NodeInfo& info) {
  return info.isConstantInput(1) && info.isConstantInput(2) && info.isConstantInput(3);
}

bool allAtMost(const std::vector<int64_t>& values, int64_t limit) {
  return std::all_of(values.begin(), values.end(), [limit](int64_t v) { return v <= limit; });
}

// The "can the NPU take this node" predicates of the lowerings below. The
// common conditions (one i8 result, ranks a bundle symbol holds) are checked
// before them, in npuSupports.

Support takesConv(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto &in = info.inputTypes, &out = info.resultTypes;
  if (!(in.size() == 4 && isI8(in[0]) && isI8(in[1]) && in[1].offset == 0 && in[0].rank() == 4 &&
        constantParameters(info)))
    return Support::no();
  ConvGeometry g = convGeometry(out[0], in[0], in[1], QuantizedConvAttrs::from(info.attributes));
  return Support::of(convFits(gathersStrided1x1(g) ? gatheredGeometry(g) : g, config));
}

Support takesMatMul(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto& in = info.inputTypes;
  if (!info.isConstantInput(1)) return activationMatMulSupport(info, config);  // Q.K^T, scores.V
  if (in.size() != 4 || !isI8(in[0]) || !isI8(in[1]) || in[1].offset != 0) return Support::no();
  if (!constantParameters(info)) return Support::no();
  // The weights are one [K, N] matrix (no batch of right operands).
  if (in[1].rank() < 2 || in[1].numElements() != in[1].dims[in[1].rank() - 2] * in[1].dims.back())
    return Support::no();
  return Support::of(convFits(matMulGeometry(in[0], in[1]), config));
}

std::string joined(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : "x") + std::to_string(v);
  return text;
}

Support takesMaxPool(const NodeInfo& info, const npu::NpuConfig&) {
  const auto& in = info.inputTypes;
  if (in.size() != 1 || !isI8(in[0]) || in[0].rank() != 4) return Support::no();
  // The pooling unit has no dilation, and its window and stride fields are bounded.
  const MaxPoolAttrs pool = MaxPoolAttrs::from(info.attributes);
  if (!allAtMost(pool.dilations, 1))
    return Support::no("the pooling unit has no dilation (" + joined(pool.dilations) + ")");
  if (!allAtMost(pool.kernel, limits::kPoolWindow))
    return Support::no("a " + joined(pool.kernel) + " window exceeds the pooling unit's " +
                       std::to_string(limits::kPoolWindow));
  if (!allAtMost(pool.strides, limits::kPoolStride))
    return Support::no("stride " + joined(pool.strides) + " exceeds the pooling unit's " +
                       std::to_string(limits::kPoolStride));
  return Support::yes();
}

bool takesAvgPool(const NodeInfo& info, const npu::NpuConfig&) {
  const auto& in = info.inputTypes;
  return in.size() == 1 && isI8(in[0]) && in[0].rank() == 4;
}

bool takesAdd(const NodeInfo& info, const npu::NpuConfig&) {
  const auto& in = info.inputTypes;
  return allI8(in) && addBroadcastSupported(info.resultTypes[0].dims, in[0].dims, in[1].dims);
}

bool takesLookup(const NodeInfo& info, const npu::NpuConfig&) {
  const auto& in = info.inputTypes;
  return in.size() == 2 && isI8(in[0]) && isI8(in[1]);
}

bool takesRequantize(const NodeInfo& info, const npu::NpuConfig&) {
  const auto& in = info.inputTypes;
  return in.size() == 1 && isI8(in[0]) && requantizeSupported(in[0], info.resultTypes[0]);
}

bool takesSlice(const NodeInfo& info, const npu::NpuConfig&) {
  // The DMA's strides are unsigned: no reversed slices.
  const SliceAttrs slice = SliceAttrs::from(info.attributes);
  return std::all_of(slice.steps.begin(), slice.steps.end(), [](int64_t step) { return step >= 1; }) &&
         allI8(info.inputTypes);
}

bool takesI8DataMovement(const NodeInfo& info, const npu::NpuConfig&) { return allI8(info.inputTypes); }

Expected<LayerInfo> lowerConvNode(CompileContext& ctx, const Instruction& inst, const ConvFusion* fusion) {
  const auto& instructions = ctx.ir().instructions();
  ConvEpilogue epilogue;
  if (fusion && fusion->add) {
    epilogue.add = &instructions[fusion->add->add];
    epilogue.addOverwritesInput = fusion->add->overwritesInput;
  }
  if (fusion && fusion->maxPool) epilogue.maxPool = &instructions[*fusion->maxPool];
  return lowerConv(ctx, inst, epilogue);
}

Expected<LayerInfo> lowerMatMulNode(CompileContext& ctx, const Instruction& inst, const ConvFusion*) {
  if (ctx.ir().regionOf(ctx.ir().resolve(inst.operands[2].value).first) != Region::Constants)
    return lowerActivationMatMul(ctx, inst);
  return lowerMatMul(ctx, inst);
}

Expected<LayerInfo> lowerReshapeNode(CompileContext& ctx, const Instruction& inst, const ConvFusion*) {
  Instruction copy = inst;  // a reshape moves the bytes as they are
  copy.kind = OpKind::Copy;
  return lowerDataMovement(ctx, copy);
}

/// An op the NPU lowers: whether it takes a node (beyond the common
/// conditions) and its lowering; `fusion` is a residual add or a max pooling
/// to run in a conv's epilogue (ResidualFusion.h), which only the conv
/// lowering takes.
struct NpuLowering {
  OpKind kind;
  Support (*takes)(const NodeInfo& info, const npu::NpuConfig& config);
  Expected<LayerInfo> (*lower)(CompileContext& ctx, const Instruction& inst, const ConvFusion* fusion);
};

/// A yes/no predicate as a Support with no reason.
template <bool (*takes)(const NodeInfo&, const npu::NpuConfig&)>
Support withoutReason(const NodeInfo& info, const npu::NpuConfig& config) {
  return takes(info, config) ? Support::yes() : Support::no();
}

template <Expected<LayerInfo> (*lowering)(CompileContext&, const Instruction&)>
Expected<LayerInfo> withoutFusion(CompileContext& ctx, const Instruction& inst, const ConvFusion*) {
  return lowering(ctx, inst);
}

/// The ops the NPU lowers: adding a lowering is one entry here, and
/// npuSupports (what the partitioner places on the NPU) follows from it. Any
/// other op with an i8 -> i8 elementwise function runs as a lut (below).
constexpr NpuLowering kLowerings[] = {
    {OpKind::QuantizedConv, takesConv, lowerConvNode},
    {OpKind::QuantizedMatMul, takesMatMul, lowerMatMulNode},
    {OpKind::MaxPool, takesMaxPool, withoutFusion<lowerMaxPool>},
    {OpKind::QuantizedAvgPool, withoutReason<takesAvgPool>, withoutFusion<lowerAvgPool>},
    {OpKind::QuantizedAdd, withoutReason<takesAdd>, withoutFusion<lowerAdd>},
    {OpKind::Lookup, withoutReason<takesLookup>, withoutFusion<lowerLookup>},
    {OpKind::Requantize, withoutReason<takesRequantize>, withoutFusion<lowerRequantize>},
    {OpKind::Slice, withoutReason<takesSlice>, withoutFusion<lowerDataMovement>},
    {OpKind::Transpose, withoutReason<takesI8DataMovement>, withoutFusion<lowerDataMovement>},
    {OpKind::Concat, withoutReason<takesI8DataMovement>, withoutFusion<lowerDataMovement>},
    {OpKind::Copy, withoutReason<takesI8DataMovement>, withoutFusion<lowerDataMovement>},
    {OpKind::Reshape, withoutReason<takesI8DataMovement>, lowerReshapeNode},
    {OpKind::QuantizedSoftmax, softmaxSupport, withoutFusion<lowerSoftmax>},
    {OpKind::QuantizedLayerNorm, layerNormSupport, withoutFusion<lowerLayerNorm>},
};

const NpuLowering* findLowering(OpKind kind) {
  for (const NpuLowering& lowering : kLowerings)
    if (lowering.kind == kind) return &lowering;
  return nullptr;
}

}  // namespace

Support npuSupport(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto& in = info.inputTypes;
  const auto& out = info.resultTypes;
  if (out.size() != 1 || !isI8(out[0])) return Support::no();
  // A bundle symbol holds at most kMaxSymbolRank dims: higher ranks fall back.
  auto tooHigh = [](const Type& t) { return t.rank() > npu::kMaxSymbolRank; };
  if (tooHigh(out[0]) || std::any_of(in.begin(), in.end(), tooHigh))
    return Support::no("a tensor of rank above " + std::to_string(npu::kMaxSymbolRank) +
                       " (a bundle symbol's most)");
  if (const NpuLowering* lowering = findLowering(info.kind)) return lowering->takes(info, config);
  return unaryTableSupported(info) ? Support::yes() : Support::no();  // an i8 -> i8 elementwise op is a lut
}

namespace {

Expected<LayerInfo> lowerInstruction(CompileContext& ctx, const Instruction& inst, const ConvFusion* fusion) {
  if (const NpuLowering* lowering = findLowering(inst.kind)) return lowering->lower(ctx, inst, fusion);
  if (isUnaryTableOp(ctx, inst)) return lowerUnaryAsLookup(ctx, inst);
  return makeError("layer '", inst.name, "' (", opName(inst.kind), "): not supported by the npu backend");
}

Expected<npu::Symbol> symbolOf(const CompileContext& ctx, ValueId id, npu::Symbol::Direction direction) {
  const IRValue& v = ctx.ir().value(id);
  if (v.type.kind != ElemKind::Int8Q)
    return makeError("npu: ", direction == npu::Symbol::Direction::Input ? "input" : "output", " '", v.name,
                     "' has type ", v.type.str(), "; the npu takes and produces i8q tensors");
  npu::Symbol s;
  s.direction = direction;
  s.name = v.name;
  s.type = npu::SymbolType::I8;
  s.shape = v.type.dims.empty() ? std::vector<int64_t>{1} : v.type.dims;
  s.dramOffset = ctx.ioBase() + v.offset;
  s.scale = v.type.scale;
  s.zeroPoint = v.type.offset;
  return s;
}

/// The independent checks, on every program (ProgramCheck.h), reading the
/// encoded program; the queue view is built once for all of them.
Error checkProgram(CompileContext& ctx, std::span<const npu::isa::EncodedInstruction> program,
                   const npu::NpuConfig& config, const std::string& name) {
  auto view = npu::ProgramView::of(program);
  if (!view) return view.error().withContext("npu: token check of '" + name + "'");
  if (Error e = npu::checkTokens(*view, config)) return e.withContext("npu: token check of '" + name + "'");
  if (Error e = npu::checkWeightBuffers(*view, config))
    return e.withContext("npu: weight buffer check of '" + name + "'");
  if (Error e = npu::checkSramRaces(*view, config))
    return e.withContext("npu: SRAM race check of '" + name + "'");
  if (Error e = npu::checkAllocation(ctx.sram().buffers(), config))
    return e.withContext("npu: SRAM allocation check of '" + name + "'");
  return Error::success();
}

/// The inputs' and outputs' symbols, and the outputs' dims by name.
Error addSymbols(const CompileContext& ctx, const IRFunction& ir, CompiledProgram& result) {
  for (ValueId id : ir.inputs()) {
    auto s = symbolOf(ctx, id, npu::Symbol::Direction::Input);
    if (!s) return s.error();
    result.bundle.symbols.push_back(*s);
  }
  for (ValueId id : ir.outputs()) {
    auto s = symbolOf(ctx, id, npu::Symbol::Direction::Output);
    if (!s) return s.error();
    result.bundle.symbols.push_back(*s);
    result.outputDims[s->name] = ir.value(id).type.dims;
  }
  return Error::success();
}

}  // namespace

Expected<CompiledProgram> compileToBundle(const IRFunction& ir, const npu::NpuConfig& config) {
  if (config.rows < 1 || config.cols < 1 || config.scratchpadBanks < 1 || config.bankWidthBytes < 1)
    return makeError("npu config '", config.name,
                     "': matrix_engine.rows/cols and scratchpad.banks must be positive");
  CompileContext ctx(ir, config);
  ctx.program().setVectorQueue(config.vectorQueue == npu::VectorQueue::Separate);
  ctx.program().setWeightBuffers(config.weightBuffers);
  CompiledProgram result;
  const std::map<size_t, ConvFusion> fusion = convFusionCandidates(ctx);
  std::set<size_t> fusedAdds;  // adds and pools already run in their conv's epilogue
  const auto& instructions = ir.instructions();
  for (size_t index = 0; index < instructions.size(); ++index) {
    const Instruction& inst = instructions[index];
    if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) continue;
    if (fusedAdds.count(index)) continue;
    ctx.program().beginLayer(inst.name.empty() ? "layer" + std::to_string(result.layers.size()) : inst.name);
    ctx.sram().beginLayer();
    const auto candidate = fusion.find(index);
    auto info = lowerInstruction(ctx, inst, candidate != fusion.end() ? &candidate->second : nullptr);
    if (!info) return info.error();
    if (info->fusedResidualAdd) fusedAdds.insert(candidate->second.add->add);
    if (info->fusedMaxPool) fusedAdds.insert(*candidate->second.maxPool);
    const auto [first, last] = ctx.program().endLayer();
    if (ctx.program().error()) return ctx.program().error();
    ctx.sram().endLayer(first, last);
    LayerReport layer;
    layer.name = ctx.program().layers().back();
    layer.op = std::string(opName(inst.kind));
    layer.values[kShapeColumn] = info->shape;
    layer.values[kTilesColumn] = info->tiles;
    layer.estimatedCycles = info->estimatedCycles;
    result.layers.push_back(std::move(layer));
  }
  ctx.program().finish();
  if (ctx.program().error()) return ctx.program().error();
  npu::Bundle& bundle = result.bundle;
  bundle.program = ctx.program().takeProgram();  // encoded as emitted: checked and shipped as is
  EMBER_RETURN_IF_ERROR(checkProgram(ctx, bundle.program, config, ir.name()));
  bundle.configHash = config.hash();
  bundle.layers = ctx.program().layers();
  EMBER_RETURN_IF_ERROR(addSymbols(ctx, ir, result));
  bundle.weightsOffset = ctx.weightsOffset();
  bundle.dramBytes = std::max<uint64_t>(ctx.dramBytes(), 64);
  bundle.weights = ctx.takeWeightImage();
  if (bundle.dramBytes > uint64_t(config.dramBytes))
    return makeError("npu: the program needs ", bundle.dramBytes,
                     " bytes of DRAM; config key 'dram.size_mib' gives ", config.dramBytes);
  if (Error e = bundle.validate()) return e.withContext("npu: bundle of '" + ir.name() + "'");
  result.sramPeakBytes = ctx.sram().peakScratchpadBytes();
  return result;
}

}  // namespace ember::npu_backend
