// How a GEMM-shaped loop (the packed GEMM, KernelGemm.cpp, and the direct
// convolution, KernelConv.cpp) cuts C into work items for the threads: one
// cost model and one search for both. See docs/backends/cpu.md, "The GEMM".
#pragma once

#include <cstdint>

#include "CpuKernels.h"
#include "ember/Arithmetic.h"

namespace ember::cpu {

/// The cache blocks on one thread: MC x KC of packed A stays in L2; NC
/// bounds how far one A block is reused.
constexpr int64_t kGemmMC = 144;
constexpr int64_t kGemmNC = 512;

/// The blocks of C handed out as work items: MC rows (a multiple of MR) by NC
/// columns (a multiple of NR).
struct GemmBlocks {
  int64_t mc, nc, mBlocks, nBlocks;
};

/// A rough cost, in cycles per unit of K, of one work item of rows x cols
/// (both rounded up to the micro-tile): reading its A block (every item reads
/// its own, so splitting N reads A again), streaming its B panels (splitting
/// M reads B again) and the micro-kernel's multiply-adds.
struct GemmCostModel {
  int mr, nr;
  double macsPerCycle;  ///< per thread: 32 for the 12x32 AVX-512 tile, 16 for 6x16 AVX2
  double aPerRow;       ///< A's cost per row: kPackedAPerRow or kDirectAPerRow
  double item(int64_t rows, int64_t cols) const {
    constexpr double kStreamPerB = 0.25;
    const double r = double(alignUp(rows, mr)), c = double(alignUp(cols, nr));
    return aPerRow * r + kStreamPerB * c + r * c / macsPerCycle;
  }
};

/// The GEMM packs its A block (a read and a transposed write per element).
constexpr double kPackedAPerRow = 1.0;
/// The direct convolution reads A in place through row pointers: a column
/// block only recomputes the pointers and re-reads rows that are in cache.
constexpr double kDirectAPerRow = 0.25;

/// The cost model of `arch`'s micro-kernel, with A's cost per row.
inline GemmCostModel costModelOf(const GemmArch& arch, double aPerRow) {
  return GemmCostModel{arch.mr, arch.nr, arch.avx512 ? 32.0 : 16.0, aPerRow};
}

/// MC and NC for `threads` (see chooseGemmBlocks in KernelGemmBlocks.cpp),
/// remembered per shape and calling thread.
GemmBlocks cachedGemmBlocks(const GemmCostModel& model, int64_t m, int64_t n, int threads);

}  // namespace ember::cpu
