// The int8 convolution (KernelInt8.h): packing, im2col into u8 rows, the
// micro-kernel of the chosen ISA (AVX-512 VNNI from KernelInt8Vnni.cpp, AVX2
// from KernelInt8Avx2.cpp, else the portable loop here) and the epilogue.
#include "KernelInt8.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "KernelInt8Tile.h"
#include "ThreadPool.h"
#include "ember/QuantMath.h"

namespace ember::cpu {

// KernelInt8Vnni.cpp: the tile with its epilogue; KernelInt8Avx2.cpp: 6 rows x
// 32 columns of int32 over kp (multiple of 4) bytes.
void int8TileVnniRequant(const Int8TileArgs& t);
// The same with the lookup add of a fused residual applied in registers (AVX-512 VBMI; planes non-null).
void int8TileVnniRequantAdd(const Int8TileArgs& t, const Int8AddCall& add, const Int8AddPlanes* planes);
// (rows: those of the 6 that are needed; wide taps compute them in pairs, narrow ones all 6.)
void int8TileAvx2(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, bool narrow, int64_t rows,
                  int32_t* c);
// The same for wide taps from operands widened to int16 once per block and panel (int8WidenAvx2).
void int8TileAvx2Widened(const int16_t* a, int64_t lda, const int16_t* b, int64_t kp, int32_t* c);
void int8WidenAvx2(const uint8_t* codes, int64_t n, int16_t* out);
void int8WidenPanelAvx2(const int8_t* panel, int64_t kp, int16_t* out);

Int8Isa int8HostIsa() {
  static const Int8Isa isa = hostHasVnni()   ? Int8Isa::Avx512Vnni
                             : hostHasAvx2() ? Int8Isa::Avx2
                                             : Int8Isa::Portable;
  return isa;
}

Int8Isa int8Isa() {
  static const Int8Isa isa = [] {
    Int8Isa wanted = int8HostIsa();
    if (std::getenv("EMBER_CPU_NO_VNNI")) wanted = Int8Isa::Avx2;
    if (const char* forced = std::getenv("EMBER_CPU_INT8_ISA")) {
      const std::string name = forced;
      for (Int8Isa isa : {Int8Isa::Portable, Int8Isa::Avx2, Int8Isa::Avx512Vnni})
        if (name == int8IsaName(isa)) wanted = isa;
    }
    return std::min(wanted, int8HostIsa());
  }();
  return isa;
}

const char* int8IsaName(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::Avx512Vnni:
      return "avx512-vnni";
    case Int8Isa::Avx2:
      return "avx2";
    case Int8Isa::Portable:
      break;
  }
  return "portable";
}

void int8Requantize(Int8Isa isa, const int32_t* acc, const int32_t* correction, const int32_t* multiplier,
                    const int32_t* shift, int64_t n, int32_t zero, int32_t lo, int32_t hi, uint8_t* out) {
  if (isa == Int8Isa::Avx512Vnni)
    return int8RequantizeAvx512(acc, correction, multiplier, shift, n, zero, lo, hi, out);
  if (isa == Int8Isa::Avx2)
    return int8RequantizeAvx2(acc, correction, multiplier, shift, n, zero, lo, hi, out);
  for (int64_t j = 0; j < n; ++j) {
    const int32_t total = int32_t(uint32_t(acc[j]) + uint32_t(correction[j]));
    out[j] = uint8_t(quant::requantize(total, {multiplier[j], shift[j]}, zero, lo, hi));
  }
}

void int8AddBlock(Int8Isa isa, const Int8AddCall& call, const Int8AddPlanes* planes, const uint8_t* a,
                  int64_t lda, const uint8_t* b, int64_t ldb, uint8_t* out, int64_t ldo, int64_t rows,
                  int64_t cols) {
  if (isa == Int8Isa::Avx512Vnni)
    return int8AddBlockAvx512(call, planes, a, lda, b, ldb, out, ldo, rows, cols);
  const quant::AddMultipliers m{
      {call.aMultiplier, call.aShift}, {call.bMultiplier, call.bShift}, {call.outMultiplier, call.outShift}};
  auto code = [](int32_t isSigned, uint8_t byte) { return isSigned ? int32_t(int8_t(byte)) : int32_t(byte); };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[r * ldo + j] = uint8_t(quant::addQuantized(code(call.aSigned, a[r * lda + j]), call.aZero,
                                                     code(call.bSigned, b[r * ldb + j]), call.bZero, m,
                                                     call.outZero, call.lo, call.hi));
}

namespace {

constexpr int64_t kRows = 6;        // micro-tile rows
constexpr int64_t kBlockRows = 96;  // rows im2col'd at once per work item (a multiple of both tiles)

/// Portable tile: the same arithmetic as the VNNI one, in wrapping uint32.
void int8TilePortable(const uint8_t* a, int64_t lda, const int8_t* b, int64_t kp, int32_t* c) {
  uint32_t acc[kRows][kInt8PanelCols] = {};
  for (int64_t k4 = 0; k4 < kp / 4; ++k4) {
    const int8_t* panel = b + k4 * 4 * kInt8PanelCols;
    for (int64_t r = 0; r < kRows; ++r) {
      const uint8_t* row = a + r * lda + k4 * 4;
      for (int64_t j = 0; j < kInt8PanelCols; ++j) {
        const int8_t* w = panel + j * 4;
        acc[r][j] += uint32_t(int32_t(row[0]) * w[0] + int32_t(row[1]) * w[1] + int32_t(row[2]) * w[2] +
                              int32_t(row[3]) * w[3]);
      }
    }
  }
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < kInt8PanelCols; ++j) c[r * kInt8PanelCols + j] = int32_t(acc[r][j]);
}

/// dst = src ^ flip over n bytes: 32 at a time, the tail as two overlapping
/// chunks (the stem's 3-channel runs are 21 bytes). (A byte loop through
/// uint8_t pointers reloads the call's fields every byte: they may alias.)
template <typename Chunk>
void copyChunk(uint8_t* dst, const uint8_t* src, uint8_t flip) {
  Chunk v;
  std::memcpy(&v, src, sizeof(Chunk));
  Chunk f;
  std::memset(&f, flip, sizeof(Chunk));
  v ^= f;
  std::memcpy(dst, &v, sizeof(Chunk));
}
void copyFlipped(uint8_t* dst, const uint8_t* src, int64_t n, uint8_t flip) {
  const __m256i f = _mm256_set1_epi8(char(flip));
  auto copy32 = [&](int64_t at) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at),
                        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at)), f));
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) copy32(i);
  if (i == n) return;
  if (n >= 32) return copy32(n - 32);
  if (n >= 8) {
    for (int64_t j = 0; j + 8 <= n; j += 8) copyChunk<uint64_t>(dst + j, src + j, flip);
    return copyChunk<uint64_t>(dst + n - 8, src + n - 8, flip);
  }
  if (n >= 4) {
    copyChunk<uint32_t>(dst, src, flip);
    return copyChunk<uint32_t>(dst + n - 4, src + n - 4, flip);
  }
  for (; i < n; ++i) dst[i] = src[i] ^ flip;
}

/// One im2col row: the window of output pixel (img, oy, ox) as u8 codes,
/// padding taps hold zu. With dilation 1 the in-bounds taps of a window row
/// are one run of the NHWC input; a run shorter than 32 bytes (the stems' 3
/// channels) is one 32-byte copy when the source and `limit` (the end of
/// the im2col buffer) allow it: the bytes past the run land in the next
/// window row, the next im2col row or the K padding, which are written after
/// it or multiply zero taps of B.
void im2colRow(const Int8ConvCall& call, int64_t img, int64_t oy, int64_t ox, uint8_t flip, uint8_t* dst,
               const uint8_t* inputEnd, const uint8_t* limit) {
  const int64_t c = call.c, rowBytes = call.kw * c;
  const int64_t ix0 = ox * call.sw - call.pl;
  const uint8_t zu = uint8_t(call.zu);
  const __m256i flips = _mm256_set1_epi8(char(flip));
  for (int64_t ky = 0; ky < call.kh; ++ky, dst += rowBytes) {
    const int64_t iy = oy * call.sh - call.pt + ky * call.dh;
    if (iy < 0 || iy >= call.h) {
      std::memset(dst, zu, size_t(rowBytes));
      continue;
    }
    const uint8_t* src = call.input + (img * call.h + iy) * call.w * c;
    if (call.dw == 1) {
      const int64_t first = std::clamp<int64_t>(-ix0, 0, call.kw);
      const int64_t last = std::clamp<int64_t>(call.w - ix0, first, call.kw);
      if (first > 0) std::memset(dst, zu, size_t(first * c));
      const int64_t run = (last - first) * c;
      const uint8_t* from = src + (ix0 + first) * c;
      uint8_t* to = dst + first * c;
      if (run < 32 && from + 32 <= inputEnd && to + 32 <= limit)
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(to),
            _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)), flips));
      else
        copyFlipped(to, from, run, flip);
      if (last < call.kw) std::memset(dst + last * c, zu, size_t((call.kw - last) * c));
      continue;
    }
    for (int64_t kx = 0; kx < call.kw; ++kx) {
      const int64_t ix = ix0 + kx * call.dw;
      if (ix < 0 || ix >= call.w)
        std::memset(dst + kx * c, zu, size_t(c));
      else
        copyFlipped(dst + kx * c, src + ix * c, c, flip);
    }
  }
}

/// The im2col buffer's bytes past its rows: room for im2colRow's 32-byte copies.
constexpr int64_t kIm2colSlack = 32;

/// im2col of `rows` output pixels from row0 into a (row stride kp, kp * rows
/// + kIm2colSlack bytes). The padding columns past k are left as they are:
/// B's rows there are zero.
void im2colBlock(const Int8ConvCall& call, int64_t row0, int64_t rows, int64_t kp, uint8_t flip, uint8_t* a) {
  const bool pointwise = call.kh == 1 && call.kw == 1 && call.sh == 1 && call.sw == 1 && call.pt == 0 &&
                         call.pl == 0 && call.oh == call.h && call.ow == call.w && kp == call.c;
  if (pointwise) return copyFlipped(a, call.input + row0 * call.c, rows * call.c, flip);
  const uint8_t* inputEnd = call.input + call.n * call.h * call.w * call.c;
  const uint8_t* limit = a + rows * kp + kIm2colSlack;
  // The pixel's coordinates stepped along, not divided out per row.
  int64_t img = row0 / (call.oh * call.ow), oy = row0 % (call.oh * call.ow) / call.ow, ox = row0 % call.ow;
  for (int64_t r = 0; r < rows; ++r) {
    im2colRow(call, img, oy, ox, flip, a + r * kp, inputEnd, limit);
    if (++ox == call.ow) {
      ox = 0;
      if (++oy == call.oh) {
        oy = 0;
        ++img;
      }
    }
  }
}

}  // namespace

const char* int8KernelName() { return int8IsaName(int8Isa()); }

size_t int8ConvWeightBytes(int64_t k, int64_t n) {
  return size_t(int8PaddedK(k) * int8PaddedN(n)) + 3 * sizeof(int32_t) * size_t(int8PaddedN(n)) +
         sizeof(int32_t);
}

Int8ConvWeights int8ConvWeightsAt(const uint8_t* block, int64_t k, int64_t n) {
  Int8ConvWeights w;
  const int64_t np = int8PaddedN(n);
  w.b = reinterpret_cast<const int8_t*>(block);
  const auto* tail = reinterpret_cast<const int32_t*>(block + int8PaddedK(k) * np);
  w.correction = tail;
  w.multiplier = tail + np;
  w.shift = tail + 2 * np;
  w.narrow = tail[3 * np] != 0;
  return w;
}

void packInt8Conv(const int8_t* filter, const int32_t* bias, const float* filterScales, float inScale,
                  float outScale, int32_t zu, int64_t k, int64_t n, uint8_t* block) {
  const int64_t kp = int8PaddedK(k), np = int8PaddedN(n);
  auto* b = reinterpret_cast<int8_t*>(block);
  std::memset(block, 0, int8ConvWeightBytes(k, n));
  // Panel p, group k4: 32 columns x 4 taps.
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) {
      const int64_t p = j / kInt8PanelCols, col = j % kInt8PanelCols;
      b[p * kp * kInt8PanelCols + (kk / 4) * 4 * kInt8PanelCols + col * 4 + kk % 4] = filter[j * k + kk];
    }
  auto* tail = reinterpret_cast<int32_t*>(block + kp * np);
  for (int64_t j = 0; j < n; ++j) {
    uint32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) sum += uint32_t(int32_t(filter[j * k + kk]));
    tail[j] = int32_t(uint32_t(bias[j]) - uint32_t(zu) * sum);
    const quant::FixedPointMultiplier m = quant::outputMultiplier(inScale, filterScales[j], outScale);
    tail[np + j] = m.multiplier;
    tail[2 * np + j] = m.shift;
  }
  bool narrow = true;
  for (int64_t i = 0; i < n * k; ++i) narrow = narrow && filter[i] >= -64 && filter[i] <= 63;
  tail[3 * np] = narrow ? 1 : 0;
}

void int8Conv(const Int8ConvCall& call, ThreadPool& pool) { int8Conv(call, pool, int8Isa()); }

namespace {

/// The fused residual add's tiles read the residual in 32-byte pieces of many
/// rows: a work item fetches its part (columns [first, last) of its rows) ahead.
void prefetchResidual(const Int8ConvCall& call, int64_t row0, int64_t rows, int64_t first, int64_t last) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = first; c < last; c += 64)
      _mm_prefetch(reinterpret_cast<const char*>(call.residual + (row0 + r) * call.o + c), _MM_HINT_T0);
}

/// The VNNI tile's call for `rows` rows of A against the panel at column col0 (out and ldo left to the
/// caller).
Int8TileArgs vnniTileArgs(const Int8ConvCall& call, const Int8ConvWeights& weights, const uint8_t* rowsA,
                          int64_t kp, const int8_t* panel, int64_t rows, int64_t cols, int64_t col0) {
  Int8TileArgs t;
  t.a = rowsA;
  t.lda = kp;
  t.b = panel;
  t.kp = kp;
  t.rows = rows;
  t.cols = cols;
  t.correction = weights.correction + col0;
  t.multiplier = weights.multiplier + col0;
  t.shift = weights.shift + col0;
  t.zero = call.outputZero;
  t.lo = call.lo;
  t.hi = call.hi;
  return t;
}

/// The operands of the AVX2 or portable tile: A's rows and the panel, and
/// their int16 copies when the AVX2 tile for wide taps reads those (a16 set).
struct Int32Tile {
  const uint8_t* a;
  const int16_t* a16;
  const int8_t* panel;
  const int16_t* panel16;
  int64_t kp;
  int32_t* acc;  ///< kRows x kInt8PanelCols int32
};

/// The AVX2 or portable path: the tile's int32 product, then each of its
/// valid rows requantized into out (row stride ldo).
void int32TileRequant(Int8Isa isa, const Int8ConvCall& call, const Int8ConvWeights& weights,
                      const Int32Tile& t, int64_t validRows, int64_t cols, int64_t col0, uint8_t* out,
                      int64_t ldo) {
  if (t.a16)
    int8TileAvx2Widened(t.a16, t.kp, t.panel16, t.kp, t.acc);
  else if (isa == Int8Isa::Avx2)
    int8TileAvx2(t.a, t.kp, t.panel, t.kp, weights.narrow, validRows, t.acc);
  else
    int8TilePortable(t.a, t.kp, t.panel, t.kp, t.acc);
  for (int64_t r = 0; r < validRows; ++r)
    int8Requantize(isa, t.acc + r * kInt8PanelCols, weights.correction + col0, weights.multiplier + col0,
                   weights.shift + col0, cols, call.outputZero, call.lo, call.hi, out + r * ldo);
}

}  // namespace

void int8Conv(const Int8ConvCall& call, ThreadPool& pool, Int8Isa isa) {
  const int64_t k = call.kh * call.kw * call.c, kp = int8PaddedK(k),
                panels = int8PaddedN(call.o) / kInt8PanelCols;
  const int64_t m = call.n * call.oh * call.ow;
  const Int8ConvWeights weights = int8ConvWeightsAt(call.weights, k, call.o);
  const int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
  // Layers with few row blocks (resnet's 7x7 stages: one) also split their
  // panels, so every thread has work; each panel group im2cols its block.
  const int64_t wanted = 4 * int64_t(pool.size());
  const int64_t groups = pool.size() == 1 ? 1 : std::min(panels, (wanted + blocks - 1) / blocks);
  const int64_t panelsPerGroup = (panels + groups - 1) / groups;
  const uint8_t flip = call.inputSigned ? 0x80 : 0;
  const bool residual = call.hasResidual != 0;
  Int8AddPlanes addPlanes;
  const Int8AddPlanes* planes =
      residual && isa == Int8Isa::Avx512Vnni && int8AddPlanesAvx512(call.residualAdd, addPlanes) ? &addPlanes
                                                                                                 : nullptr;
  pool.parallelFor(blocks * groups, [&](int64_t item, int) {
    thread_local std::vector<uint8_t> a;
    thread_local std::vector<int32_t> tile;
    // With a fused residual add, a tile's conv codes go here first: the output may be the residual.
    uint8_t convCodes[kRows * kInt8PanelCols];
    a.resize(size_t(kBlockRows * kp + kIm2colSlack));
    tile.resize(size_t(kRows * kInt8PanelCols));
    const int64_t block = item / groups, p0 = item % groups * panelsPerGroup;
    const int64_t row0 = block * kBlockRows, rows = std::min(kBlockRows, m - row0);
    im2colBlock(call, row0, rows, kp, flip, a.data());
    // The AVX2 tile for wide taps reads int16 operands: the block's rows (up
    // to a whole tile) widened once here, each panel once below, when more
    // than one tile shares the panel; a block of a few rows (a classifier's
    // one) runs the tile that widens as it goes, on those rows only.
    const bool widened = isa == Int8Isa::Avx2 && !weights.narrow && rows > kRows;
    thread_local std::vector<int16_t> a16, b16;
    if (widened) {
      const int64_t tileRowsA = (rows + kRows - 1) / kRows * kRows;
      a16.resize(size_t(tileRowsA * kp));
      int8WidenAvx2(a.data(), tileRowsA * kp, a16.data());
      b16.resize(size_t(kp * kInt8PanelCols));
    }
    if (residual && planes)
      prefetchResidual(call, row0, rows, p0 * kInt8PanelCols,
                       std::min(call.o, (p0 + panelsPerGroup) * kInt8PanelCols));
    for (int64_t p = p0; p < std::min(panels, p0 + panelsPerGroup); ++p) {
      const int8_t* panel = weights.b + p * kp * kInt8PanelCols;
      const int64_t col0 = p * kInt8PanelCols, cols = std::min(kInt8PanelCols, call.o - col0);
      if (widened) int8WidenPanelAvx2(panel, kp, b16.data());
      // The VNNI tile takes the whole block (its constants made once per panel), unless the
      // residual add follows it through the stack buffer (6 rows).
      const bool wholeBlock = isa == Int8Isa::Avx512Vnni && (!residual || planes != nullptr);
      const int64_t tileRows = wholeBlock ? rows : isa == Int8Isa::Avx512Vnni ? kInt8VnniTileRows : kRows;
      for (int64_t r0 = 0; r0 < rows; r0 += tileRows) {
        const uint8_t* rowsA = a.data() + r0 * kp;
        const int64_t validRows = std::min(tileRows, rows - r0);
        uint8_t* const target = call.output + (row0 + r0) * call.o + col0;
        const uint8_t* const residualRows = residual ? call.residual + (row0 + r0) * call.o + col0 : nullptr;
        // The lookup add runs in the tile's registers; the others add the codes from a stack buffer.
        const bool inTile = residual && planes != nullptr;
        uint8_t* const out = residual && !inTile ? convCodes : target;
        const int64_t ldo = residual && !inTile ? kInt8PanelCols : call.o;
        auto addResidual = [&] {
          if (residual && !inTile)
            int8AddBlock(isa, call.residualAdd, planes, convCodes, kInt8PanelCols, residualRows, call.o,
                         target, call.o, validRows, cols);
        };
        if (isa == Int8Isa::Avx512Vnni) {
          Int8TileArgs t = vnniTileArgs(call, weights, rowsA, kp, panel, validRows, cols, col0);
          t.out = out;
          t.ldo = ldo;
          if (inTile) {
            t.residual = residualRows;
            t.ldr = call.o;
            int8TileVnniRequantAdd(t, call.residualAdd, planes);
            continue;
          }
          int8TileVnniRequant(t);
          addResidual();
          continue;
        }
        const Int32Tile t{rowsA,      widened ? a16.data() + r0 * kp : nullptr, panel, b16.data(), kp,
                          tile.data()};
        int32TileRequant(isa, call, weights, t, validRows, cols, col0, out, ldo);
        addResidual();
      }
    }
  });
}

void setInt8AddMultipliers(Int8AddCall& call, const quant::AddMultipliers& m) {
  call.aMultiplier = m.a.multiplier;
  call.aShift = m.a.shift;
  call.bMultiplier = m.b.multiplier;
  call.bShift = m.b.shift;
  call.outMultiplier = m.out.multiplier;
  call.outShift = m.out.shift;
}

void int8Add(const Int8AddCall& call, const uint8_t* table, ThreadPool& pool) {
  int8Add(call, table, pool, int8Isa());
}

void int8Add(const Int8AddCall& call, const uint8_t* table, ThreadPool& pool, Int8Isa isa) {
  constexpr int64_t kChunk = 16384;
  Int8AddPlanes addPlanes;
  const Int8AddPlanes* planes =
      isa == Int8Isa::Avx512Vnni && int8AddPlanesAvx512(call, addPlanes) ? &addPlanes : nullptr;
  pool.parallelFor((call.count + kChunk - 1) / kChunk, [&](int64_t chunk, int) {
    const int64_t begin = chunk * kChunk, end = std::min(call.count, begin + kChunk);
    if (isa == Int8Isa::Avx512Vnni) return int8AddAvx512(call, planes, begin, end);
    const uint8_t *a = call.a, *b = call.b;
    uint8_t* out = call.out;
    for (int64_t i = begin; i < end; ++i) out[i] = table[size_t(a[i]) * 256 + b[i]];
  });
}

}  // namespace ember::cpu
