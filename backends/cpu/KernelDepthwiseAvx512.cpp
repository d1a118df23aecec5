// The 3x3 depthwise row kernel (KernelDepthwiseRow.h) on AVX-512: 16 channels
// per vector, blocks of 8 pixels. Chosen only when the CPU reports avx512f
// (GemmArch); this file is compiled with -mavx512f.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "KernelDepthwise.h"
#include "KernelDepthwiseRow.h"

namespace ember::cpu {
namespace {

struct Avx512Vectors {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16, kPixels = 8;
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec maskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void maskStore(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static Mask tailMask(int lanes) { return lanes >= 16 ? Mask(0xFFFF) : Mask((1u << lanes) - 1); }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
  static Vec min(Vec a, Vec b) { return _mm512_min_ps(a, b); }
};

}  // namespace

void depthwiseRowAvx512(const DepthwiseRow& r) { depthwiseRowOf<Avx512Vectors>(r); }

}  // namespace ember::cpu
