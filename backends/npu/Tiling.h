// The tiling of a convolution-shaped layer (conv, matmul, average pooling) on
// the matrix engine, chosen by a search over band heights, output-channel
// blocks, gemm shapes and loop orders, scored with the simulator's own
// formulas (CostModel) under the config's SRAM capacities. Results are cached
// by shape. docs/npu/compiler.md, "Tiling".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "CostModel.h"

namespace ember::npu_backend {

/// NHWC convolution geometry (filters [O, KH, KW, C/group]).
struct ConvGeometry {
  int64_t n = 1, h = 1, w = 1, c = 1, oh = 1, ow = 1, o = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0, group = 1;
  bool perChannelRequant = false;   ///< requant runs per channel group (cost only)
  bool perPositionRequant = false;  ///< requant runs per output position (average pooling)
  /// A residual add fused into the epilogue: each output tile also loads the
  /// add's other operand and runs one eadd (two more scratchpad tiles).
  bool residualAdd = false;
  /// The whole input is one band, loaded before any output tile is stored
  /// (a fused add's result may then overwrite the conv's input).
  bool singleBand = false;
  /// A max pooling fused into the epilogue (compiler.fuse_max_pool): each
  /// band's requantized rows, below the last `pool.pt` rows of the band
  /// before and between -128 padding columns, are pooled in the scratchpad
  /// and only the pooled rows are stored. `pool.kh == 0`: none.
  struct FusedMaxPool {
    int64_t kh = 0, kw = 0, sh = 1, sw = 1, pt = 0, pl = 0, pr = 0, oh = 0, ow = 0;
    /// Pixels per row of the pooling tile (the conv's row and its padding).
    int64_t tileWidth(int64_t convWidth) const { return pl + convWidth + pr; }
  } pool;

  int64_t cg() const { return c / group; }
  int64_t og() const { return o / group; }
  /// Padded input width/height in the band: enough for every window.
  int64_t padW() const;
  int64_t padH() const;
  int64_t rowBytes() const { return padW() * c; }
  int64_t bandInputRows(int64_t bandRows) const { return (bandRows - 1) * sh + (kh - 1) * dh + 1; }
  /// Several output rows per gemm (computing the junk columns of the padded
  /// width) is possible when a padded input row is a whole number of strides.
  bool multiRowPossible() const { return (sh * padW()) % sw == 0; }
  int64_t virtualWidth() const { return sh * padW() / sw; }
  std::string key() const;
};

/// Scratchpad slots of a fused residual add's operand, in rotation: one more
/// than the other resources, so its loads run three steps ahead of the
/// epilogue that reads them (ProgramBuilder::vectorReadsLoadedSlots).
inline constexpr int64_t kResidualSlots = 3;

/// One gemm's slice of the reduction: `k` consecutive input bytes at `offset`
/// from the output pixel's first tap (ky row, byte within the padded row).
struct KStep {
  int64_t ky = 0, offset = 0, k = 0;
  bool merged = false;  ///< kx taps x all channels flattened: position f0 + t
  int64_t f0 = 0;       ///< merged: flattened (kx, c) start; else channel start
  int64_t kx = 0;       ///< not merged: the tap column
};

/// An output-channel tile of at most `cols` channels and its k-steps.
struct NTile {
  int64_t o0 = 0, width = 0;
  std::vector<KStep> steps;
  int64_t weightRows = 0;  ///< sum of k over steps
};

/// Splits the output channels into tiles of <= cols and the reduction into
/// k-steps of <= maxK (rows for weight-stationary).
std::vector<NTile> makeNTiles(const ConvGeometry& g, int64_t maxK, int64_t cols);

/// The k-step range [begin, end) of part `part` of `parts` of a tile.
std::pair<size_t, size_t> kPartSteps(const NTile& tile, int64_t parts, int64_t part);
/// Weight rows (sum of k) of the tile's k-steps [begin, end).
int64_t kPartRows(const NTile& tile, size_t begin, size_t end);

enum class LoopOrder : uint8_t { BandOuter, BlockOuter };

struct ConvTiling {
  int64_t bandRows = 1;       ///< output rows per band
  int64_t tilesPerBlock = 1;  ///< n-tiles per output-channel block
  bool multiRow = true;       ///< one gemm spans every output row of the band
  LoopOrder order = LoopOrder::BandOuter;
  /// The bias initialises the accumulator tile by DMA (one DRAM row replicated
  /// with a zero stride; the first gemm accumulates onto it) instead of a vadd
  /// on the compute queue; needs two accumulator tiles (the DMA of the next
  /// step runs while this step computes).
  bool biasByDma = false;
  /// The k-steps of a one-tile block split into this many parts, each its own
  /// pipeline step with its own (double-buffered) weight load, the epilogue on
  /// the last: lets a whole small image stay in the scratchpad while the
  /// weights of a deep layer stream through (one band only).
  int64_t kParts = 1;
  uint64_t estimatedCycles = 0;
  /// With vector.queue separate: the bias add and requants run on the vector
  /// queue beside the gemms (two accumulator tiles, one per bank). The search
  /// tries both, so a layer whose tiles would shrink too much keeps them on
  /// the compute queue.
  bool vectorQueue = false;
  std::string str() const;
};

/// SRAM needs of a tiling (what the lowering allocates).
struct ConvSramNeeds {
  int64_t bandBytes, inputSlots, blockWeightBytes, weightSlots, outTileBytes, accEntries, accSlots,
      biasEntries;
  int64_t residualTileBytes;  ///< per slot (kResidualSlots), 0 without a fused residual add
  /// The requant's tile before the fused add (compiler.residual_out_of_place),
  /// 0 when the add runs in place on the output tile.
  int64_t preAddTileBytes;
  /// Per slot (two) of a fused max pooling's result; 0 without one (the
  /// output tile is then the pooling tile, with its halo rows and padding).
  int64_t pooledTileBytes;
  /// Output tiles: two, or with a fused max pooling two per channel block
  /// (a band's halo rows wait in the tile of the next band of the same block).
  int64_t outSlots;
  bool tilePerBank;  ///< each accumulator tile within one bank (vector queue, accumulator.banks >= 2)
};
ConvSramNeeds sramNeeds(const ConvGeometry& g, const std::vector<NTile>& tiles, const ConvTiling& t,
                        const npu::NpuConfig& config);

/// The best tiling, or nullopt when nothing fits the SRAMs.
std::optional<ConvTiling> searchConvTiling(const ConvGeometry& g, const std::vector<NTile>& tiles,
                                           const CostModel& cost);

}  // namespace ember::npu_backend
