// QuantizedMatMul with an activation right operand (attention's Q.K^T and
// scores.V, batched over heads) on the matrix engine. docs/npu/compiler.md,
// "Transformers".
//
// The right operand is not known at compile time, so neither can it be packed
// into the weight image nor can its zero point be folded into the bias. Each
// step loads one band of left rows [m, K] and one n-tile of the right operand
// [K, nw] from DRAM (the right operand's rows are already K-major: a Transpose
// before Q.K^T is its own DMA layer) and accumulates, per k-chunk of <= rows:
//   x.w                  the data gemm (preloads the tile),
//   (-zx) . colsum(w)    a gemm of a constant left row (inp_stride 0) on the same weights,
//                        on long bands one row into a spare accumulator row that one
//                        vadd adds to every row (the cheaper by the cost model),
//   (-zw) . rowsum(x)    a gemm of the band against a constant weight row (wgt_stride 0),
// onto bias + K.zx.zw (DMA'd into every row of the tile). Expanding
// (x - zx)(w - zw) gives exactly these terms, and int32 wrapping is a ring
// (docs/quantization.md 2.6), so the sum is the reference's bit for bit. A
// zero point of -128 has no int8 negation: its term is split into 127 + 1.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "Instructions.h"
#include "IsaLimits.h"
#include "LowerTransformer.h"
#include "Lowering.h"

namespace ember::npu_backend {
namespace {

using quant::FixedPointMultiplier;

/// -zero as int8 summands (one, or 127 + 1 for 128); none for a zero point of 0.
std::vector<int8_t> negatedZero(int32_t zero) {
  const int32_t neg = -zero;
  if (neg == 0) return {};
  if (neg <= 127) return {int8_t(neg)};
  return {int8_t(127), int8_t(neg - 127)};
}

/// Whether the weight-stationary array bounds m by the gemm field, not by rows.
int64_t maxGemmRows(const npu::NpuConfig& config) {
  return config.dataflow == npu::Dataflow::WeightStationary ? limits::kGemmRows : config.rows;
}

struct SramNeeds {
  uint64_t scratchpad, accumulator;
};

/// Two slots each of the band, the weight tile and the output tile, the
/// constant rows (two values each at most), and two accumulator tiles of one
/// more row (the (-zx).colsum(w) row, added to every row by one vadd).
SramNeeds needsOf(int64_t m, int64_t k, int64_t nw, const npu::NpuConfig& config) {
  const auto a64 = [](int64_t bytes) { return alignUp(uint64_t(bytes), 64); };
  const int64_t kChunk = std::min(k, config.rows);
  return {2 * (a64(m * k) + a64(k * nw) + a64(m * nw)) + 2 * a64(kChunk) + 2 * a64(nw),
          2 * alignUp(uint64_t((m + 1) * nw), 16)};
}

/// Batch offsets (in matrices) of one operand for every output batch index:
/// the operand's batch dims right-aligned to the output's, size-1 dims broadcast.
std::vector<int64_t> batchOffsets(const Dims& operand, const Dims& out) {
  const size_t outRank = out.size() - 2, rank = operand.size() - 2;
  int64_t total = 1;
  for (size_t i = 0; i < outRank; ++i) total *= out[i];
  std::vector<int64_t> offsets(size_t(total), 0);
  for (int64_t index = 0; index < total; ++index) {
    int64_t rest = index, offset = 0, stride = 1;
    for (size_t d = outRank; d-- > 0;) {
      const int64_t coord = rest % out[d];
      rest /= out[d];
      if (d + rank >= outRank) {
        const int64_t size = operand[d + rank - outRank];
        offset += (size == 1 ? 0 : coord) * stride;
        stride *= size;
      }
    }
    offsets[size_t(index)] = offset;
  }
  return offsets;
}

}  // namespace

Expected<ActivationMatMulPlan> planActivationMatMul(int64_t m, int64_t k, int64_t n,
                                                    const npu::NpuConfig& config) {
  if (k > limits::kDmaRowElements || k > limits::kGemmInputStride)
    return makeError("a reduction of ", k, " exceeds the DMA's row and the gemm's stride fields (",
                     std::min(limits::kDmaRowElements, limits::kGemmInputStride), ")");
  if (n > limits::kDramStride)
    return makeError(n, " columns exceed the DMA's DRAM row stride (", limits::kDramStride, ")");
  ActivationMatMulPlan plan;
  plan.tileCols = std::min(n, config.cols);
  const int64_t capacity = std::min(config.scratchpadBytes, limits::kScratchpadAddressSpace);
  int64_t rows = std::min({m, maxGemmRows(config), limits::kVectorRows, limits::kDmaRowElements});
  for (; rows >= 1; rows = rows == 1 ? 0 : (rows + 1) / 2) {
    const SramNeeds needs = needsOf(rows, k, plan.tileCols, config);
    if (needs.scratchpad <= uint64_t(capacity) &&
        needs.accumulator <= uint64_t(config.accumulatorEntries())) {
      plan.bandRows = rows;
      return plan;
    }
  }
  const SramNeeds one = needsOf(1, k, plan.tileCols, config);
  return makeError("[", m, "x", k, "] x [", k, "x", n,
                   "] does not fit even with one row per step: ", one.scratchpad, " scratchpad bytes (",
                   capacity, " available) and ", one.accumulator, " accumulator entries (",
                   config.accumulatorEntries(), " available)");
}

Support activationMatMulSupport(const NodeInfo& info, const npu::NpuConfig& config) {
  const auto& in = info.inputTypes;
  if (in.size() != 4 || !isI8(in[0]) || !isI8(in[1]) || in[0].rank() < 2 || in[1].rank() < 2)
    return Support::no();
  if (!info.isConstantInput(2) || !info.isConstantInput(3))
    return Support::no("the bias and scales must be constants (they fold at compile time)");
  const Type& out = info.resultTypes[0];
  if (out.rank() < 2 || in[0].rank() > out.rank() || in[1].rank() > out.rank()) return Support::no();
  const int64_t m = in[0].dims[in[0].rank() - 2], k = in[0].dims.back(), n = in[1].dims.back();
  return Support::of(planActivationMatMul(m, k, n, config));
}

namespace {

/// The shapes and layer-wide constants of one activation matmul.
struct ActivationMatMul {
  const Instruction& inst;
  const Type &out, &lhs, &rhs;
  int64_t m, k, n;
  ActivationMatMulPlan plan{};
  int64_t nw = 0, kChunkMax = 0;  ///< the n-tile width and the longest k-chunk
  uint64_t initAddr = 0;          ///< DRAM: bias + K.zx.zw per column
  std::vector<FixedPointMultiplier> multipliers{};
  quant::QuantRange range{};
  std::vector<int8_t> lhsTerms{}, rhsTerms{};  ///< -zx and -zw as int8 summands

  template <typename... Parts>
  Error layerError(Parts&&... parts) const {
    return makeError("layer '", inst.name, "' (QuantizedMatMul): ", std::forward<Parts>(parts)...);
  }
};

/// Bias and scales are constants: bias + K.zx.zw per column (wrapping), and
/// the requantization per run of equal column multipliers.
Error foldColumnConstants(CompileContext& ctx, ActivationMatMul& mm) {
  const auto constant = [&](size_t operand) {
    auto [root, offset] = ctx.ir().resolve(mm.inst.operands[operand].value);
    if (ctx.ir().regionOf(root) != Region::Constants || !ctx.ir().value(root).payload)
      return (const uint8_t*)nullptr;
    return static_cast<const uint8_t*>(ctx.ir().value(root).payload->data()) + offset;
  };
  const auto* bias = reinterpret_cast<const int32_t*>(constant(3));
  const auto* scales = reinterpret_cast<const float*>(constant(4));
  if (!bias || !scales) return mm.layerError("the bias and column scales must be constants for the NPU");
  const int32_t zx = mm.lhs.offset, zw = mm.rhs.offset;
  std::vector<int32_t> initRow(static_cast<size_t>(mm.n));
  mm.multipliers.resize(static_cast<size_t>(mm.n));
  for (int64_t j = 0; j < mm.n; ++j) {
    initRow[size_t(j)] = int32_t(uint32_t(bias[j]) + uint32_t(mm.k) * uint32_t(zx) * uint32_t(zw));
    mm.multipliers[size_t(j)] = quant::outputMultiplier(mm.lhs.scale, scales[j], mm.out.scale);
  }
  mm.initAddr = ctx.addWeights(initRow.data(), initRow.size() * 4);
  const QuantizedMatMulAttrs attrs = QuantizedMatMulAttrs::from(mm.inst.attrs);
  mm.range = clipRange(mm.out, attrs.clipMin, attrs.clipMax);
  mm.lhsTerms = negatedZero(zx), mm.rhsTerms = negatedZero(zw);
  return Error::success();
}

/// The SRAM buffers: two of each band-sized slot, and the constant rows.
struct MatMulSlots {
  std::vector<uint64_t> xSlots, wSlots, outSlots, accTiles, lhsConst, rhsConst;
};

bool tryAllocateMatMulSlots(SramAllocator& sram, const ActivationMatMul& mm, MatMulSlots& slots) {
  const ActivationMatMulPlan& plan = mm.plan;
  const int64_t k = mm.k, nw = mm.nw;
  slots = MatMulSlots{};
  bool ok = true;
  auto spad = [&](std::vector<uint64_t>& into, const std::string& role, int64_t bytes) {
    auto a = sram.allocScratchpad(mm.inst.name + "." + role + "[" + std::to_string(into.size()) + "]",
                                  uint64_t(bytes));
    if (a) into.push_back(*a);
    ok = ok && a.has_value();
  };
  for (int i = 0; i < 2 && ok; ++i) {
    spad(slots.xSlots, "lhs", plan.bandRows * k);
    spad(slots.wSlots, "rhs", k * nw);
    spad(slots.outSlots, "output", plan.bandRows * nw);
    auto acc = sram.allocAccumulator(mm.inst.name + ".acc[" + std::to_string(i) + "]",
                                     uint64_t((plan.bandRows + 1) * nw));
    if (acc) slots.accTiles.push_back(*acc);
    ok = ok && acc.has_value();
  }
  for (size_t i = 0; i < mm.lhsTerms.size() && ok; ++i) spad(slots.lhsConst, "lhs_zero", mm.kChunkMax);
  for (size_t i = 0; i < mm.rhsTerms.size() && ok; ++i) spad(slots.rhsConst, "rhs_zero", nw);
  return ok;
}

/// SRAM: the plan's sizes; packed densely, with a smaller band if the
/// allocator's placement leaves less room than the estimate.
Expected<MatMulSlots> allocateMatMulSlots(CompileContext& ctx, ActivationMatMul& mm) {
  SramAllocator& sram = ctx.sram();
  MatMulSlots slots;
  for (;;) {
    if (tryAllocateMatMulSlots(sram, mm, slots)) return slots;
    sram.rollbackLayer();
    if (mm.plan.bandRows == 1) return mm.layerError("SRAM allocation failed for one row per step");
    mm.plan.bandRows = (mm.plan.bandRows + 1) / 2;
  }
}

/// One step's output tile: a band of rows of one n-tile of one batch matrix,
/// and the slots it uses.
struct MatMulTile {
  size_t batch;
  int64_t n0, m0, rows, cols;
  uint64_t xSlot, wSlot, outSlot, acc, correctionRow;
};

/// The first step's loads of the constant rows of the zero-point terms.
void loadZeroTermRows(CompileContext& ctx, const ActivationMatMul& mm, const MatMulSlots& slots, Step& step) {
  auto loadRow = [&](auto value, int64_t width, uint64_t sram) {
    LoadOperands c;
    c.dram = ctx.fillRegion(value, uint64_t(width));
    c.sram = sram;
    c.x = width;
    c.sramStride = width;
    step.loads.push_back(instruction(c));
  };
  for (size_t i = 0; i < mm.lhsTerms.size(); ++i) loadRow(mm.lhsTerms[i], mm.kChunkMax, slots.lhsConst[i]);
  for (size_t i = 0; i < mm.rhsTerms.size(); ++i) loadRow(mm.rhsTerms[i], mm.nw, slots.rhsConst[i]);
}

/// The band of left rows, the right operand's n-tile and the initial
/// accumulator rows; returns their load cycles.
uint64_t loadTileOperands(CompileContext& ctx, const ActivationMatMul& mm, const MatMulTile& tile,
                          uint64_t lhsAddr, uint64_t rhsAddr, int64_t lhsBatch, int64_t rhsBatch,
                          Step& step) {
  const int64_t k = mm.k, n = mm.n, rows = tile.rows, cols = tile.cols;
  LoadOperands x;  // the band of left rows
  x.dram = lhsAddr + uint64_t((lhsBatch * mm.m + tile.m0) * k);
  x.sram = tile.xSlot;
  x.x = k;
  x.y = rows;
  x.dramYStride = k;
  x.sramStride = k;
  step.loads.push_back(instruction(x));
  LoadOperands w;  // the n-tile of the right operand, K rows of `cols`
  w.dram = rhsAddr + uint64_t(rhsBatch * k * n + tile.n0);
  w.sram = tile.wSlot;
  w.x = cols;
  w.y = k;
  w.dramYStride = n;
  w.sramStride = cols;
  step.loads.push_back(instruction(w));
  LoadOperands init;  // bias + K.zx.zw into every row of the tile (zero DRAM stride)
  init.mem = npu::isa::Memory::Accumulator;
  init.dram = mm.initAddr + uint64_t(tile.n0 * 4);
  init.sram = tile.acc;
  init.x = cols;
  init.y = rows;
  init.dramYStride = 0;
  init.sramStride = cols;
  step.loads.push_back(instruction(init));
  const CostModel& cost = ctx.cost();
  return cost.load(k, rows) + cost.load(cols, k) + cost.load(cols, rows, 1, 4);
}

/// The data gemm and the zero-point gemms of every k-chunk; returns their
/// compute cycles.
uint64_t emitTileGemms(CompileContext& ctx, const ActivationMatMul& mm, const MatMulSlots& slots,
                       const MatMulTile& tile, Step& step) {
  const CostModel& cost = ctx.cost();
  const npu::NpuConfig& cfg = ctx.config();
  const int64_t k = mm.k, rows = tile.rows, cols = tile.cols;
  const std::vector<int8_t>&lhsTerms = mm.lhsTerms, &rhsTerms = mm.rhsTerms;
  uint64_t computeCycles = 0;
  // (-zx).colsum(w) streams every row of the band through the array, or
  // one row into a spare accumulator row that one vadd adds to every row:
  // whichever the cost model says is cheaper (long bands: the row).
  uint64_t streamed = 0, oneRow = cost.vadd(rows, cols);
  for (int64_t k0 = 0; k0 < k; k0 += cfg.rows) {
    streamed += lhsTerms.size() * cost.gemm(rows, std::min(cfg.rows, k - k0), cols, false);
    oneRow += lhsTerms.size() * cost.gemm(1, std::min(cfg.rows, k - k0), cols, false);
  }
  const bool colsumRow = !lhsTerms.empty() && oneRow < streamed;
  for (int64_t k0 = 0; k0 < k; k0 += cfg.rows) {
    const int64_t kc = std::min(cfg.rows, k - k0);
    GemmOperands data;
    data.accumulate = true;
    data.preload = true;
    data.m = rows, data.k = kc, data.n = cols;
    data.inp = tile.xSlot + uint64_t(k0);
    data.inpStride = k;
    data.wgt = tile.wSlot + uint64_t(k0 * cols);
    data.wgtStride = cols;
    data.acc = tile.acc;
    data.accStride = cols;
    step.computes.push_back(instruction(data));
    computeCycles += cost.gemm(rows, kc, cols, true);
    for (size_t i = 0; i < lhsTerms.size(); ++i) {  // (-zx) . colsum(w): the same weights
      GemmOperands g = data;
      g.preload = false;
      g.inp = slots.lhsConst[i];
      g.inpStride = 0;
      if (colsumRow) {  // one row, broadcast by the vadd below
        g.accumulate = k0 > 0 || i > 0;
        g.m = 1;
        g.acc = tile.correctionRow;
      }
      step.computes.push_back(instruction(g));
      computeCycles += cost.gemm(g.m, kc, cols, false);
    }
    for (size_t i = 0; i < rhsTerms.size(); ++i) {  // (-zw) . rowsum(x): a constant weight row
      GemmOperands g = data;
      g.wgt = slots.rhsConst[i];
      g.wgtStride = 0;
      step.computes.push_back(instruction(g));
      computeCycles += cost.gemm(rows, kc, cols, true);
    }
  }
  if (colsumRow) {  // the colsum row onto every row of the tile
    step.computes.push_back(instruction(VAddOperands{.dst = tile.acc,
                                                     .src = tile.correctionRow,
                                                     .rows = rows,
                                                     .cols = cols,
                                                     .dstStride = cols,
                                                     .srcStride = 0}));
    computeCycles += cost.vadd(rows, cols);
  }
  return computeCycles;
}

/// Requantize per run of equal column multipliers (one run when the right
/// operand has one scale, as an activation does); returns the cycles.
uint64_t emitTileRequant(const CostModel& cost, const ActivationMatMul& mm, const MatMulTile& tile,
                         Step& step) {
  const int64_t cols = tile.cols, rows = tile.rows, n0 = tile.n0;
  uint64_t computeCycles = 0;
  for (int64_t j0 = 0; j0 < cols;) {
    int64_t j1 = j0 + 1;
    const FixedPointMultiplier mj = mm.multipliers[size_t(n0 + j0)];
    while (j1 < cols && mm.multipliers[size_t(n0 + j1)].multiplier == mj.multiplier &&
           mm.multipliers[size_t(n0 + j1)].shift == mj.shift)
      ++j1;
    step.computes.push_back(instruction(RequantOperands{.zeroPoint = mm.out.offset,
                                                        .lo = mm.range.lo,
                                                        .hi = mm.range.hi,
                                                        .src = tile.acc + uint64_t(j0),
                                                        .dst = tile.outSlot + uint64_t(j0),
                                                        .shift = mj.shift,
                                                        .rows = rows,
                                                        .cols = j1 - j0,
                                                        .srcStride = cols,
                                                        .dstStride = cols,
                                                        .multiplier = mj.multiplier}));
    computeCycles += cost.requant(rows, j1 - j0);
    j0 = j1;
  }
  return computeCycles;
}

/// Every step of the layer; returns the estimated cycles.
uint64_t emitMatMulSteps(CompileContext& ctx, const ActivationMatMul& mm, const MatMulSlots& slots) {
  const Instruction& inst = mm.inst;
  const int64_t m = mm.m, n = mm.n, nw = mm.nw, bandRows = mm.plan.bandRows;
  const uint64_t lhsAddr = ctx.addressOf(inst.operands[1].value),
                 rhsAddr = ctx.addressOf(inst.operands[2].value),
                 outAddr = ctx.addressOf(inst.operands[0].value);
  const std::vector<int64_t> lhsBatch = batchOffsets(mm.lhs.dims, mm.out.dims),
                             rhsBatch = batchOffsets(mm.rhs.dims, mm.out.dims);
  const CostModel& cost = ctx.cost();
  uint64_t cycles = 0;
  size_t s = 0;
  for (size_t b = 0; b < lhsBatch.size(); ++b)
    for (int64_t n0 = 0; n0 < n; n0 += nw)
      for (int64_t m0 = 0; m0 < m; m0 += bandRows, ++s) {
        MatMulTile tile{b,
                        n0,
                        m0,
                        std::min(bandRows, m - m0),
                        std::min(nw, n - n0),
                        slots.xSlots[s % 2],
                        slots.wSlots[s % 2],
                        slots.outSlots[s % 2],
                        slots.accTiles[s % 2],
                        0};
        tile.correctionRow = tile.acc + uint64_t(bandRows * nw);
        Step step;
        if (s == 0) loadZeroTermRows(ctx, mm, slots, step);
        const uint64_t loadCycles =
            loadTileOperands(ctx, mm, tile, lhsAddr, rhsAddr, lhsBatch[b], rhsBatch[b], step);
        uint64_t computeCycles = emitTileGemms(ctx, mm, slots, tile, step);
        computeCycles += emitTileRequant(cost, mm, tile, step);
        StoreOperands st;
        st.sram = tile.outSlot;
        st.dram = outAddr + uint64_t((int64_t(b) * m + m0) * n + n0);
        st.x = tile.cols;
        st.y = tile.rows;
        st.dramYStride = n;
        st.sramStride = tile.cols;
        step.stores.push_back(instruction(st));
        cycles += std::max({loadCycles, computeCycles, cost.store(tile.cols, tile.rows)});
        ctx.program().addStep(std::move(step));
      }
  return cycles;
}

}  // namespace

Expected<LayerInfo> lowerActivationMatMul(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &lhs = operandValue(ctx, inst, 1).type,
             &rhs = operandValue(ctx, inst, 2).type;
  const npu::NpuConfig& cfg = ctx.config();
  ActivationMatMul mm{inst, out, lhs, rhs, lhs.dims[lhs.rank() - 2], lhs.dims.back(), rhs.dims.back()};
  auto planned = planActivationMatMul(mm.m, mm.k, mm.n, cfg);
  if (!planned) return mm.layerError(planned.error().message());
  mm.plan = *planned;
  mm.nw = mm.plan.tileCols, mm.kChunkMax = std::min(mm.k, cfg.rows);
  EMBER_RETURN_IF_ERROR(foldColumnConstants(ctx, mm));
  auto slots = allocateMatMulSlots(ctx, mm);
  if (!slots) return slots.error();
  ctx.program().keepVectorsOnComputeQueue();
  const uint64_t cycles = emitMatMulSteps(ctx, mm, *slots);
  std::ostringstream shape, tiles;
  shape << batchOffsets(lhs.dims, out.dims).size() << " x [" << mm.m << "x" << mm.k << "] x [" << mm.k << "x"
        << mm.n << "] (activation rhs)";
  tiles << mm.plan.bandRows << "-row bands, " << mm.nw << "-column tiles, "
        << mm.lhsTerms.size() + mm.rhsTerms.size() << " zero-point gemms per k-chunk";
  return LayerInfo{shape.str(), tiles.str(), cycles};
}

}  // namespace ember::npu_backend
