// The Winograd transforms (KernelWinogradTransforms.h) on KernelVectors.h's
// 16-lane AVX-512 vectors, masked at the channel tails. Chosen only when the CPU reports
// avx512f (GemmArch); this file is compiled with -mavx512f.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "KernelVectors.h"
#include "KernelWinogradTransforms.h"

namespace ember::cpu::winograd {

void transformInputAvx512(const WinogradConvCall& d, const WorkItem& item, float* v, const float* zeros) {
  transformInput<Avx512Vectors>(d, item, v, zeros);
}

void transformOutputAvx512(const WinogradConvCall& d, const WorkItem& item, const float* m) {
  transformOutput<Avx512Vectors>(d, item, m);
}

}  // namespace ember::cpu::winograd
