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
#include "KernelVectors.h"

namespace ember::cpu {

void depthwiseRowAvx512(const DepthwiseRow& r) { depthwiseRowOf<Avx512Vectors>(r); }

}  // namespace ember::cpu
