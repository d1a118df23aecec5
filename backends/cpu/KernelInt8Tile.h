// The int8 micro-tile's call (KernelInt8.cpp to the ISA files). Plain data
// only: the ISA files (built for AVX-512 or AVX2) include it, and an inline
// function here could be instantiated there and kept by the linker for every
// caller.
#pragma once

#include <cstdint>

namespace ember::cpu {

/// Rows of the AVX-512 VNNI tile (24 of the 32 zmm registers accumulate).
inline constexpr int kInt8VnniTileRows = 6;

/// `rows` rows of u8 A (row stride lda; a multiple of kInt8VnniTileRows is
/// readable) against one packed 32-column panel of kp bytes (a multiple of 4),
/// kInt8VnniTileRows rows at a time, requantized into the first `rows` x
/// `cols` codes of `out` (row stride ldo). correction/multiplier/shift point at the
/// panel's first column and are readable for all 32 columns.
struct Int8TileArgs {
  const uint8_t* a = nullptr;
  int64_t lda = 0;
  const int8_t* b = nullptr;
  int64_t kp = 0;
  int64_t rows = 0, cols = 0;
  const int32_t* correction = nullptr;
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
  int32_t zero = 0, lo = 0, hi = 0;
  uint8_t* out = nullptr;
  int64_t ldo = 0;
  /// int8TileVnniRequantAdd's residual (row stride ldr), read where out is written.
  const uint8_t* residual = nullptr;
  int64_t ldr = 0;
};

}  // namespace ember::cpu

namespace ember::cpu {

/// Channels per block of the AVX-512 VNNI depthwise kernel: four vectors of
/// 16 int32 accumulators.
inline constexpr int64_t kInt8DepthwiseBlock = 64;

/// One output row of the int8 depthwise convolution for the AVX-512 VNNI
/// kernel (KernelInt8Depthwise.cpp to KernelInt8Vnni.cpp). Taps go in groups
/// of four (vpdpbusd); tap i of pixel x in [interiorBegin, interiorEnd) (its
/// window inside the row horizontally) starts at rows[i] + (offsets[i] + x *
/// stride), inside the row (offsets[i] alone may be negative, so the sum is
/// taken before the pointer moves); tap i of another pixel starts at
/// sources[x * 4 * groups + i]. A padding tap
/// (and the last group's missing taps, whose weights are 0) reads the input
/// zero point. Per block of 64 channels, `quadWeights` holds [groups][4][64]
/// bytes and `constants` [3][64] int32 (correction = bias - zu * sum of the
/// channel's taps, multiplier, shift), both in the order of the vpunpck
/// interleave (KernelInt8Depthwise.cpp).
struct Int8DepthwiseRowArgs {
  const uint8_t* const* rows = nullptr;
  const int64_t* offsets = nullptr;
  int64_t stride = 0;
  int64_t interiorBegin = 0, interiorEnd = 0;
  const uint8_t* const* sources = nullptr;
  int64_t pixels = 0, groups = 0, c = 0;
  const int8_t* quadWeights = nullptr;
  const int32_t* constants = nullptr;
  int32_t inputSigned = 0, zero = 0, lo = 0, hi = 0;
  uint8_t* out = nullptr;  ///< the row's first pixel; pixels are c apart
};

}  // namespace ember::cpu

namespace ember::cpu {

/// QuantizedAdd of two same-shape 8-bit code arrays, QuantMath.h's
/// addQuantized per element: each operand's (q - zero) << 20 scaled by its
/// fixed-point multiplier, the sum saturated to int32 and requantized.
struct Int8AddCall {
  const uint8_t* a = nullptr;
  const uint8_t* b = nullptr;
  uint8_t* out = nullptr;
  int64_t count = 0;
  int32_t aSigned = 0, bSigned = 0, aZero = 0, bZero = 0;
  int32_t aMultiplier = 0, aShift = 0, bMultiplier = 0, bShift = 0, outMultiplier = 0, outShift = 0;
  int32_t outZero = 0, lo = 0, hi = 0;
};

/// QuantizedAdd's operands tabulated for the AVX-512 VBMI add: entry q of
/// each is the operand's scaled value ((q - zero) << 20 times its
/// multiplier, rounded; an int32 below 2^30 in magnitude), stored as four
/// byte planes for vpermi2b (byte p of every code's value in plane p).
struct Int8AddPlanes {
  alignas(64) uint8_t a[4][256];
  alignas(64) uint8_t b[4][256];
};

}  // namespace ember::cpu
