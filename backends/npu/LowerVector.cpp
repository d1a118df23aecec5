// Vector-unit and DMA layers: max pooling (pool), quantized add (eadd),
// lookup tables (lut), Requantize (eadd with a zero second operand) and data
// movement (Copy, Transpose, Slice, Concat: strided DMA through the
// scratchpad, with an identity lut between the load and store slots so the
// three queues pipeline like every other layer). docs/npu/compiler.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "Instructions.h"
#include "IsaLimits.h"
#include "LowerTransformer.h"
#include "Lowering.h"

namespace ember::npu_backend {
namespace {

using quant::FixedPointMultiplier;

Error layerError(const Instruction& inst, const std::string& what) {
  return makeError("layer '", inst.name, "' (", opName(inst.kind), "): ", what);
}

}  // namespace

int64_t tileBytes(const npu::NpuConfig& c, int64_t pairs) {
  const int64_t budget =
      c.scratchpadBanks > pairs ? c.bankBytes() / 2 : (c.scratchpadBytes - 1024) / (2 * pairs);
  // A tile is one DMA row and one vector row.
  const int64_t widest = std::min(limits::kDmaRowElements, limits::kVectorCols);
  return std::max<int64_t>(64, std::min<int64_t>(widest, budget) / 64 * 64);
}

namespace {

/// A strided block: elements at base + i*strideA + j*strideB, i < a, j < b.
struct Block {
  uint64_t base;
  int64_t a, b, strideA, strideB;
};

/// The DMA moving a block to or from `sram` (dense, a x b, row-major): a
/// LoadOperands or a StoreOperands (the same DMA fields).
template <class DmaOperands>
Expected<DmaOperands> blockDma(const Block& blk, uint64_t sram) {
  DmaOperands d;
  d.sram = sram;
  if (blk.strideB == 1 || blk.b == 1) {
    d.x = blk.b;
    d.y = blk.a;
    d.dramYStride = blk.a > 1 ? blk.strideA : 0;
    d.sramStride = blk.b;
  } else {
    d.x = 1;
    d.y = blk.b;
    d.dramYStride = blk.strideB;
    d.z = blk.a;
    d.dramZStride = blk.a > 1 ? blk.strideA : 0;
    d.sramStride = 1;
  }
  if (d.dramYStride < 0 || d.dramZStride < 0) return makeError("a negative stride (reversed slice)");
  if (d.dramYStride > limits::kDramStride || d.dramZStride > limits::kDramStride)
    return makeError("a DRAM stride beyond 24 bits");
  d.dram = blk.base;
  return d;
}

/// A copy of `dims` elements from src to dst with per-dim element strides.
struct StridedCopy {
  std::vector<int64_t> dims, src, dst;
  uint64_t srcBase = 0, dstBase = 0;
};

/// Merges dims that are contiguous on both sides and drops unit dims.
void collapse(StridedCopy& c) {
  StridedCopy out;
  out.srcBase = c.srcBase, out.dstBase = c.dstBase;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    if (c.dims[i] == 1) continue;
    if (!out.dims.empty() && out.src.back() == c.src[i] * c.dims[i] &&
        out.dst.back() == c.dst[i] * c.dims[i]) {
      out.dims.back() *= c.dims[i];
      out.src.back() = c.src[i];
      out.dst.back() = c.dst[i];
      continue;
    }
    out.dims.push_back(c.dims[i]);
    out.src.push_back(c.src[i]);
    out.dst.push_back(c.dst[i]);
  }
  while (out.dims.size() < 2) {
    out.dims.insert(out.dims.begin(), 1);
    out.src.insert(out.src.begin(), 0);
    out.dst.insert(out.dst.begin(), 0);
  }
  c = out;
}

/// Emits one step per tile of a strided copy: load, identity lut, store.
Error emitStridedCopy(CompileContext& ctx, const Instruction& inst, StridedCopy copy,
                      const std::array<uint64_t, 2>& inSlots, const std::array<uint64_t, 2>& outSlots,
                      uint64_t table, int64_t tile, size_t& stepIndex, uint64_t& cycles,
                      std::vector<npu::isa::Instruction>& prelude) {
  collapse(copy);
  const size_t r = copy.dims.size();
  const int64_t bDim = copy.dims[r - 1], aDim = copy.dims[r - 2];
  const int64_t bChunk = std::min(bDim, tile);
  const int64_t aChunk = std::max<int64_t>(1, std::min(aDim, tile / bChunk));
  std::vector<int64_t> outer(copy.dims.begin(), copy.dims.end() - 2);
  const int64_t outerCount = std::accumulate(outer.begin(), outer.end(), int64_t(1), std::multiplies<>());
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t rem = o, srcOff = 0, dstOff = 0;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t i = rem % outer[d];
      rem /= outer[d];
      srcOff += i * copy.src[d];
      dstOff += i * copy.dst[d];
    }
    for (int64_t a0 = 0; a0 < aDim; a0 += aChunk)
      for (int64_t b0 = 0; b0 < bDim; b0 += bChunk) {
        const int64_t a = std::min(aChunk, aDim - a0), b = std::min(bChunk, bDim - b0);
        const int64_t srcAt = srcOff + a0 * copy.src[r - 2] + b0 * copy.src[r - 1];
        const int64_t dstAt = dstOff + a0 * copy.dst[r - 2] + b0 * copy.dst[r - 1];
        if (srcAt < 0 || dstAt < 0)
          return layerError(inst, "a negative stride (reversed slice) is not supported");
        Step step;
        step.loads = std::move(prelude);  // constants of the layer travel with the first tile
        prelude.clear();
        const uint64_t in = inSlots[stepIndex % 2], out = outSlots[stepIndex % 2];
        auto load = blockDma<LoadOperands>(
            {copy.srcBase + uint64_t(srcAt), a, b, copy.src[r - 2], copy.src[r - 1]}, in);
        if (!load) return layerError(inst, load.error().message());
        auto store = blockDma<StoreOperands>(
            {copy.dstBase + uint64_t(dstAt), a, b, copy.dst[r - 2], copy.dst[r - 1]}, out);
        if (!store) return layerError(inst, store.error().message());
        step.loads.push_back(instruction(*load));
        step.computes.push_back(instruction(LutOperands{
            .src = in, .dst = out, .rows = a, .cols = b, .srcStride = b, .dstStride = b, .table = table}));
        step.stores.push_back(instruction(*store));
        cycles += std::max(
            {ctx.cost().of(step.loads[0]), ctx.cost().of(step.computes[0]), ctx.cost().of(step.stores[0])});
        ctx.program().addStep(std::move(step));
        ++stepIndex;
      }
  }
  return Error::success();
}

std::vector<int64_t> contiguousStrides(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

}  // namespace

Expected<std::vector<uint64_t>> allocSlots(CompileContext& ctx, const Instruction& inst,
                                           const std::string& role, int count, int64_t bytes, int bank) {
  std::vector<uint64_t> slots;
  for (int i = 0; i < count; ++i) {
    auto a = ctx.sram().allocScratchpad(inst.name + "." + role + "[" + std::to_string(i) + "]",
                                        uint64_t(bytes), bank);
    if (!a) return layerError(inst, "scratchpad allocation failed for " + role);
    slots.push_back(*a);
  }
  return slots;
}

Expected<uint64_t> loadConstant(CompileContext& ctx, const Instruction& inst, const std::string& role,
                                uint64_t dram, int64_t bytes, Step& step) {
  auto slot = allocSlots(ctx, inst, role, 1, bytes, int(ctx.config().scratchpadBanks) - 1);
  if (!slot) return slot.error();
  LoadOperands d;
  d.dram = dram;
  d.sram = (*slot)[0];
  d.x = bytes;
  d.sramStride = bytes;
  step.loads.push_back(instruction(d));
  return (*slot)[0];
}

namespace {

std::string dimsOf(const Type& t) { return dimsStr(t.dims); }

/// Max pooling's tiling: of the bands whose double-buffered input and output
/// fit, the one of fewest estimated cycles (`best`); 0 when none fits.
int64_t maxPoolBandRows(CompileContext& ctx, const ConvGeometry& g, uint64_t& best) {
  const npu::NpuConfig& cfg = ctx.config();
  const int64_t rowBytes = g.rowBytes();
  int64_t bandRows = 0;
  for (int64_t b = 1; b <= g.oh; ++b) {
    const int64_t bytes = 2 * int64_t(alignUp(uint64_t(g.bandInputRows(b) * rowBytes), 64)) +
                          2 * int64_t(alignUp(uint64_t(b * g.ow * g.c), 64));
    if (bytes > cfg.scratchpadBytes) break;
    const int64_t bands = g.n * ceilDiv(g.oh, b);
    const uint64_t perBand =
        std::max({ctx.cost().load(g.w * g.c, g.bandInputRows(b)), ctx.cost().pool(b, g.ow, g.kh, g.kw, g.c),
                  ctx.cost().store(g.ow * g.c, b)});
    const uint64_t total = uint64_t(bands) * perBand;
    if (total < best) best = total, bandRows = b;
  }
  return bandRows;
}

/// A band of max pooling: `rows` output rows from `oy0` of image `img`, in
/// slots of `allocRows` input rows; a slot's first use fills its padding columns.
struct PoolBand {
  int64_t img, oy0, rows, allocRows;
  bool firstUseOfSlot;
};

/// The band's input rows into `slot`, padded with -128 (below every int8).
Error loadPoolBand(CompileContext& ctx, const Instruction& inst, const ConvGeometry& g, const PoolBand& band,
                   uint64_t input, uint64_t slot, Step& step) {
  const int64_t rowBytes = g.rowBytes(), rightPad = g.padW() - g.pl - g.w;
  if (band.firstUseOfSlot)
    for (auto [col, width] : {std::pair<int64_t, int64_t>{0, g.pl}, {g.pl + g.w, rightPad}}) {
      if (width <= 0) continue;
      LoadOperands fill;
      fill.dram = ctx.fillRegion(-128, uint64_t(width * g.c));
      fill.sram = slot + uint64_t(col * g.c);
      fill.x = width * g.c;
      fill.y = band.allocRows;
      fill.sramStride = rowBytes;
      step.loads.push_back(instruction(fill));
    }
  const int64_t inRows = g.bandInputRows(band.rows), py0 = band.oy0 * g.sh;
  const int64_t top = std::clamp<int64_t>(g.pt - py0, 0, inRows);
  const int64_t realStart = std::max<int64_t>(py0 - g.pt, 0);
  const int64_t realRows = std::max<int64_t>(std::min<int64_t>(py0 + inRows - g.pt, g.h) - realStart, 0);
  LoadOperands data;
  data.sram = slot + uint64_t(g.pl * g.c);
  data.x = g.w * g.c;
  data.sramStride = rowBytes;
  if (realRows > 0) {
    data.dram = input + uint64_t(((band.img * g.h + realStart) * g.w) * g.c);
    data.y = realRows;
    data.dramYStride = g.w * g.c;
    data.padTop = top;
    data.padBottom = inRows - top - realRows;
    data.padValue = -128;
    if (data.padTop > limits::kDmaPadRows || data.padBottom > limits::kDmaPadRows)
      return layerError(inst, "padding of more than " + std::to_string(limits::kDmaPadRows) + " rows");
  } else {
    data.dram = ctx.fillRegion(-128, uint64_t(g.w * g.c));
    data.y = inRows;
  }
  step.loads.push_back(instruction(data));
  return Error::success();
}

}  // namespace

Expected<LayerInfo> lowerMaxPool(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const MaxPoolAttrs attrs = MaxPoolAttrs::from(inst.attrs);
  const auto &kernel = attrs.kernel, &strides = attrs.strides, &pads = attrs.pads, &dil = attrs.dilations;
  if (dil[0] != 1 || dil[1] != 1) return layerError(inst, "dilated max pooling is not supported");
  if (kernel[0] > limits::kPoolWindow || kernel[1] > limits::kPoolWindow ||
      strides[0] > limits::kPoolStride || strides[1] > limits::kPoolStride)
    return layerError(inst, "pooling windows are limited to " + std::to_string(limits::kPoolWindow) +
                                " and strides to " + std::to_string(limits::kPoolStride));
  ConvGeometry g;
  g.n = in.dims[0], g.h = in.dims[1], g.w = in.dims[2], g.c = in.dims[3];
  g.oh = out.dims[1], g.ow = out.dims[2], g.o = g.c;
  g.kh = kernel[0], g.kw = kernel[1], g.sh = strides[0], g.sw = strides[1];
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  const int64_t rowBytes = g.rowBytes();
  if (rowBytes > limits::kDmaRowElements)
    return layerError(inst, "a padded input row exceeds the DMA's 16-bit row size");
  uint64_t best = UINT64_MAX;
  const int64_t bandRows = maxPoolBandRows(ctx, g, best);
  if (bandRows == 0) return layerError(inst, "one output row does not fit the scratchpad");
  const int64_t allocRows = g.bandInputRows(bandRows);
  auto inSlots = allocSlots(ctx, inst, "input", 2, allocRows * rowBytes, -1);
  if (!inSlots) return inSlots.error();
  auto outSlots = allocSlots(ctx, inst, "output", 2, bandRows * g.ow * g.c, -1);
  if (!outSlots) return outSlots.error();
  const uint64_t input = ctx.addressOf(inst.operands[1].value),
                 output = ctx.addressOf(inst.operands[0].value);
  size_t s = 0;
  for (int64_t img = 0; img < g.n; ++img)
    for (int64_t oy0 = 0; oy0 < g.oh; oy0 += bandRows, ++s) {
      const int64_t b = std::min(bandRows, g.oh - oy0);
      const uint64_t slot = (*inSlots)[s % 2], outSlot = (*outSlots)[s % 2];
      Step step;
      EMBER_RETURN_IF_ERROR(loadPoolBand(ctx, inst, g, {img, oy0, b, allocRows, s < 2}, input, slot, step));
      PoolOperands p;
      p.kh = g.kh, p.kw = g.kw, p.sh = g.sh, p.sw = g.sw, p.outH = b, p.outW = g.ow, p.c = g.c;
      p.src = slot, p.srcStride = rowBytes, p.dst = outSlot, p.dstStride = g.ow * g.c;
      step.computes.push_back(instruction(p));
      StoreOperands st;
      st.sram = outSlot;
      st.dram = output + uint64_t(((img * g.oh + oy0) * g.ow) * g.c);
      st.x = g.ow * g.c;
      st.y = b;
      st.dramYStride = g.ow * g.c;
      st.sramStride = g.ow * g.c;
      if (st.x > limits::kDmaRowElements)
        return layerError(inst, "an output row exceeds the DMA's 16-bit row size");
      step.stores.push_back(instruction(st));
      ctx.program().addStep(std::move(step));
    }
  std::ostringstream tiles;
  tiles << "band=" << bandRows << " rows";
  return LayerInfo{dimsOf(in) + " -> " + dimsOf(out), tiles.str(), best};
}

namespace {

/// How an eadd operand maps onto the output viewed as [rows, cols]: the full
/// tensor, or one row broadcast over every row.
struct AddOperand {
  bool row = false;
};

/// Output viewed as [rows, cols] with each operand full or a broadcast row;
/// false when the broadcast has another form.
bool addLayout(const Dims& out, const Dims& a, const Dims& b, int64_t& rows, int64_t& cols, AddOperand& ea,
               AddOperand& eb) {
  auto padded = [&](const Dims& d) {
    Dims p(out.size() - std::min(out.size(), d.size()), 1);
    p.insert(p.end(), d.begin(), d.end());
    return p;
  };
  const Dims pa = padded(a), pb = padded(b);
  const int64_t total = std::accumulate(out.begin(), out.end(), int64_t(1), std::multiplies<>());
  auto rowSplit = [&](const Dims& p) -> int64_t {  // first axis of the row, or -1
    for (size_t s = 0; s <= out.size(); ++s) {
      bool ok = true;
      for (size_t i = 0; i < out.size(); ++i) ok = ok && (i < s ? p[i] == 1 : p[i] == out[i]);
      if (ok) return int64_t(s);
    }
    return -1;
  };
  const int64_t sa = rowSplit(pa), sb = rowSplit(pb);
  if (sa < 0 || sb < 0) return false;
  if (sa == 0 && sb == 0) {
    rows = 1, cols = total;
    return true;
  }
  if (sa != 0 && sb != 0) return false;
  const int64_t split = std::max(sa, sb);
  cols = std::accumulate(out.begin() + split, out.end(), int64_t(1), std::multiplies<>());
  rows = total / std::max<int64_t>(cols, 1);
  ea.row = sa != 0;
  eb.row = sb != 0;
  return true;
}

}  // namespace

bool addBroadcastSupported(const Dims& out, const Dims& a, const Dims& b) {
  int64_t rows = 0, cols = 0;
  AddOperand ea, eb;
  return addLayout(out, a, b, rows, cols, ea, eb) && (rows == 1 || cols <= limits::kVectorCols);
}

namespace {

/// eadd over the output viewed as [rows, cols]; `params` is the 32-byte record.
Expected<LayerInfo> emitEAdd(CompileContext& ctx, const Instruction& inst, uint64_t a, bool aRow, uint64_t b,
                             bool bRow, uint64_t out, int64_t rows, int64_t cols,
                             const std::vector<uint8_t>& params) {
  const npu::NpuConfig& cfg = ctx.config();
  const int64_t tile = tileBytes(cfg, 3);
  const bool flat = rows == 1;
  const int64_t rowLen = flat ? std::min(cols, tile) : cols;
  if (!flat && rowLen > tile) return layerError(inst, "a broadcast row does not fit the scratchpad");
  const int64_t rowsPerTile = flat ? 1 : std::max<int64_t>(1, tile / rowLen);
  const uint64_t paramsDram = ctx.addWeights(params.data(), params.size());
  Step first;
  auto paramSlot = loadConstant(ctx, inst, "params", paramsDram, int64_t(params.size()), first);
  if (!paramSlot) return paramSlot.error();
  // A broadcast row is loaded once.
  uint64_t rowSlot = 0;
  if (aRow || bRow) {
    auto slot = loadConstant(ctx, inst, "row", aRow ? a : b, cols, first);
    if (!slot) return slot.error();
    rowSlot = *slot;
  }
  auto aSlots = allocSlots(ctx, inst, "a", 2, rowsPerTile * rowLen, 0);
  if (!aSlots) return aSlots.error();
  auto bSlots = allocSlots(ctx, inst, "b", 2, rowsPerTile * rowLen, 1);
  if (!bSlots) return bSlots.error();
  auto outSlots = allocSlots(ctx, inst, "output", 2, rowsPerTile * rowLen, 2);
  if (!outSlots) return outSlots.error();
  uint64_t cycles = 0;
  size_t s = 0;
  const int64_t total = flat ? cols : rows;
  const int64_t per = flat ? rowLen : rowsPerTile;
  for (int64_t i0 = 0; i0 < total; i0 += per, ++s) {
    const int64_t count = std::min(per, total - i0);
    const int64_t r = flat ? 1 : count, c = flat ? count : cols;
    const uint64_t offset = uint64_t(flat ? i0 : i0 * cols);
    Step step = s == 0 ? std::exchange(first, Step{}) : Step{};
    uint64_t aAddr = rowSlot, bAddr = rowSlot;
    for (auto [full, dram, slots, addr] :
         {std::tuple{!aRow, a, &*aSlots, &aAddr}, std::tuple{!bRow, b, &*bSlots, &bAddr}}) {
      if (!full) continue;
      LoadOperands d;
      d.dram = dram + offset;
      d.sram = (*slots)[s % 2];
      d.x = r * c;
      d.sramStride = r * c;
      step.loads.push_back(instruction(d));
      *addr = (*slots)[s % 2];
    }
    const uint64_t dst = (*outSlots)[s % 2];
    step.computes.push_back(instruction(EAddOperands{.a = aAddr,
                                                     .b = bAddr,
                                                     .rows = r,
                                                     .cols = c,
                                                     .aStride = aRow ? 0 : c,
                                                     .bStride = bRow ? 0 : c,
                                                     .dst = dst,
                                                     .dstStride = c,
                                                     .params = *paramSlot}));
    StoreOperands st;
    st.sram = dst;
    st.dram = out + offset;
    st.x = r * c;
    st.sramStride = r * c;
    step.stores.push_back(instruction(st));
    cycles += std::max({ctx.cost().load(r * c, 1), ctx.cost().eadd(r, c), ctx.cost().store(r * c, 1)});
    ctx.program().addStep(std::move(step));
  }
  std::ostringstream tiles;
  tiles << (flat ? "flat" : "rows") << " tiles of " << per << (flat ? " bytes" : " rows");
  return LayerInfo{"", tiles.str(), cycles};
}

void putI32(std::vector<uint8_t>& p, size_t at, int32_t v) { std::memcpy(p.data() + at, &v, 4); }

std::vector<uint8_t> eaddParams(FixedPointMultiplier a, FixedPointMultiplier b, FixedPointMultiplier out,
                                int32_t zeroA, int32_t zeroB, int32_t zeroOut, int32_t lo, int32_t hi) {
  std::vector<uint8_t> p(npu::isa::kEAddParamBytes, 0);
  putI32(p, 0, a.multiplier), putI32(p, 4, a.shift), putI32(p, 8, b.multiplier), putI32(p, 12, b.shift);
  putI32(p, 16, out.multiplier), putI32(p, 20, out.shift);
  p[24] = uint8_t(int8_t(zeroA)), p[25] = uint8_t(int8_t(zeroB)), p[26] = uint8_t(int8_t(zeroOut));
  p[27] = uint8_t(int8_t(lo)), p[28] = uint8_t(int8_t(hi));
  return p;
}

}  // namespace

std::vector<uint8_t> addParams(const CompileContext& ctx, const Instruction& add) {
  const Type &out = operandValue(ctx, add, 0).type, &lhs = operandValue(ctx, add, 1).type,
             &rhs = operandValue(ctx, add, 2).type;
  const auto m = quant::addMultipliers(lhs.scale, rhs.scale, out.scale);
  const QuantizedAddAttrs attrs = QuantizedAddAttrs::from(add.attrs);
  const quant::QuantRange range = clipRange(out, attrs.clipMin, attrs.clipMax);
  return eaddParams(m.a, m.b, m.out, lhs.offset, rhs.offset, out.offset, range.lo, range.hi);
}

Expected<LayerInfo> lowerAdd(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &lhs = operandValue(ctx, inst, 1).type,
             &rhs = operandValue(ctx, inst, 2).type;
  int64_t rows = 0, cols = 0;
  AddOperand ea, eb;
  if (!addLayout(out.dims, lhs.dims, rhs.dims, rows, cols, ea, eb))
    return layerError(inst, "this broadcast form is not supported");
  const auto params = addParams(ctx, inst);
  auto info = emitEAdd(ctx, inst, ctx.addressOf(inst.operands[1].value), ea.row,
                       ctx.addressOf(inst.operands[2].value), eb.row, ctx.addressOf(inst.operands[0].value),
                       rows, cols, params);
  if (info) info->shape = dimsOf(lhs) + " + " + dimsOf(rhs) + " -> " + dimsOf(out);
  return info;
}

bool requantizeSupported(const Type& in, const Type& out) {
  return quant::rescaleMultiplier(in.scale, out.scale).shift + 19 <= 30;
}

Expected<LayerInfo> lowerRequantize(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  if (!requantizeSupported(in, out)) return layerError(inst, "the rescale multiplier is below 2^-12");
  // eadd with b's multiplier 0: ra = (a - za) * 2^19 exactly, and the output
  // multiplier carries 19 more bits of shift, so the result is rescale()'s.
  const FixedPointMultiplier m = quant::rescaleMultiplier(in.scale, out.scale);
  const FixedPointMultiplier half{int32_t(1) << 30, 0}, zero{0, 0}, outM{m.multiplier, m.shift + 19};
  const auto params = eaddParams(half, zero, outM, in.offset, 0, out.offset, -128, 127);
  const uint64_t src = ctx.addressOf(inst.operands[1].value);
  auto info = emitEAdd(ctx, inst, src, false, src, false, ctx.addressOf(inst.operands[0].value), 1,
                       in.numElements(), params);
  if (info) info->shape = dimsOf(in) + " -> " + out.str();
  return info;
}

Expected<LayerInfo> lowerLookup(CompileContext& ctx, const Instruction& inst) {
  return lowerLookupWithTable(ctx, inst, ctx.addressOf(inst.operands[2].value));
}

Expected<LayerInfo> lowerLookupWithTable(CompileContext& ctx, const Instruction& inst, uint64_t tableDram) {
  const Type& in = operandValue(ctx, inst, 1).type;
  Step first;
  auto table = loadConstant(ctx, inst, "table", tableDram, int64_t(npu::isa::kLutTableBytes), first);
  if (!table) return table.error();
  const int64_t tile = tileBytes(ctx.config(), 2);
  auto inSlots = allocSlots(ctx, inst, "input", 2, tile, 0);
  if (!inSlots) return inSlots.error();
  auto outSlots = allocSlots(ctx, inst, "output", 2, tile, 2);
  if (!outSlots) return outSlots.error();
  const uint64_t src = ctx.addressOf(inst.operands[1].value), dst = ctx.addressOf(inst.operands[0].value);
  const int64_t total = in.numElements();
  uint64_t cycles = 0;
  size_t s = 0;
  for (int64_t i0 = 0; i0 < total; i0 += tile, ++s) {
    const int64_t count = std::min(tile, total - i0);
    Step step = s == 0 ? std::exchange(first, Step{}) : Step{};
    LoadOperands ld;
    ld.dram = src + uint64_t(i0);
    ld.sram = (*inSlots)[s % 2];
    ld.x = count;
    ld.sramStride = count;
    step.loads.push_back(instruction(ld));
    step.computes.push_back(instruction(LutOperands{.src = ld.sram,
                                                    .dst = (*outSlots)[s % 2],
                                                    .rows = 1,
                                                    .cols = count,
                                                    .srcStride = count,
                                                    .dstStride = count,
                                                    .table = *table}));
    StoreOperands st;
    st.sram = (*outSlots)[s % 2];
    st.dram = dst + uint64_t(i0);
    st.x = count;
    st.sramStride = count;
    step.stores.push_back(instruction(st));
    cycles += std::max({ctx.cost().load(count, 1), ctx.cost().lut(1, count), ctx.cost().store(count, 1)});
    ctx.program().addStep(std::move(step));
  }
  return LayerInfo{dimsOf(in), "flat tiles of " + std::to_string(tile) + " bytes", cycles};
}

namespace {

/// The strided copies that a Copy, Transpose, Slice or Concat is made of.
Expected<std::vector<StridedCopy>> stridedCopiesOf(CompileContext& ctx, const Instruction& inst) {
  const Type& out = operandValue(ctx, inst, 0).type;
  std::vector<StridedCopy> copies;
  const uint64_t dst = ctx.addressOf(inst.operands[0].value);
  const std::vector<int64_t> outStrides = contiguousStrides(out.dims);
  switch (inst.kind) {
    case OpKind::Copy: {
      copies.push_back({{out.numElements()}, {1}, {1}, ctx.addressOf(inst.operands[1].value), dst});
      break;
    }
    case OpKind::Transpose: {
      const Type& in = operandValue(ctx, inst, 1).type;
      const std::vector<int64_t> perm = TransposeAttrs::from(inst.attrs).perm;
      const std::vector<int64_t> inStrides = contiguousStrides(in.dims);
      StridedCopy c{out.dims, {}, outStrides, ctx.addressOf(inst.operands[1].value), dst};
      for (int64_t p : perm) c.src.push_back(inStrides[size_t(p)]);
      copies.push_back(c);
      break;
    }
    case OpKind::Slice: {
      const Type& in = operandValue(ctx, inst, 1).type;
      const SliceAttrs slice = SliceAttrs::from(inst.attrs);
      const auto &starts = slice.starts, &steps = slice.steps;
      const std::vector<int64_t> inStrides = contiguousStrides(in.dims);
      int64_t base = 0;
      StridedCopy c{out.dims, {}, outStrides, 0, dst};
      for (size_t d = 0; d < in.dims.size(); ++d) {
        base += starts[d] * inStrides[d];
        c.src.push_back(steps[d] * inStrides[d]);
      }
      if (out.numElements() == 0) break;
      c.srcBase = ctx.addressOf(inst.operands[1].value) + uint64_t(base);
      copies.push_back(c);
      break;
    }
    case OpKind::Concat: {
      const int64_t axis = ConcatAttrs::from(inst.attrs).axis;
      int64_t at = 0;
      for (size_t i = 1; i < inst.operands.size(); ++i) {
        const Type& in = operandValue(ctx, inst, i).type;
        if (in.numElements() > 0)
          copies.push_back({in.dims, contiguousStrides(in.dims), outStrides,
                            ctx.addressOf(inst.operands[i].value),
                            dst + uint64_t(at * outStrides[size_t(axis)])});
        at += in.dims[size_t(axis)];
      }
      break;
    }
    default:
      return layerError(inst, "not a data-movement instruction");
  }
  return copies;
}

}  // namespace

Expected<LayerInfo> lowerDataMovement(CompileContext& ctx, const Instruction& inst) {
  const Type& out = operandValue(ctx, inst, 0).type;
  const int64_t tile = tileBytes(ctx.config(), 2);
  Step first;
  std::array<uint8_t, npu::isa::kLutTableBytes> identity;  // indexed by the int8 input + 128
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = uint8_t(int8_t(int(i) - 128));
  const uint64_t tableDram = ctx.addWeights(identity.data(), identity.size());
  auto table = loadConstant(ctx, inst, "identity", tableDram, int64_t(npu::isa::kLutTableBytes), first);
  if (!table) return table.error();
  auto inSlots = allocSlots(ctx, inst, "input", 2, tile, 0);
  if (!inSlots) return inSlots.error();
  auto outSlots = allocSlots(ctx, inst, "output", 2, tile, 2);
  if (!outSlots) return outSlots.error();
  const std::array<uint64_t, 2> ins{(*inSlots)[0], (*inSlots)[1]}, outs{(*outSlots)[0], (*outSlots)[1]};
  auto copies = stridedCopiesOf(ctx, inst);
  if (!copies) return copies.error();
  size_t stepIndex = 0;
  uint64_t cycles = 0;
  for (const StridedCopy& c : *copies)
    EMBER_RETURN_IF_ERROR(
        emitStridedCopy(ctx, inst, c, ins, outs, *table, tile, stepIndex, cycles, first.loads));
  if (stepIndex == 0) ctx.program().addStep(std::move(first));  // nothing to move
  return LayerInfo{dimsOf(out), "tiles of up to " + std::to_string(tile) + " bytes", cycles};
}

}  // namespace ember::npu_backend
