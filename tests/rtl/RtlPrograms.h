// Small NPU programs that exercise the matrix engine, shared by the
// co-simulation test and the timing-validation tool: load A and B, a mix of
// gemm instructions (preload + overwrite, reuse without preload + accumulate,
// a partial tile at an offset), store the int32 result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

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
