#include "Tiling.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "IsaLimits.h"

namespace ember::npu_backend {

int64_t ConvGeometry::padW() const { return std::max(pl + w + pr, (ow - 1) * sw + (kw - 1) * dw + 1); }
int64_t ConvGeometry::padH() const { return std::max(pt + h + pb, (oh - 1) * sh + (kh - 1) * dh + 1); }

std::string ConvGeometry::key() const {
  std::ostringstream os;
  for (int64_t v : {n, h, w, c, oh, ow, o, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group}) os << v << ',';
  os << perChannelRequant << perPositionRequant << residualAdd << singleBand;
  for (int64_t v : {pool.kh, pool.kw, pool.sh, pool.sw, pool.pt, pool.pl, pool.pr, pool.oh, pool.ow})
    os << ',' << v;
  return os.str();
}

std::vector<NTile> makeNTiles(const ConvGeometry& g, int64_t maxK, int64_t cols) {
  std::vector<NTile> tiles;
  const int64_t cg = g.cg(), og = g.og(), rowBytes = g.rowBytes();
  for (int64_t o0 = 0; o0 < g.o; o0 += cols) {
    NTile t;
    t.o0 = o0;
    t.width = std::min(cols, g.o - o0);
    // The input channels of every group this tile touches.
    const int64_t ca = (o0 / og) * cg, cb = ((o0 + t.width - 1) / og + 1) * cg;
    const bool merged = ca == 0 && cb == g.c && g.dw == 1;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t rowOffset = ky * g.dh * rowBytes;
      if (merged) {
        const int64_t run = g.kw * g.c;
        for (int64_t f = 0; f < run; f += maxK) {
          KStep s;
          s.ky = ky;
          s.merged = true;
          s.f0 = f;
          s.k = std::min(maxK, run - f);
          s.offset = rowOffset + f;
          t.steps.push_back(s);
        }
      } else {
        for (int64_t kx = 0; kx < g.kw; ++kx)
          for (int64_t c = ca; c < cb; c += maxK) {
            KStep s;
            s.ky = ky;
            s.kx = kx;
            s.f0 = c;
            s.k = std::min(maxK, cb - c);
            s.offset = rowOffset + kx * g.dw * g.c + c;
            t.steps.push_back(s);
          }
      }
    }
    for (const KStep& s : t.steps) t.weightRows += s.k;
    tiles.push_back(std::move(t));
  }
  return tiles;
}

std::pair<size_t, size_t> kPartSteps(const NTile& tile, int64_t parts, int64_t part) {
  const size_t n = tile.steps.size();
  return {n * size_t(part) / size_t(parts), n * size_t(part + 1) / size_t(parts)};
}

int64_t kPartRows(const NTile& tile, size_t begin, size_t end) {
  int64_t rows = 0;
  for (size_t i = begin; i < end; ++i) rows += tile.steps[i].k;
  return rows;
}

std::string ConvTiling::str() const {
  std::ostringstream os;
  os << "band=" << bandRows << " rows, block=" << tilesPerBlock << " n-tiles, gemm "
     << (multiRow ? "spans the band" : "per output row")
     << ", order=" << (order == LoopOrder::BandOuter ? "band-outer" : "block-outer")
     << (biasByDma ? ", bias by DMA" : ", bias by vadd");
  if (kParts > 1) os << ", weights in " << kParts << " k-parts";
  if (vectorQueue) os << ", epilogue on the vector queue";
  return os.str();
}

namespace {

struct TileAggregate {
  int64_t steps = 0, sumK = 0, preload = 0, rate = 0, width = 0, weightBytes = 0;
  std::vector<std::pair<int64_t, int64_t>> stepPreloadAndRate;  ///< per k-step (two weight buffers)
};

/// The gemms of one block on two weight buffers (Timing.h GemmChain, the
/// compiler alternating wbuf): each k-step preloads once and streams `passes`
/// gemms of `m` rows; a preload overlaps the previous gemm's stream, and the
/// pipeline fills and drains once: P1 + sum max(S_i, P_i+1) + S_last + R + C + 3.
uint64_t gemmChainCycles(const npu::NpuConfig& c, const std::vector<TileAggregate>& agg, size_t first,
                         size_t last, int64_t m, int64_t passes) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (size_t j = first; j < last; ++j)
    steps.insert(steps.end(), agg[j].stepPreloadAndRate.begin(), agg[j].stepPreloadAndRate.end());
  if (steps.empty()) return 0;
  int64_t cycles = steps.front().first + c.rows + c.cols + 3;
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t stream = m * steps[i].second;
    const int64_t nextPreload = i + 1 < steps.size() ? steps[i + 1].first : 0;
    cycles += (passes - 1) * stream + std::max(stream, nextPreload);
  }
  return uint64_t(cycles);
}

int64_t accRows(const ConvGeometry& g, int64_t bandRows, bool multiRow) {
  return multiRow ? (bandRows - 1) * g.virtualWidth() + g.ow : bandRows * g.ow;
}

int64_t blockWidth(const std::vector<NTile>& tiles, size_t first, size_t last) {
  int64_t w = 0;
  for (size_t j = first; j < last; ++j) w += tiles[j].width;
  return w;
}

}  // namespace

ConvSramNeeds sramNeeds(const ConvGeometry& g, const std::vector<NTile>& tiles, const ConvTiling& t,
                        const npu::NpuConfig& c) {
  ConvSramNeeds s{};
  const int64_t bands = g.n * ceilDiv(g.oh, t.bandRows);
  const int64_t blocks = ceilDiv(int64_t(tiles.size()), t.tilesPerBlock);
  s.bandBytes = g.bandInputRows(t.bandRows) * g.rowBytes();
  s.inputSlots = bands > 1 ? 2 : 1;
  int64_t maxWidth = 0;
  for (size_t b = 0; b < tiles.size(); b += size_t(t.tilesPerBlock)) {
    const size_t e = std::min(tiles.size(), b + size_t(t.tilesPerBlock));
    int64_t bytes = 0;
    for (size_t j = b; j < e; ++j) bytes += tiles[j].weightRows * tiles[j].width;
    for (int64_t p = 0; t.kParts > 1 && p < t.kParts; ++p) {  // one-tile blocks
      const auto [s0, s1] = kPartSteps(tiles[b], t.kParts, p);
      bytes = std::max(p ? bytes : 0, kPartRows(tiles[b], s0, s1) * tiles[b].width);
    }
    s.blockWeightBytes = std::max(s.blockWeightBytes, bytes);
    maxWidth = std::max(maxWidth, blockWidth(tiles, b, e));
  }
  s.weightSlots = blocks > 1 || t.kParts > 1 ? 2 : 1;
  s.outTileBytes =
      g.pool.kh ? (g.pool.pt + t.bandRows) * g.pool.tileWidth(g.ow) * maxWidth : t.bandRows * g.ow * maxWidth;
  s.pooledTileBytes = g.pool.kh ? t.bandRows / g.pool.sh * g.pool.ow * maxWidth : 0;
  s.outSlots = g.pool.kh ? 2 * blocks : 2;
  s.accEntries = accRows(g, t.bandRows, t.multiRow) * maxWidth;
  // With the vector queue the gemms of step s+1 write one tile while the
  // requant of step s reads the other (ping-pong), whatever the bias.
  s.accSlots = t.biasByDma || t.vectorQueue ? 2 : 1;
  s.tilePerBank = t.vectorQueue && c.accumulatorBanks >= 2;
  s.biasEntries = t.biasByDma ? 0 : g.o;
  s.residualTileBytes = g.residualAdd ? s.outTileBytes : 0;
  s.preAddTileBytes = g.residualAdd && c.residualOutOfPlace ? s.outTileBytes : 0;
  return s;
}

namespace {

bool fits(const ConvSramNeeds& s, const npu::NpuConfig& c) {
  const int64_t spad = s.inputSlots * int64_t(alignUp(uint64_t(s.bandBytes), 64)) +
                       s.weightSlots * int64_t(alignUp(uint64_t(s.blockWeightBytes), 64)) +
                       s.outSlots * int64_t(alignUp(uint64_t(s.outTileBytes), 64)) +
                       kResidualSlots * int64_t(alignUp(uint64_t(s.residualTileBytes), 64)) +
                       int64_t(alignUp(uint64_t(s.preAddTileBytes), 64)) +
                       2 * int64_t(alignUp(uint64_t(s.pooledTileBytes), 64)) +
                       (s.residualTileBytes > 0 ? int64_t(alignUp(npu::isa::kEAddParamBytes, 64)) : 0);
  const int64_t acc = s.accSlots * int64_t(alignUp(uint64_t(s.accEntries), 16)) +
                      int64_t(alignUp(uint64_t(s.biasEntries), 16));
  // Ping-pong tiles in different accumulator banks: each tile within one bank.
  if (s.tilePerBank && int64_t(alignUp(uint64_t(s.accEntries), 16)) > c.accumulatorBankEntries())
    return false;
  return spad <= c.scratchpadBytes && acc <= c.accumulatorEntries();
}

/// A step's compute cycles split by queue: the matrix engine's gemms and the
/// vector unit's bias add and requantization (one queue unless
/// vector.queue is separate).
struct ComputeSplit {
  uint64_t matrix = 0, vector = 0;
};

/// Cycles of one step's computes (gemms, bias add, requantization).
ComputeSplit computeCycles(const ConvGeometry& g, const CostModel& cost,
                           const std::vector<TileAggregate>& agg, size_t first, size_t last, int64_t bandRows,
                           bool multiRow, bool biasByDma) {
  const npu::NpuConfig& c = cost.config();
  const bool ws = c.dataflow == npu::Dataflow::WeightStationary;
  const int64_t wBank = c.bankWidthBytes, wacc = c.accumulatorPortBytes;
  uint64_t cycles = 0;
  int64_t width = 0;
  if (ws && c.weightBuffers == 2)
    cycles += multiRow ? gemmChainCycles(c, agg, first, last, accRows(g, bandRows, true), 1)
                       : gemmChainCycles(c, agg, first, last, g.ow, bandRows);
  for (size_t j = first; j < last; ++j) {
    const TileAggregate& a = agg[j];
    if (ws && c.weightBuffers == 2) {
      width += a.width;
      continue;
    }
    width += a.width;
    const int64_t overhead = ws ? c.rows + c.cols + 3 : c.rows + c.cols + 2;
    if (ws) {
      if (multiRow) {
        const int64_t m = accRows(g, bandRows, true);
        cycles += uint64_t(a.preload + m * a.rate + a.steps * overhead);
      } else {
        cycles += uint64_t(a.preload + bandRows * (g.ow * a.rate + a.steps * overhead));
      }
    } else {
      const int64_t m = multiRow ? accRows(g, bandRows, true) : g.ow;
      const int64_t reps = multiRow ? 1 : bandRows;
      const int64_t chunks = ceilDiv(m, c.rows);
      const int64_t perStep = chunks * overhead + m * ceilDiv(4 * a.width, wacc);
      cycles +=
          uint64_t(reps * (a.steps * perStep + a.sumK * chunks * ceilDiv(std::max(c.rows, a.width), wBank)));
    }
  }
  ComputeSplit split;
  split.matrix = cycles;
  cycles = 0;
  const int64_t rows = accRows(g, bandRows, multiRow);
  if (!biasByDma && !c.biasInit) cycles += cost.vadd(rows, width);
  // A fused pooling's tile has padding columns: one requant per output row.
  const bool dense = (!multiRow || g.virtualWidth() == g.ow) && g.pool.pl + g.pool.pr == 0;
  const int64_t groups = g.perChannelRequant ? width : 1;
  const int64_t colsPerGroup = ceilDiv(width, groups);
  if (g.perPositionRequant)
    cycles += uint64_t(bandRows) * (cost.requant(g.ow, width) + 2 * cost.requant(1, width));
  else if (dense)
    cycles += uint64_t(groups) * cost.requant(bandRows * g.ow, colsPerGroup);
  else
    cycles += uint64_t(bandRows * groups) * cost.requant(g.ow, colsPerGroup);
  if (g.residualAdd) cycles += cost.eadd(bandRows * g.ow, width);  // in place on the output tile
  if (g.pool.kh)  // the next band's halo rows, then the pooling
    cycles += uint64_t(g.pool.pt) * cost.requant(g.ow, width) +
              cost.pool(bandRows / g.pool.sh, g.pool.ow, g.pool.kh, g.pool.kw, width);
  split.vector = cycles;
  return split;
}

struct StreamTotals {
  uint64_t load = 0, compute = 0, vector = 0, store = 0, dram = 0, accPort = 0, firstLoad = 0, lastStore = 0;
};

/// Accumulator-port cycles of one step: gemm streaming, the bias (vadd or
/// DMA) and the requantization's reads (the port is shared by the compute
/// queue and the DMA, docs/npu/timing-model.md "Contention").
uint64_t accPortCycles(const ConvGeometry& g, const CostModel& cost, const std::vector<TileAggregate>& agg,
                       size_t first, size_t last, int64_t bandRows, bool multiRow, bool biasByDma) {
  const npu::NpuConfig& c = cost.config();
  const int64_t rows = accRows(g, bandRows, multiRow);
  int64_t cycles = 0, width = 0;
  for (size_t j = first; j < last; ++j) {
    cycles += rows * agg[j].rate;
    width += agg[j].width;
  }
  if (biasByDma || !c.biasInit)  // bias in by DMA / vadd (bias_init: none)
    cycles += rows * ceilDiv(4 * width, c.accumulatorPortBytes) * (biasByDma ? 1 : 2);
  cycles += bandRows * g.ow * ceilDiv(4 * width, c.accumulatorPortBytes);  // requant reads
  return uint64_t(cycles);
}

std::optional<uint64_t> evaluate(const ConvGeometry& g, const std::vector<NTile>& tiles,
                                 const std::vector<TileAggregate>& agg, const CostModel& cost,
                                 const ConvTiling& t) {
  const npu::NpuConfig& c = cost.config();
  const ConvSramNeeds needs = sramNeeds(g, tiles, t, c);
  if (!fits(needs, c)) return std::nullopt;
  if (accRows(g, t.bandRows, t.multiRow) > limits::kGemmRows || t.bandRows * g.ow > limits::kVectorRows ||
      needs.bandBytes > limits::kScratchpadAddressSpace)
    return std::nullopt;
  if (g.pool.kh) {  // a pooling tile's row stride, its padding rows' requant, the pooled store's plane stride
    const int64_t blockChannels = std::min(g.o, t.tilesPerBlock * c.cols);
    const int64_t tileWidth = g.pool.tileWidth(g.ow);
    if (tileWidth * blockChannels > limits::kPoolRowStride || g.pool.pt * tileWidth > limits::kVectorRows ||
        g.pool.ow * g.o > limits::kDramStride)
      return std::nullopt;
  }
  const int64_t bandsPerImage = ceilDiv(g.oh, t.bandRows);
  const int64_t bands = g.n * bandsPerImage;
  const size_t per = size_t(t.tilesPerBlock);
  const int64_t blocks = ceilDiv(int64_t(tiles.size()), t.tilesPerBlock);
  const int64_t lastBandRows = g.oh - (bandsPerImage - 1) * t.bandRows;

  // Per band kind (full, last) and per block: compute, weight and store costs.
  StreamTotals total;
  auto bandLoad = [&](int64_t rows) {
    const int64_t inRows = g.bandInputRows(rows);
    return std::pair<uint64_t, uint64_t>{cost.load(g.w * g.c, inRows), cost.dramCycles(inRows, g.w * g.c)};
  };
  const auto [fullBandLoad, fullBandDram] = bandLoad(t.bandRows);
  const auto [lastBandLoad, lastBandDram] = bandLoad(lastBandRows);
  for (int64_t q = 0; q < blocks; ++q) {
    const size_t first = size_t(q) * per, last = std::min(tiles.size(), first + per);
    int64_t wBytes = 0, width = 0;
    for (size_t j = first; j < last; ++j) {
      wBytes += agg[j].weightBytes;
      width += agg[j].width;
    }
    const int64_t partBytes = ceilDiv(wBytes, t.kParts);
    const uint64_t wLoad = uint64_t(t.kParts) * cost.load(1024, ceilDiv(partBytes, 1024)),
                   wDram = cost.dramCycles(ceilDiv(wBytes, 1024), 1024);
    const ComputeSplit fullCompute =
        computeCycles(g, cost, agg, first, last, t.bandRows, t.multiRow, t.biasByDma);
    const ComputeSplit lastCompute =
        computeCycles(g, cost, agg, first, last, lastBandRows, t.multiRow, t.biasByDma);
    const int64_t fullBands = bands - g.n, lastBands = g.n;  // one last band per image
    total.compute += uint64_t(fullBands) * fullCompute.matrix + uint64_t(lastBands) * lastCompute.matrix;
    total.vector += uint64_t(fullBands) * fullCompute.vector + uint64_t(lastBands) * lastCompute.vector;
    total.accPort +=
        uint64_t(fullBands) * accPortCycles(g, cost, agg, first, last, t.bandRows, t.multiRow, t.biasByDma) +
        uint64_t(lastBands) * accPortCycles(g, cost, agg, first, last, lastBandRows, t.multiRow, t.biasByDma);
    if (t.biasByDma) {  // one replicated bias row per step
      const int64_t fullRows = accRows(g, t.bandRows, t.multiRow),
                    lastRows = accRows(g, lastBandRows, t.multiRow);
      total.load += uint64_t(fullBands) * cost.load(width, fullRows, 1, 4) +
                    uint64_t(lastBands) * cost.load(width, lastRows, 1, 4);
      total.dram += uint64_t(fullBands) * cost.dramCycles(fullRows, 4 * width) +
                    uint64_t(lastBands) * cost.dramCycles(lastRows, 4 * width);
    }
    // What a band stores: its output rows, or its pooled rows.
    const int64_t storedWidth = g.pool.kh ? g.pool.ow : g.ow, storedRowsPerRow = g.pool.kh ? g.pool.sh : 1;
    const int64_t fullStored = t.bandRows / storedRowsPerRow, lastStored = lastBandRows / storedRowsPerRow;
    const uint64_t fullStore = cost.store(width, storedWidth, fullStored),
                   lastStore = cost.store(width, storedWidth, lastStored);
    total.store += uint64_t(fullBands) * fullStore + uint64_t(lastBands) * lastStore;
    if (g.residualAdd) {  // the add's other operand, loaded like the output tile is stored
      total.load += uint64_t(fullBands) * cost.load(width, g.ow, t.bandRows) +
                    uint64_t(lastBands) * cost.load(width, g.ow, lastBandRows);
      total.dram += uint64_t(fullBands) * cost.dramCycles(t.bandRows * g.ow, width) +
                    uint64_t(lastBands) * cost.dramCycles(lastBandRows * g.ow, width);
    }
    total.dram += uint64_t(fullBands) * cost.dramCycles(fullStored * storedWidth, width) +
                  uint64_t(lastBands) * cost.dramCycles(lastStored * storedWidth, width);
    // Weights: once per block (block-outer, or a single block), else every step.
    const bool weightsOnce = t.order == LoopOrder::BlockOuter || blocks == 1;
    const uint64_t wTimes = weightsOnce ? 1 : uint64_t(bands);
    total.load += wTimes * wLoad;
    total.dram += wTimes * wDram;
    // Bands: once each (band-outer, or a single band), else for every block.
    const bool bandsOnce = t.order == LoopOrder::BandOuter || bands == 1;
    if (!bandsOnce || q == 0) {
      total.load += uint64_t(fullBands) * fullBandLoad + uint64_t(lastBands) * lastBandLoad;
      total.dram += uint64_t(fullBands) * fullBandDram + uint64_t(lastBands) * lastBandDram;
    }
    if (q == 0) total.firstLoad = fullBandLoad + wLoad / uint64_t(t.kParts);
    total.lastStore = lastStore;
  }
  if (!t.vectorQueue)
    return std::max(cost.overlapped(total.load, total.compute + total.vector, total.store, total.dram),
                    total.accPort) +
           total.firstLoad + total.lastStore;
  // The vector queue overlaps the matrix engine; with the tiles in different
  // banks the accumulator traffic spreads over the banks' ports.
  const uint64_t accPort = total.accPort / uint64_t(std::min<int64_t>(2, c.accumulatorBanks));
  return std::max(
             {cost.overlapped(total.load, total.compute, total.store, total.dram), total.vector, accPort}) +
         total.firstLoad + total.lastStore;
}

/// Values of x in [1, max] that give distinct ceil(max / x), largest x first.
std::vector<int64_t> distinctSplits(int64_t max) {
  std::vector<int64_t> out;
  int64_t lastCount = -1;
  for (int64_t x = max; x >= 1; --x) {
    const int64_t count = ceilDiv(max, x);
    if (count != lastCount) out.push_back(x);
    lastCount = count;
  }
  return out;
}

}  // namespace

std::optional<ConvTiling> searchConvTiling(const ConvGeometry& g, const std::vector<NTile>& tiles,
                                           const CostModel& cost) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<ConvTiling>> cache;
  const npu::NpuConfig& c = cost.config();
  const std::string key = g.key() + "|" + std::to_string(c.hash()) + "," + std::to_string(c.weightBuffers) +
                          "," + std::to_string(c.dramBytesPerCycle) + "," +
                          std::to_string(c.dramLatencyCycles) + "," + std::to_string(c.bankWidthBytes) + "," +
                          std::to_string(c.accumulatorPortBytes) + "," + std::to_string(c.residualOutOfPlace);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::vector<TileAggregate> agg;
  for (const NTile& t : tiles) {
    TileAggregate a;
    a.width = t.width;
    a.steps = int64_t(t.steps.size());
    a.weightBytes = t.weightRows * t.width;
    for (const KStep& s : t.steps) {
      a.sumK += s.k;
      const int64_t preload = s.k * ceilDiv(t.width, c.bankWidthBytes);
      const int64_t rate =
          std::max(ceilDiv(s.k, c.bankWidthBytes), ceilDiv(4 * t.width, c.accumulatorPortBytes));
      a.preload += preload;
      a.rate += rate;
      a.stepPreloadAndRate.emplace_back(preload, rate);
    }
    agg.push_back(a);
  }
  std::optional<ConvTiling> best;
  for (int64_t bandRows : distinctSplits(g.oh))
    for (int64_t perBlock : distinctSplits(int64_t(tiles.size())))
      for (bool multiRow : {true, false}) {
        if (multiRow && !g.multiRowPossible()) continue;
        for (LoopOrder order : {LoopOrder::BandOuter, LoopOrder::BlockOuter})
          for (bool biasByDma : {false, true})
            for (int64_t kParts : {1, 2, 3, 4, 6, 8})
              for (bool vectorQueue : {false, true}) {
                if (vectorQueue && c.vectorQueue != npu::VectorQueue::Separate) continue;
                // k-parts: one band, one-tile blocks, one accumulator tile.
                if (kParts > 1 && (g.n * ceilDiv(g.oh, bandRows) > 1 || perBlock > 1 || biasByDma ||
                                   order != LoopOrder::BandOuter || int64_t(tiles[0].steps.size()) < kParts))
                  continue;
                if (g.singleBand && g.n * ceilDiv(g.oh, bandRows) > 1) continue;
                // A fused pooling: whole pooling rows per band, the bands in
                // order for each block (halo rows pass to the next band), one part.
                if (g.pool.kh && (bandRows % g.pool.sh != 0 || order != LoopOrder::BandOuter || kParts > 1))
                  continue;
                ConvTiling t{bandRows, perBlock, multiRow, order, biasByDma, kParts, 0, vectorQueue};
                auto cycles = evaluate(g, tiles, agg, cost, t);
                if (!cycles) continue;
                t.estimatedCycles = *cycles;
                if (!best || t.estimatedCycles < best->estimatedCycles) best = t;
              }
      }
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = best;
  return best;
}

}  // namespace ember::npu_backend
