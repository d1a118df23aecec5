// The Winograd transforms (KernelWinogradTransforms.h) on 16-lane AVX-512
// vectors, masked at the channel tails. Chosen only when the CPU reports
// avx512f (GemmArch); this file is compiled with -mavx512f.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "KernelWinogradTransforms.h"

namespace ember::cpu::winograd {

namespace {

struct Avx512Vec {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kLanes = 16;
  static Mask mask(int64_t lanes) { return lanes >= 16 ? Mask(0xFFFF) : Mask((1u << lanes) - 1); }
  static Reg load(const float* p, int64_t lanes, Mask m) {
    return lanes >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  }
  static void store(float* p, Reg v, int64_t lanes, Mask m) {
    if (lanes >= 16)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, m, v);
  }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm512_min_ps(a, b); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg zero() { return _mm512_setzero_ps(); }
};

}  // namespace

void transformInputAvx512(const WinogradConvCall& d, const WorkItem& item, float* v, const float* zeros) {
  transformInput<Avx512Vec>(d, item, v, zeros);
}

void transformOutputAvx512(const WinogradConvCall& d, const WorkItem& item, const float* m) {
  transformOutput<Avx512Vec>(d, item, m);
}

}  // namespace ember::cpu::winograd
