// Small NPU programs that exercise the matrix engine, shared by the
// co-simulation test and the timing-validation tool: load A and B, a mix of
// gemm instructions (preload + overwrite, reuse without preload + accumulate,
// a partial tile at an offset), store the int32 result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "ember/npu/Config.h"

namespace ember::rtl::test {

struct GemmShape {
  int64_t m, k, n;  // WS: k <= rows, n <= cols; OS: m <= rows, n <= cols
};

/// The program's text (docs/npu/isa.md assembly); A at scratchpad 0, B at
/// `weightSram` (another bank, so that the gemms see no bank conflict). The partial tile uses
/// m2 x k x n2 of the same operands (m2 = max(1, m/2), n2 = max(1, n - 3)).
inline std::string gemmMixProgram(const GemmShape& s, int64_t weightSram) {
  const std::string wgt = std::to_string(weightSram);
  const int64_t aBytes = s.m * s.k, bBytes = s.k * s.n, cOffset = (aBytes + bBytes + 63) / 64 * 64;
  const int64_t m2 = std::max<int64_t>(1, s.m / 2), n2 = std::max<int64_t>(1, s.n - 3);
  std::ostringstream p;
  p << ".input A i8 [" << s.m << "," << s.k << "] @0x0\n";
  p << ".input B i8 [" << s.k << "," << s.n << "] @" << aBytes << "\n";
  p << ".output C i32 [" << s.m << "," << s.n << "] @" << cOffset << "\n";
  p << ".layer gemm\n";
  p << "load mem=spad x=" << s.k << " y=" << s.m << " dram_ystride=" << s.k << " sram_stride=" << s.k << "\n";
  p << "load mem=spad dram=" << aBytes << " sram=" << wgt << " x=" << s.n << " y=" << s.k
    << " dram_ystride=" << s.n << " sram_stride=" << s.n << " push_next\n";
  const std::string common = " k=" + std::to_string(s.k) + " inp_stride=" + std::to_string(s.k) +
                             " wgt=" + wgt + " wgt_stride=" + std::to_string(s.n);
  p << "gemm preload=1 m=" << s.m << " n=" << s.n << common << " acc_stride=" << s.n << " pop_prev\n";
  p << "gemm accumulate=1 m=" << s.m << " n=" << s.n << common << " acc_stride=" << s.n << "\n";
  p << "gemm preload=1 accumulate=1 m=" << m2 << " n=" << n2 << common << " inp=" << (s.m - m2) * s.k
    << " acc=" << s.n << " acc_stride=" << s.n << " push_next\n";
  p << "store mem=acc dram=" << cOffset << " x=" << s.n << " y=" << s.m << " dram_ystride=" << s.n
    << " sram_stride=" << s.n << " pop_prev\n";
  p << "finish\n";
  return p.str();
}

}  // namespace ember::rtl::test

namespace ember::rtl::test {

/// One gemm of a chain on two weight buffers.
struct ChainedGemmSpec {
  GemmShape s;
  bool preload = true, accumulate = true;
  unsigned wbuf = 0;
};

/// A random chain of `length` weight-stationary gemms on a rows x cols array:
/// wbuf alternating or random, a preload on most gemms (always on a buffer's
/// first use; a gemm without one reuses its buffer's k x n), random m
/// (up to 4 rows), k and n, accumulating onto one result tile most of the time.
template <typename Rng>
std::vector<ChainedGemmSpec> randomChain(Rng& rng, int64_t rows, int64_t cols, int length, bool alternate) {
  auto dim = [&](int64_t hi) { return 1 + int64_t(rng() % uint64_t(hi)); };
  std::vector<ChainedGemmSpec> chain;
  GemmShape kept[2] = {{0, 0, 0}, {0, 0, 0}};
  for (int i = 0; i < length; ++i) {
    ChainedGemmSpec g;
    g.wbuf = alternate ? unsigned(i % 2) : unsigned(rng() % 2);
    g.preload = kept[g.wbuf].k == 0 || rng() % 4 != 0;
    g.s = g.preload ? GemmShape{dim(4 * rows), dim(rows), dim(cols)}
                    : GemmShape{dim(4 * rows), kept[g.wbuf].k, kept[g.wbuf].n};
    if (rng() % 4 == 0) g.s.m = dim(3);  // a short stream: the next preload is longer
    g.accumulate = rng() % 5 != 0;
    if (g.preload) kept[g.wbuf] = g.s;
    chain.push_back(g);
  }
  return chain;
}

/// The chain as a program: A (the most rows any gemm streams, `rows` wide)
/// at scratchpad 0, gemm i's weights at `weightSram` + i * rows * cols, every
/// gemm onto the same accumulator tile (so later gemms accumulate onto rows
/// still in flight), then the tile stored. Gemms issue back to back.
inline std::string gemmChainProgram(const std::vector<ChainedGemmSpec>& chain, int64_t rows, int64_t cols,
                                    int64_t weightSram) {
  int64_t m = 1;
  for (const auto& g : chain) m = std::max(m, g.s.m);
  const int64_t aBytes = m * rows, bBytes = int64_t(chain.size()) * rows * cols;
  const int64_t cOffset = (aBytes + bBytes + 63) / 64 * 64;
  std::ostringstream p;
  p << ".input A i8 [" << m << "," << rows << "] @0x0\n";
  p << ".input B i8 [" << int64_t(chain.size()) * rows << "," << cols << "] @" << aBytes << "\n";
  p << ".output C i32 [" << m << "," << cols << "] @" << cOffset << "\n";
  p << ".layer chain\n";
  p << "load mem=spad x=" << rows << " y=" << m << " dram_ystride=" << rows << " sram_stride=" << rows
    << "\n";
  p << "load mem=spad dram=" << aBytes << " sram=" << weightSram << " x=" << cols
    << " y=" << int64_t(chain.size()) * rows << " dram_ystride=" << cols << " sram_stride=" << cols
    << " push_next\n";
  for (size_t i = 0; i < chain.size(); ++i) {
    const ChainedGemmSpec& g = chain[i];
    p << "gemm preload=" << g.preload << " accumulate=" << g.accumulate << " wbuf=" << g.wbuf
      << " m=" << g.s.m << " k=" << g.s.k << " n=" << g.s.n << " inp_stride=" << rows
      << " wgt=" << weightSram + int64_t(i) * rows * cols << " wgt_stride=" << cols << " acc_stride=" << cols
      << (i == 0 ? " pop_prev" : "") << (i + 1 == chain.size() ? " push_next" : "") << "\n";
  }
  p << "store mem=acc dram=" << cOffset << " x=" << cols << " y=" << m << " dram_ystride=" << cols
    << " sram_stride=" << cols << " pop_prev\n";
  p << "finish\n";
  return p.str();
}

}  // namespace ember::rtl::test
