// Winograd F(2x2, 3x3) convolution (Lavin and Gray, 2016). A 4x4 input tile
// d and a 3x3 filter g give a 2x2 output block Y = A^T [(G g G^T) . (B^T d B)] A,
// where . multiplies element by element. Summed over input channels, each of
// the 16 positions of the 4x4 product is a GEMM over the tiles:
//   M[xi] (tiles x O) = V[xi] (tiles x C) * U[xi] (C x O),
// with V = B^T d B (the input transform, adds only), U = G g G^T (the filter
// transform, done once when the weights are packed). That is 16 multiply-adds
// per channel pair and 2x2 outputs instead of 36: 2.25x fewer.
//
// A work item takes a block of tiles by a block of output channels: it
// transforms its tiles' inputs into V, runs the 16 GEMMs with the direct
// convolution's micro-kernel (one segment of C floats per row, read through
// row pointers into V) into M, and transforms M into the output with the
// epilogue (bias, residual, activation) applied. The transforms
// (KernelWinogradTransforms.h) run vectorised over channels, which NHWC keeps
// contiguous: 16 lanes with AVX-512, 8 with AVX2.
#include "KernelWinograd.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "KernelConv.h"
#include "KernelGemmBlocks.h"
#include "KernelVectors.h"
#include "KernelWinogradTransforms.h"
#include "ThreadPool.h"
#include "ember/Arithmetic.h"

namespace ember::cpu {

namespace {

using winograd::kPositions;
using winograd::WorkItem;

/// Winograd runs when its multiplications (16 per 2x2 block, edge blocks
/// included) are at most this share of the direct convolution's (9 per
/// pixel): 0.44 on even sizes, 0.58 on 7x7, 0.55 on 9x9; not on 3x3 (0.79)
/// or 5x5 (0.64), where the padded edge blocks waste too much.
constexpr int64_t kMaxMultiplyPercent = 60;

/// ... and when the layer has enough blocks to pay for reading the
/// transformed filter (1.8x the direct convolution's bytes, cold inside a
/// model) and for the transforms, whose share grows as the output channels
/// shrink: at least 16 blocks (resnet's 7x7 layers, 512 channels: 0.80-0.88x),
/// and 64 unless there are 64 output channels or more (densenet's 8x8 and 4x4
/// layers with 32 channels out ran 1.10x and 1.18x slower; its 16x16 ones,
/// 64 blocks, 0.72x). docs/backends/cpu.md, "Winograd convolution".
constexpr int64_t kMinBlocks = 16, kMinBlocksFewChannels = 64, kManyOutputChannels = 64;

/// EMBER_CPU_NO_WINOGRAD=1: never; EMBER_CPU_WINOGRAD_ALWAYS=1: every 3x3
/// stride-1 convolution, whatever its size (the tests' small shapes).
enum class WinogradSwitch { Auto, Never, Always };

WinogradSwitch winogradSwitch() {
  static const WinogradSwitch value = [] {
    auto set = [](const char* name) {
      const char* v = std::getenv(name);
      return v && *v && *v != '0';
    };
    if (set("EMBER_CPU_NO_WINOGRAD")) return WinogradSwitch::Never;
    return set("EMBER_CPU_WINOGRAD_ALWAYS") ? WinogradSwitch::Always : WinogradSwitch::Auto;
  }();
  return value;
}

/// A work item's buffers: V and M (kPositions blocks of `rows` rows each),
/// the GEMM's row pointers, and zeros for the padding.
struct WinogradScratch {
  std::vector<float> v, m, zeros;
  std::vector<const float*> rows;
};

WinogradScratch& threadScratch() {
  thread_local WinogradScratch scratch;
  return scratch;
}

/// V and M of a work item whose transformed filter is small stay in L2 (512 KiB of it).
constexpr int64_t kL2Floats = 128 * 1024;

/// Work items as the GEMM's, tiles for rows: a column block transforms its
/// tiles' inputs again (as the GEMM packs A again), a tile block streams its
/// columns of the transformed filter again. When those columns fit in L2
/// (the 56x56x64 layers), re-reading them is cheap and the tile block is cut
/// so that V and M stay in L2 too: 1.4x faster there, slower on the 28x28
/// and smaller layers, whose filters are 1 MiB and more.
GemmBlocks winogradBlocks(const GemmArch& arch, int64_t c, int64_t o, int64_t total, int threads) {
  GemmBlocks blocks = cachedGemmBlocks(costModelOf(arch, kPackedAPerRow), total, o, threads);
  if (kPositions * c * blocks.nc > kL2Floats / 2) return blocks;
  const int64_t cap =
      std::max<int64_t>(arch.mr, kL2Floats / (kPositions * (c + blocks.nc)) / arch.mr * arch.mr);
  if (blocks.mc <= cap) return blocks;
  int64_t mBlocks = ceilDiv(total, cap);
  if (blocks.nBlocks == 1) mBlocks = alignUp(mBlocks, int64_t(threads));  // even shares per thread
  blocks.mc = alignUp(ceilDiv(total, mBlocks), int64_t(arch.mr));
  blocks.mBlocks = ceilDiv(total, blocks.mc);
  return blocks;
}

}  // namespace

bool winogradApplies(int64_t kh, int64_t kw, int64_t strideH, int64_t strideW, int64_t dilationH,
                     int64_t dilationW, int64_t images, int64_t outH, int64_t outW, int64_t outChannels) {
  const WinogradSwitch mode = winogradSwitch();
  if (mode == WinogradSwitch::Never || kh != 3 || kw != 3 || strideH != 1 || strideW != 1 || dilationH != 1 ||
      dilationW != 1)
    return false;
  if (mode == WinogradSwitch::Always) return true;
  const int64_t perImage = ceilDiv(outH, int64_t(2)) * ceilDiv(outW, int64_t(2)), blocks = images * perImage;
  const int64_t minBlocks = outChannels >= kManyOutputChannels ? kMinBlocks : kMinBlocksFewChannels;
  return 100 * kPositions * perImage <= kMaxMultiplyPercent * 9 * outH * outW && blocks >= minBlocks;
}

size_t winogradFilterSize(const GemmArch& arch, int64_t c, int64_t o) {
  return size_t(kPositions) * packedBSize(arch, c, o);
}

void packWinogradFilter(const GemmArch& arch, const float* filter, int64_t c, int64_t o, float* packed) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], in double, rounded once.
  static constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  // u[xi] holds U[xi]^T, [O, C]: packB's transposed form, as a Conv filter is.
  std::vector<float> u(size_t(kPositions * o * c));
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ch = 0; ch < c; ++ch) {
      double g[3][3];
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) g[ky][kx] = filter[((oc * 3 + ky) * 3 + kx) * c + ch];
      double gg[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int kx = 0; kx < 3; ++kx)
          gg[i][kx] = kG[i][0] * g[0][kx] + kG[i][1] * g[1][kx] + kG[i][2] * g[2][kx];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const double value = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
          u[size_t(((i * 4 + j) * o + oc) * c + ch)] = float(value);
        }
    }
  const size_t positionFloats = packedBSize(arch, c, o);
  for (int64_t xi = 0; xi < kPositions; ++xi)
    packB(arch, u.data() + xi * o * c, c, /*transposed=*/true, c, o, packed + size_t(xi) * positionFloats);
}

void winogradConv(const GemmArch& arch, const WinogradConvCall& d, ThreadPool& pool) {
  const int mr = arch.mr, nr = arch.nr;
  const int64_t tilesW = ceilDiv(d.ow, int64_t(2)), perImage = ceilDiv(d.oh, int64_t(2)) * tilesW;
  const int64_t total = d.n * perImage;
  if (total == 0 || d.o == 0) return;
  const GemmBlocks blocks = winogradBlocks(arch, d.c, d.o, total, pool.size());
  const size_t positionFloats = packedBSize(arch, d.c, d.o);
  const auto tile = arch.avx512 ? convTile12x32Avx512 : convTile6x16;
  pool.parallelFor(blocks.mBlocks * blocks.nBlocks, [&](int64_t index, int) {
    WorkItem item{};
    item.tilesW = tilesW;
    item.perImage = perImage;
    item.first = (index / blocks.nBlocks) * blocks.mc;
    item.count = std::min(blocks.mc, total - item.first);
    item.rows = alignUp(item.count, int64_t(mr));
    item.col0 = (index % blocks.nBlocks) * blocks.nc;
    item.cols = std::min(blocks.nc, d.o - item.col0);
    WinogradScratch& s = threadScratch();
    s.v.resize(size_t(kPositions * item.rows * d.c));
    s.m.resize(size_t(kPositions * item.rows * item.cols));
    if (int64_t(s.zeros.size()) < d.c) s.zeros.assign(size_t(d.c), 0.0f);
    s.rows.resize(size_t(kPositions * item.rows));
    for (int64_t r = 0; r < kPositions * item.rows; ++r) s.rows[size_t(r)] = s.v.data() + r * d.c;
    if (arch.avx512)
      winograd::transformInputAvx512(d, item, s.v.data(), s.zeros.data());
    else
      winograd::transformInput<Avx2Vectors>(d, item, s.v.data(), s.zeros.data());
    for (int64_t xi = 0; xi < kPositions; ++xi) {
      const float* u = d.packedFilter + size_t(xi) * positionFloats;
      for (int64_t j = item.col0; j < item.col0 + item.cols; j += nr) {
        for (int64_t t = 0; t < item.count; t += mr) {
          const int64_t row = xi * item.rows + t;
          ConvTile ct{s.rows.data() + row,
                      1,
                      d.c,
                      u + j * d.c,
                      s.m.data() + row * item.cols + (j - item.col0),
                      item.cols,
                      int(std::min<int64_t>(mr, item.count - t)),
                      int(std::min<int64_t>(nr, item.col0 + item.cols - j))};
          tile(ct, TileEpilogue{});
        }
      }
    }
    if (arch.avx512)
      winograd::transformOutputAvx512(d, item, s.m.data());
    else
      winograd::transformOutput<Avx2Vectors>(d, item, s.m.data());
  });
}

}  // namespace ember::cpu
