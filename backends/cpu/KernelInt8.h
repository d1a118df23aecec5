// The cpu backend's int8 convolution (QuantizedConv, group 1, NHWC), bit-exact
// with ember::quant (QuantMath.h): an int32 GEMM of the input's codes as u8
// against the filter's s8 taps, then requantization in the epilogue.
//
// Exactness: with u = the input code as u8 (i8 codes + 128) and zu the zero
// point in the same domain, the reference's acc = bias + sum over in-bounds
// taps (q - z) w equals bias - zu * sum(w) + sum over all taps u w, when the
// padding taps hold zu. Sums wrap modulo 2^32 like the spec's int32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "KernelInt8Tile.h"
#include "ember/Arithmetic.h"

namespace ember::quant {
struct AddMultipliers;
}

namespace ember::cpu {

class ThreadPool;

/// Columns of one packed panel; K is padded to a multiple of 4.
inline constexpr int64_t kInt8PanelCols = 32;
inline int64_t int8PaddedK(int64_t k) { return alignUp(k, 4); }
inline int64_t int8PaddedN(int64_t n) { return alignUp(n, kInt8PanelCols); }

/// The instruction sets of the int8 kernels, best last. int8Isa() picks the
/// best the CPU has; EMBER_CPU_INT8_ISA=portable|avx2|avx512-vnni forces a
/// lower one (tests run every path on one machine; a higher one than the CPU
/// has is ignored). EMBER_CPU_NO_VNNI=1 is the same as avx2.
enum class Int8Isa : int32_t { Portable = 0, Avx2 = 1, Avx512Vnni = 2 };
Int8Isa int8HostIsa();
Int8Isa int8Isa();
const char* int8IsaName(Int8Isa isa);

/// The packed filter and its per-channel epilogue constants, laid out in one
/// block: B panels (int8PaddedK x int8PaddedN bytes), then int32 correction,
/// multiplier and shift per output channel (int8PaddedN each), then one int32
/// flag: every tap in [-64, 63] (the AVX2 kernel's vpmaddubsw cannot saturate).
struct Int8ConvWeights {
  const int8_t* b = nullptr;
  const int32_t* correction = nullptr;  ///< bias[o] - zu * sum(w[o])
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  bool narrow = false;
};
size_t int8ConvWeightBytes(int64_t k, int64_t n);
Int8ConvWeights int8ConvWeightsAt(const uint8_t* block, int64_t k, int64_t n);

/// Packs filter [N, K] (s8), bias [N] and the requantization multipliers
/// (in_scale * filter_scales[o] / out_scale) into `block`.
void packInt8Conv(const int8_t* filter, const int32_t* bias, const float* filterScales, float inScale,
                  float outScale, int32_t zu, int64_t k, int64_t n, uint8_t* block);

struct Int8ConvCall {
  const uint8_t* input = nullptr;  ///< NHWC codes (i8 or u8)
  uint8_t* output = nullptr;       ///< NHWC codes (i8 or u8)
  const uint8_t* weights = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0, o = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  int32_t inputSigned = 0;  ///< i8 input codes (converted to u8 by + 128)
  int32_t zu = 0;           ///< the input zero point as u8
  int32_t outputZero = 0, lo = 0, hi = 0;
  int32_t outputSigned = 0;
  /// A same-shape QuantizedAdd fused after the convolution (hasResidual != 0):
  /// output = addQuantized(the conv's code, residual's code), the conv's codes
  /// never stored. `residual` is the output itself or apart from it. In
  /// residualAdd, a is the conv's output and b the residual (their pointers
  /// and count unused); lo/hi above stay the conv's own clamp.
  int32_t hasResidual = 0;
  const uint8_t* residual = nullptr;
  Int8AddCall residualAdd;
};
void int8Conv(const Int8ConvCall& call, ThreadPool& pool);
void int8Conv(const Int8ConvCall& call, ThreadPool& pool, Int8Isa isa);

/// Depthwise (group == C == O): weights block = int32 taps [KH*KW][C], then
/// bias, multiplier, shift and a zero row per channel (int32 [C] each).
size_t int8DepthwiseWeightBytes(int64_t taps, int64_t c);
void packInt8Depthwise(const int8_t* filter, const int32_t* bias, const float* filterScales, float inScale,
                       float outScale, int64_t taps, int64_t c, uint8_t* block);
struct Int8DepthwiseCall {
  const uint8_t* input = nullptr;
  uint8_t* output = nullptr;
  const uint8_t* weights = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  int32_t inputSigned = 0, inputZero = 0;
  int32_t outputZero = 0, lo = 0, hi = 0;
};
void int8Depthwise(const Int8DepthwiseCall& call, ThreadPool& pool);
void int8Depthwise(const Int8DepthwiseCall& call, ThreadPool& pool, Int8Isa isa);

/// MaxPool on 8-bit codes and QuantizedAvgPool (KernelInt8Pool.cpp), NHWC.
struct Int8PoolCall {
  const uint8_t* input = nullptr;
  uint8_t* output = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1;
  int32_t inputSigned = 0;
  int32_t average = 0;  ///< 0: MaxPool, 1: QuantizedAvgPool
  int32_t countIncludePad = 0;
  int32_t inputZero = 0, outputZero = 0, lo = 0, hi = 0;
  float inScale = 1, outScale = 1;
};
void int8Pool(const Int8PoolCall& call, ThreadPool& pool);

/// Quantize of f32 to 8-bit codes (KernelInt8Quantize.cpp), `count` elements.
struct Int8QuantizeCall {
  const float* input = nullptr;
  uint8_t* output = nullptr;
  int64_t count = 0;
  float scale = 1;
  int32_t zero = 0, lo = 0, hi = 0;
};
void int8Quantize(const Int8QuantizeCall& call, ThreadPool& pool);
/// The same on the kernels of `isa` (tests run every path; Portable runs the AVX2 one).
void int8Quantize(const Int8QuantizeCall& call, ThreadPool& pool, Int8Isa isa);
/// Elements [begin, end) on AVX-512 (KernelInt8QuantizeAvx512.cpp).
void int8QuantizeAvx512(const Int8QuantizeCall& call, int64_t begin, int64_t end);

/// QuantizedAdd (Int8AddCall, KernelInt8Tile.h): with AVX-512 VNNI in use the
/// arithmetic itself, 16 lanes at a time; otherwise `table` (65,536 output
/// codes indexed by a * 256 + b, built with quant::addQuantized).
void int8Add(const Int8AddCall& call, const uint8_t* table, ThreadPool& pool);
/// Sets call's multipliers and shifts from quant::addMultipliers' result.
void setInt8AddMultipliers(Int8AddCall& call, const quant::AddMultipliers& m);
void int8Add(const Int8AddCall& call, const uint8_t* table, ThreadPool& pool, Int8Isa isa);

/// rows x cols of addQuantized(a, b) into out (row strides lda, ldb, ldo; out
/// may be b), with call's zero points, multipliers and clamp (its pointers
/// and count unused): the int8 conv's fused residual add, on the chosen ISA.
/// `planes`: int8AddPlanesAvx512's, or null (AVX-512 VNNI only).
void int8AddBlock(Int8Isa isa, const Int8AddCall& call, const Int8AddPlanes* planes, const uint8_t* a,
                  int64_t lda, const uint8_t* b, int64_t ldb, uint8_t* out, int64_t ldo, int64_t rows,
                  int64_t cols);
void int8AddBlockAvx512(const Int8AddCall& call, const Int8AddPlanes* planes, const uint8_t* a, int64_t lda,
                        const uint8_t* b, int64_t ldb, uint8_t* out, int64_t ldo, int64_t rows, int64_t cols);
/// Tabulates call's operands for the table-lookup add (64 lanes at a time,
/// vpermi2b; about half the time of the arithmetic). False, with `planes`
/// unused, when that add does not apply: a CPU without AVX-512 VBMI, an
/// output multiplier of 1/2 or more, or an operand of 2^30 or more.
bool int8AddPlanesAvx512(const Int8AddCall& call, Int8AddPlanes& planes);
/// QuantizedAdd of elements [begin, end) with AVX-512 (planes: as above, or null).
void int8AddAvx512(const Int8AddCall& call, const Int8AddPlanes* planes, int64_t begin, int64_t end);

/// The AVX-512 pieces (KernelInt8Vnni.cpp), used when hostHasVnni(): the
/// requantizing epilogue of n columns (acc + correction, then
/// quant::requantize with per-column multiplier and shift) as 8-bit codes.
bool hostHasVnni();
void int8RequantizeAvx512(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                          const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi,
                          uint8_t* out);

/// The AVX2 epilogue (KernelInt8Avx2.cpp), the same contract, 4 lanes at a time.
bool hostHasAvx2();
void int8RequantizeAvx2(const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                        const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi, uint8_t* out);

/// The epilogue of the chosen ISA (scalar quant::requantize for portable).
void int8Requantize(Int8Isa isa, const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                    const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi, uint8_t* out);

/// Which int8 micro-kernel runs here: "avx512-vnni", "avx2" or "portable".
const char* int8KernelName();

}  // namespace ember::cpu
