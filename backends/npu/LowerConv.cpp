// Convolution-shaped layers on the matrix engine: conv (grouped, depthwise),
// matmul with constant weights and average pooling (a depthwise conv of ones).
// docs/npu/compiler.md, "Convolution".
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <tuple>

#include "Instructions.h"
#include "IsaLimits.h"
#include "Lowering.h"
#include "SpaceToDepth.h"

namespace ember::npu_backend {
namespace {

using quant::FixedPointMultiplier;

bool sameMultiplier(FixedPointMultiplier a, FixedPointMultiplier b) {
  return a.multiplier == b.multiplier && a.shift == b.shift;
}

struct Band {
  int64_t image, oy0, rows;
};

/// The weight image of a job: per n-tile a slab of weightRows x width bytes
/// (k-step rows in order), n-tiles back to back, so every block of
/// consecutive n-tiles is one contiguous DMA.
std::vector<int8_t> packWeights(const ConvJob& job, const std::vector<NTile>& tiles,
                                std::vector<int64_t>& slabOffsets) {
  const ConvGeometry& g = job.g;
  const int64_t cg = g.cg(), og = g.og();
  std::vector<int8_t> bytes;
  for (const NTile& tile : tiles) {
    slabOffsets.push_back(int64_t(bytes.size()));
    for (const KStep& s : tile.steps)
      for (int64_t t = 0; t < s.k; ++t) {
        const int64_t kx = s.merged ? (s.f0 + t) / g.c : s.kx;
        const int64_t c = s.merged ? (s.f0 + t) % g.c : s.f0 + t;
        for (int64_t j = 0; j < tile.width; ++j) {
          const int64_t o = tile.o0 + j, group = o / og;
          bytes.push_back(c / cg == group ? int8_t(job.filter(o, s.ky, kx, c - group * cg)) : int8_t(0));
        }
      }
  }
  return bytes;
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream os;
  os << g.n << "x" << g.h << "x" << g.w << "x" << g.c << " -> " << g.n << "x" << g.oh << "x" << g.ow << "x"
     << g.o << " <- " << g.kh << "x" << g.kw << " s" << g.sh << "," << g.sw;
  if (g.group > 1) os << " g" << g.group;
  return os.str();
}

/// Runs [begin, end) of equal values of f over [0, count).
template <typename F>
std::vector<std::pair<int64_t, int64_t>> equalRuns(int64_t count, F&& same) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t start = 0;
  for (int64_t i = 1; i <= count; ++i)
    if (i == count || !same(start, i)) {
      runs.push_back({start, i});
      start = i;
    }
  return runs;
}

}  // namespace

Expected<ConvTiling> fitConv(const ConvGeometry& g, const std::vector<NTile>& tiles, const CostModel& cost) {
  const npu::NpuConfig& cfg = cost.config();
  if (g.rowBytes() > limits::kDmaRowElements || g.w * g.c > limits::kDmaRowElements)
    return makeError("a padded input row of ", g.rowBytes(), " bytes exceeds the DMA's 16-bit row size");
  if (g.sw * g.c > limits::kGemmInputStride)
    return makeError("the gemm input stride ", g.sw * g.c, " exceeds 16 bits");
  if (g.o > limits::kDmaRowElements)
    return makeError(g.o, " output channels exceed the DMA's 16-bit row size");
  auto tiling = searchConvTiling(g, tiles, cost);
  if (!tiling)
    return makeError("no tiling fits the SRAMs (scratchpad ", cfg.scratchpadBytes, " bytes, accumulator ",
                     cfg.accumulatorEntries(), " entries) even with one output row and one ", cfg.cols,
                     "-channel tile per step: ", describe(g));
  return *tiling;
}

Error convFits(const ConvGeometry& g, const npu::NpuConfig& config) {
  const CostModel cost(config);
  auto tiling = fitConv(g, makeNTiles(g, config.rows, config.cols), cost);
  return tiling ? Error::success() : tiling.error();
}

ConvGeometry convGeometry(const Type& out, const Type& in, const Type& filter,
                          const QuantizedConvAttrs& attrs) {
  const std::vector<int64_t>&strides = attrs.strides, &pads = attrs.pads, &dil = attrs.dilations;
  ConvGeometry g;
  g.n = in.dims[0], g.h = in.dims[1], g.w = in.dims[2], g.c = in.dims[3];
  g.oh = out.dims[1], g.ow = out.dims[2], g.o = out.dims[3];
  g.kh = filter.dims[1], g.kw = filter.dims[2];
  g.sh = strides[0], g.sw = strides[1], g.dh = dil[0], g.dw = dil[1];
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  g.group = attrs.group;
  return g;
}

bool gathersStrided1x1(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.pt == 0 && g.pl == 0 && g.pb == 0 && g.pr == 0 && (g.sh > 1 || g.sw > 1);
}

ConvGeometry gatheredGeometry(ConvGeometry g) {
  g.h = g.oh, g.w = g.ow, g.sh = g.sw = 1;
  return g;
}

ConvGeometry matMulGeometry(const Type& lhs, const Type& rhs) {
  ConvGeometry g;
  const int64_t k = lhs.dims.back();
  g.h = g.oh = lhs.numElements() / k;
  g.c = k;
  g.o = rhs.dims.back();
  return g;
}

namespace {

/// The SRAM buffers of one conv layer.
struct ConvSlots {
  /// With a fused max pooling, outSlots are the pooling tiles (two per channel
  /// block, alternating by band) and pooledSlots the stored tiles.
  std::vector<uint64_t> inSlots, wSlots, outSlots, residualSlots, pooledSlots, accTiles;
  std::optional<uint64_t> biasAcc;
  uint64_t residualParams = 0;
  std::optional<uint64_t> preAddSlot;
};

/// One placement attempt: input slots in banks 0 and 1, weights in bank 2,
/// outputs in bank 3 when `bankHints` (fewer bank conflicts between the DMA
/// and the engine), otherwise packed densely (the search checked the total).
bool tryAllocateConvSlots(CompileContext& ctx, const ConvJob& job, const ConvTiling& t,
                          const ConvSramNeeds& needs, bool bankHints, bool accumulatorBankHints,
                          ConvSlots& slots) {
  const ConvGeometry& g = job.g;
  const npu::NpuConfig& cfg = ctx.config();
  SramAllocator& sram = ctx.sram();
  slots.inSlots.clear(), slots.wSlots.clear(), slots.outSlots.clear(), slots.residualSlots.clear();
  slots.pooledSlots.clear();
  bool ok = true;
  auto take = [&](std::vector<uint64_t>& into, const std::string& role, int64_t count, int64_t bytes,
                  int bank, int bankStep = 1, bool awayFromPreviousLayer = false) {
    for (int64_t i = 0; i < count && ok; ++i) {
      auto a =
          sram.allocScratchpad(job.name + "." + role + "[" + std::to_string(i) + "]", uint64_t(bytes),
                               bankHints ? bank + bankStep * int(i) : -1, awayFromPreviousLayer && i == 0);
      if (a) into.push_back(*a);
      ok = ok && a.has_value();
    }
  };
  take(slots.inSlots, "input", needs.inputSlots, needs.bandBytes, 0);
  // The first weight slot (and the bias row) away from the previous
  // layer's buffers, so the first step's weight load can start before that
  // layer ends; the second slot is first loaded after the barrier.
  take(slots.wSlots, "weights", needs.weightSlots, needs.blockWeightBytes, 2, 1, cfg.prefetchWeights);
  // With the epilogue on the vector queue the requant writes one output
  // slot while the gemms stream an input slot: when the second output slot
  // would wrap into input bank 0 (4 banks), both start in bank 3 instead.
  const bool outputsShareBank = t.vectorQueue && cfg.scratchpadBanks <= 4;
  take(slots.outSlots, "output", needs.outSlots, needs.outTileBytes, 3, outputsShareBank ? 0 : 1);
  // The pooled tiles away from the pooling tiles the pool reads.
  const bool manyBanks = cfg.scratchpadBanks >= 8;
  if (g.pool.kh)
    take(slots.pooledSlots, "pooled", 2, needs.pooledTileBytes, manyBanks ? 5 : 2, manyBanks ? 1 : 0);
  if (g.residualAdd) {
    // In place: beside the weights (the engine reads those only while
    // preloading). Out of place with 8+ banks: one slot per bank in the last
    // three, so the DMA filling one and the eadd reading another do not meet;
    // the requant's tile in the last bank (measured best on ResNet-50), or
    // with fewer banks in input bank 1.
    const bool spread = needs.preAddTileBytes > 0 && manyBanks;
    const int lastBank = int(cfg.scratchpadBanks) - 1;
    take(slots.residualSlots, "residual", kResidualSlots, needs.residualTileBytes,
         spread ? lastBank - int(kResidualSlots) + 1 : 2, spread ? 1 : 0);
    if (needs.preAddTileBytes > 0) {
      std::vector<uint64_t> preAdd;
      take(preAdd, "pre_add", 1, needs.preAddTileBytes, manyBanks ? lastBank : 1);
      if (ok) slots.preAddSlot = preAdd[0];
    }
    std::vector<uint64_t> params;
    take(params, "residual_params", 1, int64_t(npu::isa::kEAddParamBytes), int(cfg.scratchpadBanks) - 1);
    if (ok) slots.residualParams = params[0];
  }
  slots.accTiles.clear();
  for (int64_t i = 0; i < needs.accSlots && ok; ++i) {
    // With the vector queue, tile i in bank i (ping-pong between banks).
    const bool bankPerTile = t.vectorQueue && accumulatorBankHints;
    auto a = sram.allocAccumulator(job.name + ".acc[" + std::to_string(i) + "]", uint64_t(needs.accEntries),
                                   bankPerTile ? int(i) : -1);
    if (a) slots.accTiles.push_back(*a);
    ok = ok && a.has_value();
  }
  if (!t.biasByDma)
    slots.biasAcc =
        sram.allocAccumulator(job.name + ".bias", uint64_t(needs.biasEntries), -1, cfg.prefetchWeights);
  return ok && (t.biasByDma || slots.biasAcc);
}

/// Tiles one per accumulator bank can leave no contiguous room for the bias
/// row: then the accumulator is packed densely, the scratchpad still by bank.
Expected<ConvSlots> allocateConvSlots(CompileContext& ctx, const ConvJob& job, const ConvTiling& t,
                                      const ConvSramNeeds& needs) {
  ConvSlots slots;
  SramAllocator& sram = ctx.sram();
  if (!tryAllocateConvSlots(ctx, job, t, needs, true, true, slots)) {
    sram.rollbackLayer();
    if (!tryAllocateConvSlots(ctx, job, t, needs, true, false, slots)) {
      sram.rollbackLayer();
      if (!tryAllocateConvSlots(ctx, job, t, needs, false, false, slots))
        return makeError("layer '", job.name, "': SRAM allocation failed for the chosen tiling (", t.str(),
                         ")");
    }
  }
  return slots;
}

/// Where requantized output rows [firstRow, endRow) of a band land: row r at
/// `base + (r - firstRow) * pitch` pixels of the block's width.
struct RequantDst {
  uint64_t base;
  int64_t pitch, firstRow, endRow;
};

/// One step of the sequence: a band of output rows, a block of n-tiles and a
/// k-part of that block.
struct StepPlan {
  size_t band;
  int64_t block, part;
};

std::vector<Band> convBands(const ConvGeometry& g, const ConvTiling& t) {
  std::vector<Band> bands;
  for (int64_t img = 0; img < g.n; ++img)
    for (int64_t oy = 0; oy < g.oh; oy += t.bandRows)
      bands.push_back({img, oy, std::min(t.bandRows, g.oh - oy)});
  return bands;
}

std::vector<StepPlan> convStepOrder(size_t numBands, int64_t numBlocks, const ConvTiling& t) {
  std::vector<StepPlan> order;
  if (t.order == LoopOrder::BandOuter) {
    for (size_t b = 0; b < numBands; ++b)
      for (int64_t q = 0; q < numBlocks; ++q)
        for (int64_t p = 0; p < t.kParts; ++p) order.push_back({b, q, p});
  } else {
    for (int64_t q = 0; q < numBlocks; ++q)
      for (size_t b = 0; b < numBands; ++b)
        for (int64_t p = 0; p < t.kParts; ++p) order.push_back({b, q, p});
  }
  return order;
}

/// DRAM addresses of a conv layer's constants.
struct ConvConstants {
  std::vector<int64_t> slabOffsets;  ///< per n-tile, into the packed weights
  uint64_t packedBytes = 0, weights = 0, bias = 0, residualParams = 0;
};

/// The n-tiles of one step's block and its output columns.
struct BlockSpan {
  size_t firstTile, lastTile;
  size_t stepBegin, stepEnd;  ///< the k-steps of this part
  int64_t width, c0;          ///< output channels of the block and the first one
};

/// Emits a conv layer's steps: loads, gemms and the requantizing epilogue,
/// tracking which band and weight block each slot holds.
class ConvStepEmitter {
 public:
  ConvStepEmitter(CompileContext& ctx, const ConvJob& job, const std::vector<NTile>& tiles,
                  const ConvTiling& t, const ConvSlots& slots, const ConvConstants& constants)
      : ctx_(ctx),
        job_(job),
        g_(job.g),
        cfg_(ctx.config()),
        tiles_(tiles),
        t_(t),
        slots_(slots),
        constants_(constants) {}

  Error emit(const std::vector<Band>& bands, const std::vector<StepPlan>& order);

 private:
  template <typename... Parts>
  Error layerError(Parts&&... parts) const {
    return makeError("layer '", job_.name, "': ", std::forward<Parts>(parts)...);
  }
  void loadLayerConstants(Step& step) const;
  Error loadBand(Step& step, const Band& band);
  Error loadSpaceToDepthBand(Step& step, const Band& band, int64_t inRows, int64_t top, int64_t realStart,
                             int64_t realRows) const;
  void loadWeights(Step& step, const BlockSpan& span);
  BlockSpan blockSpan(int64_t block, int64_t part) const;
  void emitGemms(Step& step, const BlockSpan& span, int64_t b, int64_t accRowCount, uint64_t accTile) const;
  void emitRequant(Step& step, const BlockSpan& span, const Band& band, uint64_t accTile,
                   const RequantDst& dst) const;
  /// The pooling tile of a band and block: two per block, alternating by band.
  uint64_t poolingTile(size_t bandIndex, int64_t block) const {
    const size_t blocks = slots_.outSlots.size() / 2;
    return slots_.outSlots[(bandIndex % 2) * blocks + size_t(block)];
  }
  void loadPoolPadding(Step& step, const BlockSpan& span, uint64_t tile) const;
  void emitPooledEpilogue(Step& step, const BlockSpan& span, const std::vector<Band>& bands, size_t bandIndex,
                          int64_t block, uint64_t accTile, size_t s) const;
  /// One requant of `rows` x `cols` accumulator entries at `src` (row stride
  /// `stride`) into the output slot at `dst`, with the job's zero point and clip.
  npu::isa::Instruction requant(const FixedPointMultiplier& m, uint64_t src, uint64_t dst, int64_t rows,
                                int64_t cols, int64_t stride) const {
    return instruction(RequantOperands{.zeroPoint = job_.outZero,
                                       .lo = job_.lo,
                                       .hi = job_.hi,
                                       .src = src,
                                       .dst = dst,
                                       .shift = m.shift,
                                       .rows = rows,
                                       .cols = cols,
                                       .srcStride = stride,
                                       .dstStride = stride,
                                       .multiplier = m.multiplier});
  }
  /// A load or a store (LoadOperands, StoreOperands: the same DMA fields).
  template <class DmaOperands>
  DmaOperands outputTileDma(const BlockSpan& span, const Band& band, uint64_t tensor, uint64_t slot) const;

  CompileContext& ctx_;
  const ConvJob& job_;
  const ConvGeometry& g_;
  const npu::NpuConfig& cfg_;
  const std::vector<NTile>& tiles_;
  const ConvTiling& t_;
  const ConvSlots& slots_;
  const ConvConstants& constants_;
  const bool ws_ = cfg_.dataflow == npu::Dataflow::WeightStationary;
  const int64_t maxM_ = ws_ ? limits::kGemmRows : cfg_.rows;
  const int64_t rowBytes_ = g_.rowBytes(), wv_ = g_.virtualWidth();
  const int64_t allocRows_ = g_.bandInputRows(t_.bandRows);
  const int64_t rightPad_ = g_.padW() - g_.pl - g_.w;
  const bool uniformChannels_ = job_.channelMultipliers.size() == 1;
  const int64_t inPixelBytes_ = job_.inPixelBytes ? job_.inPixelBytes : g_.c;
  const int64_t inRowBytes_ = job_.inRowBytes ? job_.inRowBytes : g_.w * g_.c;
  const int64_t inImageBytes_ = job_.inImageBytes ? job_.inImageBytes : g_.h * g_.w * g_.c;
  // What the slots hold: the band and weight block last loaded.
  size_t curBand_ = SIZE_MAX;
  int64_t curBlock_ = -1, curPart_ = -1;
  int inLoads_ = 0, wLoads_ = 0;
  uint64_t inSlot_ = 0, wSlot_ = 0;
};

/// The first step's loads of the bias row (unless it comes per tile by DMA)
/// and the residual add's parameters.
void ConvStepEmitter::loadLayerConstants(Step& step) const {
  if (!t_.biasByDma) {
    LoadOperands bias;
    bias.mem = npu::isa::Memory::Accumulator;
    bias.dram = constants_.bias;
    bias.sram = *slots_.biasAcc;
    bias.x = g_.o;
    bias.y = 1;
    bias.sramStride = g_.o;
    step.loads.push_back(instruction(bias));
  }
  if (g_.residualAdd) {
    LoadOperands params;
    params.dram = constants_.residualParams;
    params.sram = slots_.residualParams;
    params.x = int64_t(job_.residualParams.size());
    params.sramStride = params.x;
    step.loads.push_back(instruction(params));
  }
}

/// The input rows of `band` into the next input slot, with their padding.
Error ConvStepEmitter::loadBand(Step& step, const Band& band) {
  const int slot = inLoads_++ % int(slots_.inSlots.size());
  inSlot_ = slots_.inSlots[size_t(slot)];
  // First use of this slot: its padding columns (2x2 blocks: the band
  // loads write them as DMA padding rows).
  if (inLoads_ <= int(slots_.inSlots.size()) && !job_.spaceToDepthChannels) {
    for (auto [col, width] : {std::pair<int64_t, int64_t>{0, g_.pl}, {g_.pl + g_.w, rightPad_}}) {
      if (width <= 0) continue;
      LoadOperands fill;
      fill.dram = ctx_.fillRegion(int8_t(job_.inZero), uint64_t(width * g_.c));
      fill.sram = inSlot_ + uint64_t(col * g_.c);
      fill.x = width * g_.c;
      fill.y = allocRows_;
      fill.sramStride = rowBytes_;
      step.loads.push_back(instruction(fill));
    }
  }
  const int64_t inRows = g_.bandInputRows(band.rows), py0 = band.oy0 * g_.sh;
  const int64_t top = std::clamp<int64_t>(g_.pt - py0, 0, inRows);
  const int64_t realStart = std::max<int64_t>(py0 - g_.pt, 0);
  const int64_t realEnd = std::min<int64_t>(py0 + inRows - g_.pt, g_.h);
  const int64_t realRows = std::max<int64_t>(realEnd - realStart, 0);
  if (job_.spaceToDepthChannels) return loadSpaceToDepthBand(step, band, inRows, top, realStart, realRows);
  LoadOperands data;
  data.sram = inSlot_ + uint64_t(g_.pl * g_.c);
  data.x = g_.w * g_.c;
  data.sramStride = rowBytes_;
  if (realRows > 0 && inPixelBytes_ != g_.c) {  // subsampled pixels: one DMA row per pixel
    data.dram = job_.input + uint64_t(band.image * inImageBytes_ + realStart * inRowBytes_);
    data.x = g_.c;
    data.y = g_.w;
    data.z = realRows;
    data.dramYStride = inPixelBytes_;
    data.dramZStride = inRowBytes_;
    data.sramStride = g_.c;
  } else if (realRows > 0) {
    const int64_t bottom = inRows - top - realRows;
    if (top > limits::kDmaPadRows || bottom > limits::kDmaPadRows)
      return layerError("padding of more than ", limits::kDmaPadRows, " rows");
    data.dram = job_.input + uint64_t(band.image * inImageBytes_ + realStart * inRowBytes_);
    data.y = realRows;
    data.dramYStride = inRowBytes_;
    data.padTop = top;
    data.padBottom = bottom;
    data.padValue = job_.inZero;
  } else {
    data.dram = ctx_.fillRegion(int8_t(job_.inZero), uint64_t(g_.w * g_.c));
    data.y = inRows;
  }
  step.loads.push_back(instruction(data));
  return Error::success();
}

/// 2x2 blocks: one DMA per block row half (dy), a block's dx pixels (2·C
/// bytes) as one DMA row at a stride of 4·C, the padding columns as padding
/// rows of each plane; padding rows as fills of whole rows.
Error ConvStepEmitter::loadSpaceToDepthBand(Step& step, const Band& band, int64_t inRows, int64_t top,
                                            int64_t realStart, int64_t realRows) const {
  const int64_t c0 = job_.spaceToDepthChannels, bottom = inRows - top - realRows;
  auto fillRows = [&](int64_t firstRow, int64_t count) {
    if (count <= 0) return;
    LoadOperands fill;
    fill.dram = ctx_.fillRegion(int8_t(job_.inZero), uint64_t(rowBytes_));
    fill.sram = inSlot_ + uint64_t(firstRow * rowBytes_);
    fill.x = rowBytes_;
    fill.y = count;
    fill.sramStride = rowBytes_;
    step.loads.push_back(instruction(fill));
  };
  fillRows(0, top);
  fillRows(top + realRows, bottom);
  if (g_.pl > limits::kDmaPadRows || rightPad_ > limits::kDmaPadRows)
    return layerError("padding of more than ", limits::kDmaPadRows, " blocks");
  for (int64_t dy = 0; dy < 2 && realRows > 0; ++dy) {
    LoadOperands half;
    half.dram = job_.input + uint64_t(band.image * inImageBytes_ + (2 * realStart + dy) * 2 * g_.w * c0);
    half.sram = inSlot_ + uint64_t(top * rowBytes_ + dy * 2 * c0);
    half.x = 2 * c0;
    half.y = g_.w;
    half.z = realRows;
    half.dramYStride = 2 * c0;
    half.dramZStride = 4 * g_.w * c0;
    half.sramStride = 4 * c0;
    half.padTop = g_.pl;
    half.padBottom = rightPad_;
    half.padValue = job_.inZero;
    step.loads.push_back(instruction(half));
  }
  return Error::success();
}

BlockSpan ConvStepEmitter::blockSpan(int64_t block, int64_t part) const {
  BlockSpan span;
  span.firstTile = size_t(block) * size_t(t_.tilesPerBlock);
  span.lastTile = std::min(tiles_.size(), span.firstTile + size_t(t_.tilesPerBlock));
  // k-steps of this part: all of them, or one slice of a one-tile block.
  std::tie(span.stepBegin, span.stepEnd) = kPartSteps(tiles_[span.firstTile], t_.kParts, part);
  span.width = 0;
  for (size_t j = span.firstTile; j < span.lastTile; ++j) span.width += tiles_[j].width;
  span.c0 = tiles_[span.firstTile].o0;
  return span;
}

/// The block's weight slabs (this part's rows of them) into the next weight
/// slot, in 1 KiB rows and a remainder.
void ConvStepEmitter::loadWeights(Step& step, const BlockSpan& span) {
  wSlot_ = slots_.wSlots[size_t(wLoads_++ % int(slots_.wSlots.size()))];
  const NTile& first = tiles_[span.firstTile];
  int64_t begin = constants_.slabOffsets[span.firstTile];
  int64_t end =
      span.lastTile < tiles_.size() ? constants_.slabOffsets[span.lastTile] : int64_t(constants_.packedBytes);
  if (t_.kParts > 1) {
    end = begin + kPartRows(first, 0, span.stepEnd) * first.width;
    begin += kPartRows(first, 0, span.stepBegin) * first.width;
  }
  const int64_t bytes = end - begin, chunk = 1024;
  if (bytes / chunk > 0) {
    LoadOperands w;
    w.dram = constants_.weights + uint64_t(begin);
    w.sram = wSlot_;
    w.x = chunk;
    w.y = bytes / chunk;
    w.dramYStride = chunk;
    w.sramStride = chunk;
    step.loads.push_back(instruction(w));
  }
  if (bytes % chunk) {
    LoadOperands w;
    w.dram = constants_.weights + uint64_t(begin + bytes / chunk * chunk);
    w.sram = wSlot_ + uint64_t(bytes / chunk * chunk);
    w.x = bytes % chunk;
    w.y = 1;
    w.sramStride = bytes % chunk;
    step.loads.push_back(instruction(w));
  }
}

/// The gemms of a step: per n-tile and k-step, over the band's `b` rows.
void ConvStepEmitter::emitGemms(Step& step, const BlockSpan& span, int64_t b, int64_t accRowCount,
                                uint64_t accTile) const {
  int64_t col = 0;
  for (size_t j = span.firstTile; j < span.lastTile; ++j) {
    const NTile& tile = tiles_[j];
    const uint64_t slab =
        wSlot_ + uint64_t(constants_.slabOffsets[j] - constants_.slabOffsets[span.firstTile]);
    const size_t s0 = t_.kParts > 1 ? span.stepBegin : 0,
                 s1 = t_.kParts > 1 ? span.stepEnd : tile.steps.size();
    int64_t weightRow = 0;  // within the loaded part
    for (size_t si = s0; si < s1; ++si) {
      const KStep& ks = tile.steps[si];
      GemmOperands gm;
      gm.k = ks.k;
      gm.n = tile.width;
      gm.wgt = slab + uint64_t(weightRow * tile.width);
      gm.wgtStride = tile.width;
      gm.inpStride = g_.sw * g_.c;
      gm.accStride = span.width;
      gm.accumulate = si > 0 || t_.biasByDma;
      // matrix_engine.bias_init: the first k-step starts from the bias row.
      gm.biasInit = !gm.accumulate && cfg_.biasInit;
      gm.bias = gm.biasInit ? *slots_.biasAcc + uint64_t(span.c0 + col) : 0;
      const int64_t passes = t_.multiRow ? 1 : b;
      const int64_t mTotal = t_.multiRow ? accRowCount : g_.ow;
      bool first = true;
      for (int64_t r = 0; r < passes; ++r)
        for (int64_t m0 = 0; m0 < mTotal; m0 += maxM_) {
          gm.m = std::min(maxM_, mTotal - m0);
          gm.inp = inSlot_ + uint64_t(r * g_.sh * rowBytes_ + ks.offset + m0 * g_.sw * g_.c);
          gm.acc = accTile + uint64_t((r * g_.ow + m0) * span.width + col);
          gm.preload = !ws_ || first;
          first = false;
          step.computes.push_back(instruction(gm));
        }
      weightRow += ks.k;
    }
    col += tile.width;
  }
}

/// Requantizes the accumulator tile into the output slot, one requant per
/// run of equal multipliers (per channel, or per position for pooling).
void ConvStepEmitter::emitRequant(Step& step, const BlockSpan& span, const Band& band, uint64_t accTile,
                                  const RequantDst& dst) const {
  const int64_t blockWidth = span.width, blockC0 = span.c0, b = band.rows;
  const auto channelRuns = equalRuns(blockWidth, [&](int64_t a, int64_t c) {
    return uniformChannels_ || sameMultiplier(job_.channelMultipliers[size_t(blockC0 + a)],
                                              job_.channelMultipliers[size_t(blockC0 + c)]);
  });
  auto channelMultiplier = [&](int64_t c) {
    return job_.channelMultipliers[uniformChannels_ ? 0 : size_t(blockC0 + c)];
  };
  const bool dense =
      (!t_.multiRow || wv_ == g_.ow) && dst.pitch == g_.ow && dst.firstRow == 0 && dst.endRow == b;
  if (dense && !job_.positionMultiplier) {
    for (auto [c0, c1] : channelRuns) {
      const FixedPointMultiplier m = channelMultiplier(c0);
      step.computes.push_back(
          requant(m, accTile + uint64_t(c0), dst.base + uint64_t(c0), b * g_.ow, c1 - c0, blockWidth));
    }
    return;
  }
  for (int64_t r = dst.firstRow; r < dst.endRow; ++r) {
    const int64_t accRow = t_.multiRow ? r * wv_ : r * g_.ow;
    std::vector<std::pair<int64_t, int64_t>> positionRuns{{0, g_.ow}};
    if (job_.positionMultiplier)
      positionRuns = equalRuns(g_.ow, [&](int64_t a, int64_t c) {
        return sameMultiplier(job_.positionMultiplier(band.oy0 + r, a),
                              job_.positionMultiplier(band.oy0 + r, c));
      });
    for (auto [x0, x1] : positionRuns)
      for (auto [c0, c1] : channelRuns) {
        const FixedPointMultiplier m =
            job_.positionMultiplier ? job_.positionMultiplier(band.oy0 + r, x0) : channelMultiplier(c0);
        step.computes.push_back(
            requant(m, accTile + uint64_t((accRow + x0) * blockWidth + c0),
                    dst.base + uint64_t(((r - dst.firstRow) * dst.pitch + x0) * blockWidth + c0), x1 - x0,
                    c1 - c0, blockWidth));
      }
  }
}

/// The band's rows of this block in an NHWC tensor shaped like the output.
template <class DmaOperands>
DmaOperands ConvStepEmitter::outputTileDma(const BlockSpan& span, const Band& band, uint64_t tensor,
                                           uint64_t slot) const {
  const int64_t blockWidth = span.width;
  DmaOperands d;
  d.sram = slot;
  d.dram = tensor + uint64_t(((band.image * g_.oh + band.oy0) * g_.ow) * g_.o + span.c0);
  if (blockWidth == g_.o && g_.ow * g_.o <= limits::kDmaRowElements) {
    d.x = g_.ow * g_.o;
    d.y = band.rows;
    d.dramYStride = g_.ow * g_.o;
    d.sramStride = g_.ow * g_.o;
  } else {
    d.x = blockWidth;
    d.y = g_.ow;
    d.z = band.rows;
    d.sramStride = blockWidth;
    d.dramYStride = g_.o;
    d.dramZStride = g_.ow * g_.o;
  }
  return d;
}

/// A fused pooling's tile: its -128 padding columns, written at its first use.
void ConvStepEmitter::loadPoolPadding(Step& step, const BlockSpan& span, uint64_t tile) const {
  const auto& p = g_.pool;
  const int64_t tileWidth = p.tileWidth(g_.ow);
  for (auto [col, width] : {std::pair<int64_t, int64_t>{0, p.pl}, {p.pl + g_.ow, p.pr}}) {
    if (width <= 0) continue;
    LoadOperands fill;
    fill.dram = ctx_.fillRegion(-128, uint64_t(width * span.width));
    fill.sram = tile + uint64_t(col * span.width);
    fill.x = width * span.width;
    fill.y = p.pt + t_.bandRows;
    fill.sramStride = tileWidth * span.width;
    step.loads.push_back(instruction(fill));
  }
}

/// A fused max pooling's epilogue: the band's rows requantized into its
/// pooling tile below `pt` halo rows (-128 above an image's first band), its
/// last `pt` rows also into the next band's tile of the same block as that
/// band's halo (the tiles alternate and the epilogue queue is in order, so
/// the pooling of the band before has read that tile), the pooling, and the
/// store of the pooled rows.
void ConvStepEmitter::emitPooledEpilogue(Step& step, const BlockSpan& span, const std::vector<Band>& bands,
                                         size_t bandIndex, int64_t block, uint64_t accTile, size_t s) const {
  const auto& p = g_.pool;
  const Band& band = bands[bandIndex];
  const int64_t width = span.width, tileWidth = p.tileWidth(g_.ow);
  const uint64_t tile = poolingTile(bandIndex, block);
  if (bandIndex < 2) loadPoolPadding(step, span, tile);
  if (band.oy0 == 0 && p.pt > 0)  // every value clipped to -128: the padding rows
    step.computes.push_back(instruction(RequantOperands{.zeroPoint = 0,
                                                        .lo = -128,
                                                        .hi = -128,
                                                        .src = accTile,
                                                        .dst = tile,
                                                        .shift = 0,
                                                        .rows = p.pt * tileWidth,
                                                        .cols = width,
                                                        .srcStride = 0,
                                                        .dstStride = width,
                                                        .multiplier = 0}));
  emitRequant(step, span, band, accTile,
              {tile + uint64_t((p.pt * tileWidth + p.pl) * width), tileWidth, 0, band.rows});
  if (p.pt > 0 && bandIndex + 1 < bands.size() && bands[bandIndex + 1].image == band.image) {
    const uint64_t next = poolingTile(bandIndex + 1, block);
    emitRequant(step, span, band, accTile,
                {next + uint64_t(p.pl * width), tileWidth, band.rows - p.pt, band.rows});
  }
  const uint64_t pooled = slots_.pooledSlots[s % slots_.pooledSlots.size()];
  const int64_t pooledRows = band.rows / p.sh;
  step.computes.push_back(instruction(PoolOperands{.kh = p.kh,
                                                   .kw = p.kw,
                                                   .sh = p.sh,
                                                   .src = tile,
                                                   .dst = pooled,
                                                   .sw = p.sw,
                                                   .outH = pooledRows,
                                                   .outW = p.ow,
                                                   .c = width,
                                                   .srcStride = tileWidth * width,
                                                   .dstStride = p.ow * width}));
  StoreOperands st;
  st.sram = pooled;
  st.dram = job_.output + uint64_t(((band.image * p.oh + band.oy0 / p.sh) * p.ow) * g_.o + span.c0);
  st.x = width;
  st.y = p.ow;
  st.z = pooledRows;
  st.sramStride = width;
  st.dramYStride = g_.o;
  st.dramZStride = p.ow * g_.o;
  step.stores.push_back(instruction(st));
}

Error ConvStepEmitter::emit(const std::vector<Band>& bands, const std::vector<StepPlan>& order) {
  if (inRowBytes_ > limits::kDramStride || inPixelBytes_ > limits::kDramStride)
    return layerError("an input row stride of ", inRowBytes_, " bytes exceeds the DMA's stride fields");
  for (size_t s = 0; s < order.size(); ++s) {
    const auto [bandIndex, block, part] = order[s];
    const bool lastPart = part + 1 == t_.kParts;
    const Band& band = bands[bandIndex];
    Step step;
    if (s == 0) loadLayerConstants(step);
    if (bandIndex != curBand_) {
      curBand_ = bandIndex;
      EMBER_RETURN_IF_ERROR(loadBand(step, band));
    }
    const BlockSpan span = blockSpan(block, part);
    if (block != curBlock_ || part != curPart_) {
      curBlock_ = block, curPart_ = part;
      loadWeights(step, span);
    }

    // Computes: gemms per n-tile and k-step, bias, requantization.
    const int64_t b = band.rows;
    const int64_t accRowCount = t_.multiRow ? (b - 1) * wv_ + g_.ow : b * g_.ow;
    // k-parts accumulate one output tile over kParts steps: the tiles
    // alternate per output tile, not per step.
    const uint64_t accTile = slots_.accTiles[(s / size_t(t_.kParts)) % slots_.accTiles.size()];
    if (t_.biasByDma) {  // the bias row replicated over the tile; the gemms accumulate onto it
      LoadOperands bias;
      bias.mem = npu::isa::Memory::Accumulator;
      bias.dram = constants_.bias + uint64_t(span.c0) * 4;
      bias.sram = accTile;
      bias.x = span.width;
      bias.y = accRowCount;
      bias.dramYStride = 0;
      bias.sramStride = span.width;
      step.loads.push_back(instruction(bias));
    }
    emitGemms(step, span, b, accRowCount, accTile);
    if (!lastPart) {  // the next part accumulates onto this tile
      ctx_.program().addStep(std::move(step));
      continue;
    }
    if (!t_.biasByDma && !cfg_.biasInit)
      step.computes.push_back(instruction(VAddOperands{.dst = accTile,
                                                       .src = *slots_.biasAcc + uint64_t(span.c0),
                                                       .rows = accRowCount,
                                                       .cols = span.width,
                                                       .dstStride = span.width,
                                                       .srcStride = 0}));
    if (g_.pool.kh) {
      emitPooledEpilogue(step, span, bands, bandIndex, block, accTile, s);
      ctx_.program().addStep(std::move(step));
      continue;
    }
    const uint64_t outSlot = slots_.outSlots[s % slots_.outSlots.size()];
    const uint64_t requantSlot = slots_.preAddSlot.value_or(outSlot);
    emitRequant(step, span, band, accTile, {requantSlot, g_.ow, 0, b});
    if (g_.residualAdd) {
      // The add's other operand, then the add in place on the requantized
      // tile: the same eadd (and rounding) as the QuantizedAdd layer.
      const uint64_t residualSlot = slots_.residualSlots[s % slots_.residualSlots.size()];
      step.loads.push_back(instruction(outputTileDma<LoadOperands>(span, band, job_.residual, residualSlot)));
      const uint64_t a = job_.convIsLhs ? requantSlot : residualSlot,
                     bOperand = job_.convIsLhs ? residualSlot : requantSlot;
      step.computes.push_back(instruction(EAddOperands{.a = a,
                                                       .b = bOperand,
                                                       .rows = b * g_.ow,
                                                       .cols = span.width,
                                                       .aStride = span.width,
                                                       .bStride = span.width,
                                                       .dst = outSlot,
                                                       .dstStride = span.width,
                                                       .params = slots_.residualParams}));
    }
    step.stores.push_back(instruction(outputTileDma<StoreOperands>(span, band, job_.output, outSlot)));
    ctx_.program().addStep(std::move(step));
  }
  return Error::success();
}

}  // namespace

Expected<LayerInfo> emitConvJob(CompileContext& ctx, const ConvJob& job) {
  const ConvGeometry& g = job.g;
  const npu::NpuConfig& cfg = ctx.config();
  const std::vector<NTile> tiles = makeNTiles(g, cfg.rows, cfg.cols);
  auto tiling = fitConv(g, tiles, ctx.cost());
  if (!tiling) return makeError("layer '", job.name, "': ", tiling.error().message());
  const ConvTiling& t = *tiling;
  const ConvSramNeeds needs = sramNeeds(g, tiles, t, cfg);
  if (!t.vectorQueue) ctx.program().keepVectorsOnComputeQueue();
  if (g.residualAdd) ctx.program().vectorReadsLoadedSlots(int(kResidualSlots));

  // DRAM: the weight slabs and the folded bias.
  ConvConstants constants;
  const std::vector<int8_t> packed = packWeights(job, tiles, constants.slabOffsets);
  constants.packedBytes = packed.size();
  constants.weights = ctx.addWeights(packed.data(), packed.size());
  constants.bias = ctx.addWeights(job.bias.data(), job.bias.size() * 4);
  constants.residualParams =
      g.residualAdd ? ctx.addWeights(job.residualParams.data(), job.residualParams.size()) : 0;

  auto slots = allocateConvSlots(ctx, job, t, needs);
  if (!slots) return slots.error();
  const std::vector<Band> bands = convBands(g, t);
  const int64_t numBlocks = ceilDiv(int64_t(tiles.size()), t.tilesPerBlock);
  ConvStepEmitter emitter(ctx, job, tiles, t, *slots, constants);
  EMBER_RETURN_IF_ERROR(emitter.emit(bands, convStepOrder(bands.size(), numBlocks, t)));
  const std::string shape = describe(g) + (job.inPixelBytes ? " (strided 1x1, input gathered by DMA)" : "") +
                            (job.spaceToDepthChannels ? " (stride 2 as 2x2 blocks)" : "") +
                            (g.residualAdd ? " + residual add" : "") + (g.pool.kh ? " + max pool" : "");
  return LayerInfo{shape, t.str(), t.estimatedCycles};
}

namespace {

/// Multipliers per output channel, collapsed to one when all are equal.
std::vector<FixedPointMultiplier> channelMultipliers(float inScale, const float* scales, int64_t count,
                                                     float outScale) {
  std::vector<FixedPointMultiplier> m;
  for (int64_t i = 0; i < count; ++i) m.push_back(quant::outputMultiplier(inScale, scales[i], outScale));
  if (std::all_of(m.begin(), m.end(), [&](FixedPointMultiplier x) { return sameMultiplier(x, m[0]); }))
    m.resize(1);
  return m;
}

Error requireConstant(const CompileContext& ctx, const Instruction& inst, size_t operand, const char* what) {
  if (ctx.ir().regionOf(ctx.ir().resolve(inst.operands[operand].value).first) != Region::Constants)
    return makeError("layer '", inst.name, "' (", opName(inst.kind), "): the ", what,
                     " must be a constant for the NPU (it is folded at compile time)");
  return Error::success();
}

template <typename T>
const T* constantData(const CompileContext& ctx, const Instruction& inst, size_t operand) {
  auto [root, offset] = ctx.ir().resolve(inst.operands[operand].value);
  return reinterpret_cast<const T*>(static_cast<const uint8_t*>(ctx.ir().value(root).payload->data()) +
                                    offset);
}

}  // namespace

quant::QuantRange clipRange(const Type& out, std::optional<double> clipMin, std::optional<double> clipMax) {
  return quant::activationRange(quant::int8Range(), out.scale, out.offset, float(clipMin.value_or(-INFINITY)),
                                float(clipMax.value_or(INFINITY)));
}

namespace {

/// The geometry the matrix engine runs the conv as: a 1x1 batch as one tall
/// image (compiler.batch_rows), a stride-2 stem on 2x2 pixel blocks
/// (compiler.dense_stem), a strided 1x1 conv on the pixels it uses.
void chooseEngineGeometry(CompileContext& ctx, ConvJob& job) {
  ConvGeometry& g = job.g;
  // A 1x1 conv without padding reads one input row per output row (every
  // sh-th), so N images of H rows in NHWC are one image of N*H rows: the
  // gemms stream every image's rows (compiler.batch_rows).
  if (ctx.config().batchRows && g.n > 1 && g.kh == 1 && g.kw == 1 && g.pt + g.pb + g.pl + g.pr == 0 &&
      g.h == g.sh * g.oh) {
    g.h *= g.n, g.oh *= g.n;
    g.n = 1;
  }
  if (ctx.config().denseStem) {
    if (auto blocks = spaceToDepthGeometry(g, ctx.config().rows);
        blocks && fitConv(*blocks, makeNTiles(*blocks, ctx.config().rows, ctx.config().cols), ctx.cost())) {
      job.filter = spaceToDepthFilter(g, job.filter);
      job.spaceToDepthChannels = g.c;
      job.inImageBytes = g.h * g.w * g.c;
      g = *blocks;
    }
  }
  if (gathersStrided1x1(g)) {
    job.inImageBytes = g.h * g.w * g.c;
    job.inRowBytes = g.sh * g.w * g.c;
    job.inPixelBytes = g.sw * g.c;
    g = gatheredGeometry(g);
  }
}

/// Runs `fusedAdd` in the conv's epilogue, but only when a tiling with the
/// two residual tiles still fits the SRAMs.
void fuseResidualAdd(CompileContext& ctx, const Instruction& conv, const Instruction& fusedAdd,
                     bool addOverwritesInput, ConvJob& job) {
  ConvGeometry fused = job.g;
  fused.residualAdd = true;
  fused.singleBand = addOverwritesInput;
  if (!fitConv(fused, makeNTiles(fused, ctx.config().rows, ctx.config().cols), ctx.cost())) return;
  job.g = fused;
  job.convIsLhs = fusedAdd.operands[1].value == conv.operands[0].value;
  job.residual = ctx.addressOf(fusedAdd.operands[job.convIsLhs ? 2 : 1].value);
  job.residualParams = addParams(ctx, fusedAdd);
  job.output = ctx.addressOf(fusedAdd.operands[0].value);
}

/// Runs `pool` in the conv's epilogue when the conv's bands are whole
/// pooling rows of one image, a tiling with the pooling tiles still fits, and
/// its estimate beats the conv's alone plus the pooling layer's (the pooling
/// unit's time or its DRAM traffic, its first load and last store): the fused tiling needs one block of all
/// output channels, which on a small accumulator can cost more than it saves.
void fuseMaxPool(CompileContext& ctx, const Instruction& pool, ConvJob& job) {
  const Type &in = operandValue(ctx, pool, 1).type, &out = operandValue(ctx, pool, 0).type;
  const MaxPoolAttrs attrs = MaxPoolAttrs::from(pool.attrs);
  ConvGeometry fused = job.g;
  // The engine's geometry must be the pooling's input (not a batch as rows).
  if (fused.n != in.dims[0] || fused.oh != in.dims[1] || fused.ow != in.dims[2] || fused.o != in.dims[3])
    return;
  auto& p = fused.pool;
  p.kh = attrs.kernel[0], p.kw = attrs.kernel[1], p.sh = attrs.strides[0], p.sw = attrs.strides[1];
  p.pt = attrs.pads[0], p.pl = attrs.pads[1], p.oh = out.dims[1], p.ow = out.dims[2];
  p.pr = std::max<int64_t>(0, (p.ow - 1) * p.sw + p.kw - p.pl - fused.ow);
  if (fused.oh % p.sh != 0 || p.oh != fused.oh / p.sh) return;
  const CostModel& cost = ctx.cost();
  const auto withPool = fitConv(fused, makeNTiles(fused, ctx.config().rows, ctx.config().cols), cost);
  const auto alone = fitConv(job.g, makeNTiles(job.g, ctx.config().rows, ctx.config().cols), cost);
  if (!withPool || !alone) return;
  // The pooling layer: its streams overlapped, then its first load and last store.
  const uint64_t poolLayer = std::max(cost.pool(p.oh, p.ow, p.kh, p.kw, fused.o) * uint64_t(fused.n),
                                      cost.dramCycles(fused.n * fused.oh, fused.ow * fused.o) +
                                          cost.dramCycles(fused.n * p.oh, p.ow * fused.o)) +
                             cost.load(fused.ow * fused.o, p.kh) + cost.store(p.ow * fused.o, 1);
  if (withPool->estimatedCycles >= alone->estimatedCycles + poolLayer) return;
  job.g = fused;
  job.output = ctx.addressOf(pool.operands[0].value);
}

}  // namespace

Expected<LayerInfo> lowerConv(CompileContext& ctx, const Instruction& inst, const ConvEpilogue& epilogue) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const Type& filterType = operandValue(ctx, inst, 2).type;
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 2, "filter"));
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 3, "bias"));
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 4, "filter scales"));
  ConvJob job;
  job.name = inst.name;
  ConvGeometry& g = job.g;
  const QuantizedConvAttrs attrs = QuantizedConvAttrs::from(inst.attrs);
  g = convGeometry(out, in, filterType, attrs);
  const int8_t* filter = constantData<int8_t>(ctx, inst, 2);
  const int32_t* bias = constantData<int32_t>(ctx, inst, 3);
  const float* scales = constantData<float>(ctx, inst, 4);
  const int64_t cg = g.cg(), kh = g.kh, kw = g.kw;
  job.filter = [=](int64_t o, int64_t ky, int64_t kx, int64_t c) {
    return filter[((o * kh + ky) * kw + kx) * cg + c];
  };
  job.inZero = in.offset;
  // Zero-point folding: sum (x - zx) w = sum x w - zx sum w (int32 wrapping).
  for (int64_t o = 0; o < g.o; ++o) {
    uint32_t sum = 0;
    for (int64_t i = 0; i < kh * kw * cg; ++i) sum += uint32_t(int32_t(filter[o * kh * kw * cg + i]));
    job.bias.push_back(int32_t(uint32_t(bias[o]) - uint32_t(in.offset) * sum));
  }
  job.channelMultipliers = channelMultipliers(in.scale, scales, g.o, out.scale);
  g.perChannelRequant = job.channelMultipliers.size() > 1;
  const quant::QuantRange range = clipRange(out, attrs.clipMin, attrs.clipMax);
  job.outZero = out.offset, job.lo = range.lo, job.hi = range.hi;
  job.input = ctx.addressOf(inst.operands[1].value);
  job.output = ctx.addressOf(inst.operands[0].value);
  chooseEngineGeometry(ctx, job);
  if (epilogue.add) fuseResidualAdd(ctx, inst, *epilogue.add, epilogue.addOverwritesInput, job);
  if (epilogue.maxPool) fuseMaxPool(ctx, *epilogue.maxPool, job);
  auto info = emitConvJob(ctx, job);
  if (info) info->fusedResidualAdd = g.residualAdd;
  if (info) info->fusedMaxPool = g.pool.kh > 0;
  return info;
}

Expected<LayerInfo> lowerMatMul(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &lhs = operandValue(ctx, inst, 1).type;
  const Type& rhs = operandValue(ctx, inst, 2).type;
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 2, "right operand"));
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 3, "bias"));
  EMBER_RETURN_IF_ERROR(requireConstant(ctx, inst, 4, "column scales"));
  const int64_t k = lhs.dims.back(), n = rhs.dims.back();
  if (rhs.numElements() != k * n)
    return makeError("layer '", inst.name, "' (QuantizedMatMul): a batched right operand is not supported");
  ConvJob job;
  job.name = inst.name;
  ConvGeometry& g = job.g;
  g = matMulGeometry(lhs, rhs);
  const int8_t* w = constantData<int8_t>(ctx, inst, 2);
  const int32_t* bias = constantData<int32_t>(ctx, inst, 3);
  const float* scales = constantData<float>(ctx, inst, 4);
  job.filter = [=](int64_t o, int64_t, int64_t, int64_t c) { return int32_t(w[c * n + o]) - rhs.offset; };
  job.inZero = lhs.offset;
  for (int64_t o = 0; o < n; ++o) {
    uint32_t sum = 0;
    for (int64_t c = 0; c < k; ++c) sum += uint32_t(job.filter(o, 0, 0, c));
    job.bias.push_back(int32_t(uint32_t(bias[o]) - uint32_t(lhs.offset) * sum));
  }
  job.channelMultipliers = channelMultipliers(lhs.scale, scales, n, out.scale);
  g.perChannelRequant = job.channelMultipliers.size() > 1;
  const QuantizedMatMulAttrs attrs = QuantizedMatMulAttrs::from(inst.attrs);
  const quant::QuantRange range = clipRange(out, attrs.clipMin, attrs.clipMax);
  job.outZero = out.offset, job.lo = range.lo, job.hi = range.hi;
  job.input = ctx.addressOf(inst.operands[1].value);
  job.output = ctx.addressOf(inst.operands[0].value);
  return emitConvJob(ctx, job);
}

namespace {

/// The sums of one channel block's pixels: a row of `chunk` ones streams
/// through every pixel chunk and channel tile; returns the compute cycles.
uint64_t emitPixelSumGemms(CompileContext& ctx, Step& step, uint64_t ones, uint64_t inSlot, uint64_t acc,
                           int64_t pixels, int64_t width, int64_t chunk) {
  const npu::NpuConfig& cfg = ctx.config();
  uint64_t compute = 0;
  for (int64_t j0 = 0; j0 < width; j0 += cfg.cols)
    for (int64_t p0 = 0; p0 < pixels; p0 += chunk) {
      GemmOperands gm;
      gm.accumulate = true;
      gm.preload = true;
      gm.m = 1;
      gm.k = std::min(chunk, pixels - p0);
      gm.n = std::min(cfg.cols, width - j0);
      gm.inp = ones;
      gm.inpStride = gm.k;
      gm.wgt = inSlot + uint64_t(p0 * width + j0);
      gm.wgtStride = width;
      gm.acc = acc + uint64_t(j0);
      gm.accStride = width;
      step.computes.push_back(instruction(gm));
      compute += ctx.cost().gemm(1, gm.k, gm.n, true);
    }
  return compute;
}

/// Global average pooling (the window is the whole unpadded image): the
/// image's pixels are the *stationary* operand (k = pixels, n = channels,
/// weight rows strided by the channel block) and a row of ones streams
/// through it (m = 1), so one gemm sums up to rows x cols pixels x channels;
/// the depthwise formulation needs one gemm per pixel and channel tile.
/// The slots and constants of a global average pooling layer.
struct GlobalPoolPlan {
  int64_t pixels = 0, c = 0, block = 0, chunk = 0;
  std::array<uint64_t, 2> inSlots{}, outSlots{}, accSlots{};
  uint64_t ones = 0, biasAddr = 0, input = 0, output = 0;
  FixedPointMultiplier m{};
  int32_t outZero = 0;
};

/// Two input, output and accumulator slots of `block` channels and the row of
/// ones; false (the layer's allocations rolled back) when they do not fit.
bool allocGlobalPoolSlots(CompileContext& ctx, const Instruction& inst, GlobalPoolPlan& plan) {
  SramAllocator& sram = ctx.sram();
  for (int i = 0; i < 2; ++i) {
    auto a = sram.allocScratchpad(inst.name + ".input[" + std::to_string(i) + "]",
                                  uint64_t(plan.pixels * plan.block), i);
    auto o = sram.allocScratchpad(inst.name + ".output[" + std::to_string(i) + "]", uint64_t(plan.block), 3);
    auto acc = sram.allocAccumulator(inst.name + ".acc[" + std::to_string(i) + "]", uint64_t(plan.block),
                                     ctx.config().vectorQueue == npu::VectorQueue::Separate ? i : -1);
    if (!a || !o || !acc) {
      sram.rollbackLayer();
      return false;
    }
    plan.inSlots[size_t(i)] = *a, plan.outSlots[size_t(i)] = *o, plan.accSlots[size_t(i)] = *acc;
  }
  auto ones = sram.allocScratchpad(inst.name + ".ones", uint64_t(plan.chunk), 2);
  if (!ones) {
    sram.rollbackLayer();
    return false;
  }
  plan.ones = *ones;
  return true;
}

/// Step `s`: channels [c0, c0 + width) of image `img`; returns its cycles.
uint64_t emitGlobalPoolStep(CompileContext& ctx, const GlobalPoolPlan& plan, int64_t img, int64_t c0,
                            size_t s) {
  const int64_t width = std::min(plan.block, plan.c - c0), pixels = plan.pixels, chunk = plan.chunk;
  const uint64_t inSlot = plan.inSlots[s % 2], acc = plan.accSlots[s % 2], outSlot = plan.outSlots[s % 2];
  Step step;
  if (s == 0) {
    LoadOperands one;
    one.dram = ctx.fillRegion(1, uint64_t(chunk));
    one.sram = plan.ones;
    one.x = chunk;
    one.sramStride = chunk;
    step.loads.push_back(instruction(one));
  }
  LoadOperands data;
  data.dram = plan.input + uint64_t(img * pixels * plan.c + c0);
  data.sram = inSlot;
  data.x = width;
  data.y = pixels;
  data.dramYStride = plan.c;
  data.sramStride = width;
  step.loads.push_back(instruction(data));
  LoadOperands init;
  init.mem = npu::isa::Memory::Accumulator;
  init.dram = plan.biasAddr;
  init.sram = acc;
  init.x = width;
  init.sramStride = width;
  step.loads.push_back(instruction(init));
  uint64_t compute = emitPixelSumGemms(ctx, step, plan.ones, inSlot, acc, pixels, width, chunk);
  step.computes.push_back(instruction(RequantOperands{.zeroPoint = plan.outZero,
                                                      .lo = -128,
                                                      .hi = 127,
                                                      .src = acc,
                                                      .dst = outSlot,
                                                      .shift = plan.m.shift,
                                                      .rows = 1,
                                                      .cols = width,
                                                      .srcStride = width,
                                                      .dstStride = width,
                                                      .multiplier = plan.m.multiplier}));
  compute += ctx.cost().requant(1, width);
  StoreOperands st;
  st.sram = outSlot;
  st.dram = plan.output + uint64_t(img * plan.c + c0);
  st.x = width;
  st.sramStride = width;
  step.stores.push_back(instruction(st));
  ctx.program().addStep(std::move(step));
  return std::max({ctx.cost().load(width, pixels) + ctx.cost().load(width, 1, 1, 4), compute,
                   ctx.cost().store(width, 1)});
}

/// Returns nullopt when the image is too large for the scratchpad.
std::optional<Expected<LayerInfo>> emitGlobalAvgPool(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const npu::NpuConfig& cfg = ctx.config();
  GlobalPoolPlan plan;
  const int64_t n = in.dims[0];
  plan.pixels = in.dims[1] * in.dims[2], plan.c = in.dims[3];
  // Channel block: two input slots take at most half the scratchpad.
  const int64_t perSlot = cfg.scratchpadBytes / 4 / plan.pixels;
  plan.block = std::min({plan.c, perSlot / cfg.cols * cfg.cols, limits::kDmaRowElements});
  if (plan.block < 1) return std::nullopt;
  plan.chunk = cfg.rows;  // pixels per gemm
  if (!allocGlobalPoolSlots(ctx, inst, plan)) return std::nullopt;
  // Zero-point folding: sum(x - z) = sum(x) - pixels * z, the accumulator's initial value.
  const std::vector<int32_t> bias(size_t(plan.block),
                                  int32_t(uint32_t(-int64_t(in.offset)) * uint32_t(plan.pixels)));
  plan.biasAddr = ctx.addWeights(bias.data(), bias.size() * 4);
  plan.m = quant::averageMultiplier(in.scale, out.scale, plan.pixels);
  plan.outZero = out.offset;
  plan.input = ctx.addressOf(inst.operands[1].value), plan.output = ctx.addressOf(inst.operands[0].value);
  uint64_t cycles = 0;
  size_t s = 0;
  for (int64_t img = 0; img < n; ++img)
    for (int64_t c0 = 0; c0 < plan.c; c0 += plan.block, ++s)
      cycles += emitGlobalPoolStep(ctx, plan, img, c0, s);
  std::ostringstream shape, tiles;
  shape << n << "x" << in.dims[1] << "x" << in.dims[2] << "x" << plan.c << " -> " << n << "x1x1x" << plan.c
        << " global average";
  tiles << "pixels stationary (k=" << std::min(plan.chunk, plan.pixels) << "), " << plan.block
        << "-channel blocks";
  return Expected<LayerInfo>(LayerInfo{shape.str(), tiles.str(), cycles});
}

}  // namespace

Expected<LayerInfo> lowerAvgPool(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  const QuantizedAvgPoolAttrs attrs = QuantizedAvgPoolAttrs::from(inst.attrs);
  const auto &kernel = attrs.kernel, &strides = attrs.strides, &pads = attrs.pads;
  const bool includePad = attrs.countIncludePad != 0;
  const bool global = out.dims[1] == 1 && out.dims[2] == 1 && kernel[0] == in.dims[1] &&
                      kernel[1] == in.dims[2] &&
                      std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  if (global)
    if (auto layer = emitGlobalAvgPool(ctx, inst)) return std::move(*layer);
  ConvJob job;
  job.name = inst.name;
  ConvGeometry& g = job.g;
  g.n = in.dims[0], g.h = in.dims[1], g.w = in.dims[2], g.c = in.dims[3];
  g.oh = out.dims[1], g.ow = out.dims[2], g.o = g.c, g.group = g.c;
  g.kh = kernel[0], g.kw = kernel[1], g.sh = strides[0], g.sw = strides[1];
  g.pt = pads[0], g.pl = pads[1], g.pb = pads[2], g.pr = pads[3];
  g.perPositionRequant = true;
  job.filter = [](int64_t, int64_t, int64_t, int64_t) { return 1; };
  job.inZero = in.offset;
  job.bias.assign(size_t(g.o), int32_t(uint32_t(-int64_t(in.offset)) * uint32_t(g.kh * g.kw)));
  const int64_t h = g.h, w = g.w, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw, pt = g.pt, pl = g.pl, pb = g.pb,
                pr = g.pr;
  const float inScale = in.scale, outScale = out.scale;
  job.positionMultiplier = [=](int64_t oy, int64_t ox) {
    // AvgPool's divisor (core/kernels/Quantized.cpp): the same expression.
    const int64_t y0 = oy * sh - pt, x0 = ox * sw - pl;
    const int64_t y1 = std::min(y0 + kh, h + pb), x1 = std::min(x0 + kw, w + pr);
    const int64_t iy0 = std::max<int64_t>(y0, 0), ix0 = std::max<int64_t>(x0, 0);
    const int64_t iy1 = std::min(y1, h), ix1 = std::min(x1, w);
    const int64_t count = includePad ? (y1 - y0) * (x1 - x0)
                                     : std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
    return count > 0 ? quant::averageMultiplier(inScale, outScale, count) : FixedPointMultiplier{0, 0};
  };
  job.channelMultipliers = {FixedPointMultiplier{}};
  job.outZero = out.offset;
  job.input = ctx.addressOf(inst.operands[1].value);
  job.output = ctx.addressOf(inst.operands[0].value);
  return emitConvJob(ctx, job);
}

}  // namespace ember::npu_backend
