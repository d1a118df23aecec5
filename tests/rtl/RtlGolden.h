// An independent golden model of one gemm instruction (docs/npu/isa.md) in
// plain C++: straightforward loops, int32 sums wrapping modulo 2^32, no code
// shared with the simulator or the RTL harness.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/rtl/RtlArray.h"

namespace ember::rtl::test {

struct GoldenEngine {
  // The weights kept by the last preload (row-major k x n).
  std::vector<int8_t> kept;
  uint32_t keptK = 0, keptN = 0;

  void run(const GemmJob& j, const std::vector<int8_t>& spad, std::vector<int32_t>& acc) {
    if (j.preload) {
      keptK = j.k;
      keptN = j.n;
      kept.assign(size_t(j.k) * j.n, 0);
      for (uint32_t t = 0; t < j.k; ++t)
        for (uint32_t c = 0; c < j.n; ++c)
          kept[size_t(t) * j.n + c] = spad[size_t(j.wgtAddr) + size_t(t) * j.wgtStride + c];
    }
    for (uint32_t i = 0; i < j.m; ++i) {
      // Rows are written in order: a later row sees an earlier row's result
      // when their accumulator rows overlap.
      std::vector<uint32_t> row(j.n);
      for (uint32_t c = 0; c < j.n; ++c) {
        uint32_t sum = j.accumulate ? uint32_t(acc[size_t(j.accAddr) + size_t(i) * j.accStride + c]) : 0u;
        for (uint32_t t = 0; t < j.k; ++t) {
          const int32_t a = spad[size_t(j.inpAddr) + size_t(i) * j.inpStride + t];
          const int32_t w = kept[size_t(t) * j.n + c];
          sum += uint32_t(a * w);
        }
        row[c] = sum;
      }
      for (uint32_t c = 0; c < j.n; ++c)
        acc[size_t(j.accAddr) + size_t(i) * j.accStride + c] = int32_t(row[c]);
    }
  }
};

}  // namespace ember::rtl::test
