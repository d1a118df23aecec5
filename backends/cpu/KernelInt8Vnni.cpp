// The AVX-512 VNNI int8 micro-kernel (KernelInt8.h): 6 rows x 32 columns of
// int32, vpdpbusd (u8 x s8, four products summed into each int32 lane,
// wrapping, no intermediate saturation). The only file built with -mavx512vnni.
#include <immintrin.h>

#include <cstdint>

namespace ember::cpu {

bool hostHasVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
}

void int8TileVnni(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, int32_t* c) {
  __m512i acc[6][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kp; k += 4, b += 128) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
    for (int r = 0; r < 6; ++r) {
      int32_t four;
      __builtin_memcpy(&four, a + r * lda + k, 4);
      const __m512i x = _mm512_set1_epi32(four);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, b1);
    }
  }
  for (int r = 0; r < 6; ++r) {
    _mm512_storeu_si512(c + r * 32, acc[r][0]);
    _mm512_storeu_si512(c + r * 32 + 16, acc[r][1]);
  }
}

}  // namespace ember::cpu
