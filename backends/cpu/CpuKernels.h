// The cpu backend's hand-written kernels (AVX2 + FMA, f32, NHWC). The JIT'd
// driver calls them with shapes, strides and buffer offsets baked in as
// constants. Private to backends/cpu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::cpu {

class ThreadPool;

/// What a GEMM or convolution applies to each output element before storing:
/// out = act(acc + bias[col] + residual[row, col]).
enum class Activation : int32_t { None = 0, Relu = 1, Clip = 2 };

struct Epilogue {
  const float* bias = nullptr;      ///< [N], or null
  const float* residual = nullptr;  ///< same layout as C (ldc), or null; may alias C
  Activation activation = Activation::None;
  float lo = 0, hi = 0;  ///< Clip bounds
};

/// What a micro-kernel applies in registers before its store (full tiles):
/// bias and residual (pointers at the tile, residual with C's row stride) and
/// the activation. Null pointers / Activation::None skip a part.
struct TileEpilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;
  Activation activation = Activation::None;
  float lo = 0, hi = 0;
};

/// Register-block shape of the GEMM micro-kernel the backend chose for this
/// machine (the packed weights depend on nr).
struct GemmArch {
  int mr = 6, nr = 16;
  bool avx512 = false;
};
GemmArch chooseGemmArch();

/// The A operand of a GEMM: a dense row-major matrix, or an NHWC convolution
/// window read in place (implicit im2col: row = output pixel, column =
/// (ky, kx, c) of one group).
struct ASource {
  const float* data = nullptr;
  int64_t lda = 0;  ///< dense: row stride
  bool conv = false;
  int64_t h = 0, w = 0, c = 0;     ///< input dims (batch folded into rows)
  int64_t oh = 0, ow = 0;          ///< output spatial dims
  int64_t kh = 0, kw = 0, cg = 0;  ///< window and channels per group
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  int64_t cOffset = 0;  ///< first input channel of the group
};

/// C[M, N] (row stride ldc) = epilogue(A[M, K] * B[K, N]) with B packed by packB.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  ASource a;
  const float* packedB = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  Epilogue epilogue;
};

/// Floats packB writes for a K x N matrix.
size_t packedBSize(const GemmArch& arch, int64_t k, int64_t n);
/// Packs B (row stride ldb; or, when `transposed`, B^T stored [N, K] with row
/// stride ldb) into panels of nr columns, zero-padded.
void packB(const GemmArch& arch, const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n,
           float* packed);
void gemm(const GemmArch& arch, const GemmCall& call, ThreadPool& pool);

/// Depthwise convolution (group == C == O), NHWC; filter prepacked [KH, KW, C].
struct DepthwiseCall {
  const float* input = nullptr;
  const float* filter = nullptr;
  float* output = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  Epilogue epilogue;
};
/// 3x3 windows (dilation 1, row stride 1 or 2) run the row kernel of
/// KernelDepthwise.h, on AVX-512 when `avx512`; other windows a per-pixel loop.
void depthwiseConv(const DepthwiseCall& call, ThreadPool& pool, bool avx512);

/// Max or average pooling, NHWC f32 (the reference's semantics).
struct PoolCall {
  const float* input = nullptr;
  float* output = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1;
  bool max = true, countIncludePad = false;
};
void pool2d(const PoolCall& call, ThreadPool& pool);

/// Reduction of f32 [outer, reduce, inner] over the middle axis.
enum class ReduceKind : int32_t { Sum = 0, Max = 1, Min = 2, Prod = 3 };
void reduce3(const float* input, float* output, int64_t outer, int64_t reduce, int64_t inner, ReduceKind kind,
             ThreadPool& pool);

/// Transpose of any element size (1, 2, 4 or 8 bytes) and any rank (kMaxRank is 8).
void transpose(const void* input, void* output, size_t elemSize, const std::vector<int64_t>& inDims,
               const std::vector<int64_t>& perm, ThreadPool& pool);

/// Whether the CPU runs the AVX2 + FMA kernels.
bool hostHasAvx2Fma();
bool hostHasAvx512();

}  // namespace ember::cpu
