// The f32 vector types of the kernels written once over a vector type V (the
// depthwise row kernel, KernelDepthwiseRow.h, and the Winograd transforms,
// KernelWinogradTransforms.h): the same operations on 8-lane AVX2 and
// 16-lane AVX-512 registers. Internal linkage: each file compiles its own
// copy for the ISA it is built with (Avx512Vectors only where __AVX512F__ is
// defined), so the linker cannot merge an AVX-512 copy into the AVX2 path.
#pragma once

#include <immintrin.h>

namespace ember::cpu {
namespace {

struct Avx2Vectors {
  using Vec = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec maskLoad(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void maskStore(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
  static Mask tailMask(int lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float v) { return _mm256_set1_ps(v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
  static Vec min(Vec a, Vec b) { return _mm256_min_ps(a, b); }
};

#ifdef __AVX512F__
struct Avx512Vectors {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec maskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void maskStore(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static Mask tailMask(int lanes) { return lanes >= 16 ? Mask(0xFFFF) : Mask((1u << lanes) - 1); }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
  static Vec min(Vec a, Vec b) { return _mm512_min_ps(a, b); }
};
#endif

}  // namespace
}  // namespace ember::cpu
