// QuantizedSoftmax and QuantizedLayerNorm on the vector unit's row
// normalisations (ISA v4 `softmax` and `layernorm`, docs/npu/isa.md). The
// arithmetic is QuantMath.h's softmaxRow/layerNormRow in the simulator, with
// the parameters derived here by the same ember::quant functions the
// reference kernels call, so the NPU is the reference bit for bit. A row is
// never split: each step loads a band of whole rows (and their mask rows),
// normalises them with one instruction and stores them.
// docs/npu/compiler.md, "Transformers".
#include <algorithm>
#include <cstring>
#include <sstream>

#include "Instructions.h"
#include "IsaLimits.h"
#include "LowerTransformer.h"
#include "Lowering.h"

namespace ember::npu_backend {
namespace {

size_t normalizedAxis(int64_t axis, size_t rank) { return size_t(axis < 0 ? axis + int64_t(rank) : axis); }

int64_t productFrom(const Dims& dims, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < dims.size(); ++i) p *= dims[i];
  return p;
}

/// Scratchpad bytes of a band of `band` rows of `n` codes: two slots each of
/// the input, the output and (masked) the mask, and the parameter record.
uint64_t bandBytes(int64_t band, int64_t n, bool masked, uint64_t paramBytes) {
  const uint64_t slot = alignUp(uint64_t(band * n), 64);
  return (masked ? 6 : 4) * slot + alignUp(paramBytes, 64);
}

template <typename T>
void put(std::vector<uint8_t>& record, size_t at, T value) {
  std::memcpy(record.data() + at, &value, sizeof(T));
}

/// The element offsets of `operand` (dims right-aligned to `dims`, size-1 dims
/// broadcast) for every element of `dims` in row-major order.
std::vector<int64_t> broadcastOffsets(const Dims& operand, const Dims& dims) {
  const int64_t total = productFrom(dims, 0);
  std::vector<int64_t> offsets(static_cast<size_t>(total), 0);
  const size_t lead = dims.size() - std::min(dims.size(), operand.size());
  const size_t skip = operand.size() - std::min(dims.size(), operand.size());  // leading 1s beyond dims
  for (int64_t index = 0; index < total; ++index) {
    int64_t rest = index, offset = 0, stride = 1;
    for (size_t d = dims.size(); d-- > lead;) {
      const int64_t coord = rest % dims[d], size = operand[skip + d - lead];
      rest /= dims[d];
      offset += (size == 1 ? 0 : coord) * stride;
      stride *= size;
    }
    offsets[size_t(index)] = offset;
  }
  return offsets;
}

const uint8_t* constantBytes(const CompileContext& ctx, const Instruction& inst, size_t operand) {
  auto [root, offset] = ctx.ir().resolve(inst.operands[operand].value);
  if (ctx.ir().regionOf(root) != Region::Constants || !ctx.ir().value(root).payload) return nullptr;
  return static_cast<const uint8_t*>(ctx.ir().value(root).payload->data()) + offset;
}

/// The input viewed as `blocks` blocks of `blockRows` rows of `n` codes; a
/// step's band stays inside one block (the mask's rows are affine in it).
struct RowNormJob {
  const Instruction& inst;
  npu::isa::Opcode opcode;
  int64_t blocks = 1, blockRows = 1, n = 1;
  std::vector<uint8_t> params{};
  /// Masked softmax: the mask rows at `maskDram`, block b's first row at
  /// maskBlockRow[b], consecutive rows `maskRowStep` mask rows apart.
  bool masked = false;
  uint64_t maskDram = 0;
  std::vector<int64_t> maskBlockRow{};
  int64_t maskRowStep = 0;
};

Error jobError(const Instruction& inst, const std::string& what) {
  return makeError("layer '", inst.name, "' (", opName(inst.kind), "): ", what);
}

/// The row-normalisation instruction of one band.
npu::isa::Instruction rowNormInstruction(const RowNormJob& job, int64_t rows, uint64_t src, uint64_t dst,
                                         uint64_t params, uint64_t mask) {
  if (job.opcode == npu::isa::Opcode::LayerNorm)
    return instruction(LayerNormOperands{.src = src,
                                         .dst = dst,
                                         .rows = rows,
                                         .cols = job.n,
                                         .srcStride = job.n,
                                         .dstStride = job.n,
                                         .params = params});
  return instruction(SoftmaxOperands{.masked = job.masked ? 1 : 0,
                                     .src = src,
                                     .dst = dst,
                                     .rows = rows,
                                     .cols = job.n,
                                     .srcStride = job.n,
                                     .dstStride = job.n,
                                     .params = params,
                                     .mask = job.masked ? mask : 0,
                                     .maskStride = job.masked ? job.n : 0});
}

LoadOperands rowsLoad(uint64_t dram, uint64_t sram, int64_t rows, int64_t n, int64_t dramRowStride) {
  LoadOperands d;
  d.dram = dram;
  d.sram = sram;
  d.x = n;
  d.y = rows;
  d.dramYStride = rows > 1 ? dramRowStride : 0;
  d.sramStride = n;
  return d;
}

Expected<LayerInfo> emitRowNorm(CompileContext& ctx, const RowNormJob& job) {
  const Instruction& inst = job.inst;
  const npu::NpuConfig& cfg = ctx.config();
  auto band = planRowNormBand(job.blocks * job.blockRows, job.n, job.masked, job.params.size(), cfg);
  if (!band) return jobError(inst, band.error().message());
  const int64_t bandRows = std::min(*band, job.blockRows);
  Step first;
  const uint64_t paramsDram = ctx.addWeights(job.params.data(), job.params.size());
  auto params = loadConstant(ctx, inst, "params", paramsDram, int64_t(job.params.size()), first);
  if (!params) return params.error();
  const int64_t slotBytes = bandRows * job.n;
  auto inSlots = allocSlots(ctx, inst, "input", 2, slotBytes, 0);
  if (!inSlots) return inSlots.error();
  auto outSlots = allocSlots(ctx, inst, "output", 2, slotBytes, 2);
  if (!outSlots) return outSlots.error();
  std::vector<uint64_t> maskSlots{0, 0};
  if (job.masked) {
    auto slots = allocSlots(ctx, inst, "mask", 2, slotBytes, 1);
    if (!slots) return slots.error();
    maskSlots = *slots;
  }
  const uint64_t src = ctx.addressOf(inst.operands[1].value), dst = ctx.addressOf(inst.operands[0].value);
  uint64_t cycles = 0;
  size_t s = 0;
  for (int64_t b = 0; b < job.blocks; ++b)
    for (int64_t r0 = 0; r0 < job.blockRows; r0 += bandRows, ++s) {
      const int64_t rows = std::min(bandRows, job.blockRows - r0);
      const uint64_t offset = uint64_t((b * job.blockRows + r0) * job.n);
      Step step = s == 0 ? std::exchange(first, Step{}) : Step{};
      step.loads.push_back(instruction(rowsLoad(src + offset, (*inSlots)[s % 2], rows, job.n, job.n)));
      if (job.masked) {
        const int64_t maskRow = job.maskBlockRow[size_t(b)] + r0 * job.maskRowStep;
        step.loads.push_back(instruction(rowsLoad(job.maskDram + uint64_t(maskRow * job.n), maskSlots[s % 2],
                                                  rows, job.n, job.maskRowStep * job.n)));
      }
      step.computes.push_back(
          rowNormInstruction(job, rows, (*inSlots)[s % 2], (*outSlots)[s % 2], *params, maskSlots[s % 2]));
      StoreOperands st;
      st.sram = (*outSlots)[s % 2];
      st.dram = dst + offset;
      st.x = job.n;
      st.y = rows;
      st.dramYStride = rows > 1 ? job.n : 0;
      st.sramStride = job.n;
      step.stores.push_back(instruction(st));
      cycles += std::max(
          {ctx.cost().of(step.loads.back()), ctx.cost().of(step.computes[0]), ctx.cost().of(step.stores[0])});
      ctx.program().addStep(std::move(step));
    }
  if (s == 0) ctx.program().addStep(std::move(first));  // no rows: only the parameters
  std::ostringstream tiles;
  tiles << "bands of " << bandRows << " rows of " << job.n << (job.masked ? ", masked" : "");
  return LayerInfo{dimsStr(operandValue(ctx, inst, 1).type.dims), tiles.str(), cycles};
}

/// softmax's 32-byte record (isa.md): the multipliers of softmaxParams and the output's zero point and range.
std::vector<uint8_t> softmaxRecord(const Type& in, const Type& out) {
  const quant::SoftmaxParams p = quant::softmaxParams(in.scale, out.scale);
  std::vector<uint8_t> record(npu::isa::kSoftmaxParamBytes, 0);
  put<int32_t>(record, 0, p.input.multiplier), put<int32_t>(record, 4, p.input.shift);
  put<int32_t>(record, 8, p.output.multiplier), put<int32_t>(record, 12, p.output.shift);
  put<int8_t>(record, 16, int8_t(out.offset)), put<int8_t>(record, 17, -128), put<int8_t>(record, 18, 127);
  return record;
}

/// The mask broadcast along the softmax axis to `n` keep bytes per row, over
/// the mask's own leading dims (padded to the input's rank); false when every
/// position is kept (no mask needed).
bool materializeMask(CompileContext& ctx, const Instruction& inst, const Dims& dims, RowNormJob& job) {
  const Type& maskType = operandValue(ctx, inst, 2).type;
  const auto* keep = constantBytes(ctx, inst, 2);
  const int64_t maskElements = maskType.numElements();
  if (std::all_of(keep, keep + maskElements, [](uint8_t k) { return k != 0; })) return false;
  Dims maskDims(dims.size() - maskType.dims.size(), 1);
  maskDims.insert(maskDims.end(), maskType.dims.begin(), maskType.dims.end());
  Dims rowDims = maskDims;
  rowDims.back() = job.n;  // the materialized mask: one keep byte per position of a row
  const std::vector<int64_t> from = broadcastOffsets(maskType.dims, rowDims);
  std::vector<uint8_t> rows(from.size());
  for (size_t i = 0; i < from.size(); ++i) rows[i] = keep[from[i]] != 0 ? 1 : 0;
  job.maskDram = ctx.addWeights(rows.data(), rows.size());
  // Mask row of input row (i_0 .. i_{r-2}): sum over d of (maskDims[d] == 1 ? 0 : i_d) * rowStride[d].
  const size_t r = dims.size();
  std::vector<int64_t> rowStride(r, 1);
  for (size_t d = r - 1; d-- > 0;) rowStride[d] = d + 2 < r ? rowStride[d + 1] * maskDims[d + 1] : 1;
  job.maskRowStep = r >= 2 && maskDims[r - 2] != 1 ? rowStride[r - 2] : 0;
  job.maskBlockRow.assign(size_t(job.blocks), 0);
  for (int64_t b = 0; b < job.blocks; ++b) {
    int64_t rest = b, row = 0;
    for (size_t d = r >= 2 ? r - 2 : 0; d-- > 0;) {
      const int64_t coord = rest % dims[d];
      rest /= dims[d];
      row += (maskDims[d] == 1 ? 0 : coord) * rowStride[d];
    }
    job.maskBlockRow[size_t(b)] = row;
  }
  return true;
}

}  // namespace

Expected<int64_t> planRowNormBand(int64_t rows, int64_t n, bool masked, uint64_t paramBytes,
                                  const npu::NpuConfig& config) {
  const int64_t widest = std::min(limits::kVectorCols, limits::kDmaRowElements);
  if (n > widest)
    return makeError("a row of ", n, " elements exceeds the vector unit's and the DMA's ", widest,
                     " (a row is never split)");
  const auto capacity = uint64_t(std::min(config.scratchpadBytes, limits::kScratchpadAddressSpace));
  if (bandBytes(1, n, masked, paramBytes) > capacity)
    return makeError("a row of ", n,
                     " elements does not fit even alone: ", bandBytes(1, n, masked, paramBytes),
                     " scratchpad bytes (", capacity, " available)");
  const int64_t target = tileBytes(config, masked ? 3 : 2);
  const int64_t most = std::max<int64_t>(1, std::min({rows, limits::kVectorRows, limits::kDmaRowElements}));
  int64_t band = std::clamp<int64_t>(target / n, 1, most);
  while (band > 1 && bandBytes(band, n, masked, paramBytes) > capacity) band = (band + 1) / 2;
  return band;
}

Support softmaxSupport(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto& in = info.inputTypes;
  if (in.size() != 2 || !isI8(in[0]) || in[0].rank() < 1 || in[1].rank() > in[0].rank() ||
      !info.isConstantInput(1))
    return Support::no();
  const size_t axis = normalizedAxis(QuantizedSoftmaxAttrs::from(info.attributes).axis, in[0].rank());
  if (axis + 1 != in[0].rank()) return Support::no("the npu normalises rows along the last axis only");
  const int64_t n = in[0].dims.back();
  if (n < 1) return Support::no();
  return Support::of(planRowNormBand(in[0].numElements() / n, n, true, npu::isa::kSoftmaxParamBytes, config));
}

Support layerNormSupport(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto& in = info.inputTypes;
  if (in.size() != 3 || !isI8(in[0]) || !info.isConstantInput(1) || !info.isConstantInput(2))
    return Support::no();
  const size_t axis = normalizedAxis(QuantizedLayerNormAttrs::from(info.attributes).axis, in[0].rank());
  const int64_t n = productFrom(in[0].dims, axis);
  if (n < 1) return Support::no();
  if (n > npu::isa::kLayerNormMaxChannels)
    return Support::no(std::to_string(n) + " channels exceed the " +
                       std::to_string(npu::isa::kLayerNormMaxChannels) +
                       " the vector unit's parameter buffer holds");
  return Support::of(
      planRowNormBand(in[0].numElements() / n, n, false, npu::isa::layerNormParamBytes(n), config));
}

Expected<LayerInfo> lowerSoftmax(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const Dims& dims = in.dims;
  if (dims.empty() ||
      normalizedAxis(QuantizedSoftmaxAttrs::from(inst.attrs).axis, dims.size()) + 1 != dims.size())
    return jobError(inst, "the npu normalises rows along the last axis only");
  if (!constantBytes(ctx, inst, 2)) return jobError(inst, "the mask must be a constant for the npu");
  RowNormJob job{.inst = inst, .opcode = npu::isa::Opcode::Softmax};
  job.n = dims.back();
  job.params = softmaxRecord(in, out);
  // A mask's rows are affine within the second-to-last dim: bands stay inside it.
  job.blockRows = dims.size() >= 2 ? dims[dims.size() - 2] : 1;
  job.blocks = in.numElements() / std::max<int64_t>(1, job.n * job.blockRows);
  job.masked = job.blocks > 0 && materializeMask(ctx, inst, dims, job);
  if (!job.masked) job.blockRows *= job.blocks, job.blocks = 1;
  auto info = emitRowNorm(ctx, job);
  if (info) info->tiles += " (softmax on the vector unit)";
  return info;
}

Expected<LayerInfo> lowerLayerNorm(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const QuantizedLayerNormAttrs attrs = QuantizedLayerNormAttrs::from(inst.attrs);
  const size_t axis = normalizedAxis(attrs.axis, in.rank());
  const Dims normalized(in.dims.begin() + ptrdiff_t(axis), in.dims.end());
  RowNormJob job{.inst = inst, .opcode = npu::isa::Opcode::LayerNorm};
  job.n = productFrom(normalized, 0);
  if (job.n > npu::isa::kLayerNormMaxChannels)
    return jobError(inst, "rows of " + std::to_string(job.n) + " channels exceed the vector unit's " +
                              std::to_string(npu::isa::kLayerNormMaxChannels) + "-channel parameter buffer");
  job.blockRows = in.numElements() / job.n;
  const auto* gamma = reinterpret_cast<const float*>(constantBytes(ctx, inst, 2));
  const auto* beta = reinterpret_cast<const float*>(constantBytes(ctx, inst, 3));
  if (!gamma || !beta) return jobError(inst, "gamma and beta must be constants for the npu");
  const std::vector<int64_t> gammaAt = broadcastOffsets(operandValue(ctx, inst, 2).type.dims, normalized);
  const std::vector<int64_t> betaAt = broadcastOffsets(operandValue(ctx, inst, 3).type.dims, normalized);
  job.params.assign(npu::isa::layerNormParamBytes(job.n), 0);
  put<int64_t>(job.params, 0, quant::layerNormEpsilon(float(attrs.epsilon), in.scale, job.n));
  put<int8_t>(job.params, 8, int8_t(in.offset)), put<int8_t>(job.params, 9, int8_t(out.offset));
  put<int8_t>(job.params, 10, -128), put<int8_t>(job.params, 11, 127);
  for (int64_t j = 0; j < job.n; ++j) {
    const quant::LayerNormChannel c =
        quant::layerNormChannel(gamma[gammaAt[size_t(j)]], beta[betaAt[size_t(j)]], out.scale);
    const size_t at = npu::isa::kLayerNormHeaderBytes + size_t(j) * npu::isa::kLayerNormChannelBytes;
    put<int32_t>(job.params, at, c.gamma.multiplier), put<int8_t>(job.params, at + 4, int8_t(c.gamma.shift));
    put<int8_t>(job.params, at + 5, c.gammaSign < 0 ? 1 : 0), put<int64_t>(job.params, at + 8, c.beta);
  }
  auto info = emitRowNorm(ctx, job);
  if (info) info->tiles += " (layernorm on the vector unit)";
  return info;
}

}  // namespace ember::npu_backend
