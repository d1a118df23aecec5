// The cpu backend's int8 kernels on every ISA this CPU has: the vectorised
// epilogues against QuantMath.h's scalar requantize, on random and extreme
// accumulators, multipliers and shifts; the convolution against a direct
// loop over the spec's arithmetic (bias + sum over in-bounds taps (q - z) w).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/KernelInt8.h"
#include "backends/cpu/ThreadPool.h"
#include "ember/QuantMath.h"

namespace {

using ember::cpu::Int8Isa;

std::vector<Int8Isa> isasOfThisCpu() {
  std::vector<Int8Isa> isas;
  for (Int8Isa isa : {Int8Isa::Portable, Int8Isa::Avx2, Int8Isa::Avx512Vnni})
    if (isa <= ember::cpu::int8HostIsa()) isas.push_back(isa);
  return isas;
}

TEST(CpuInt8Epilogue, MatchesQuantMathRequantize) {
  for (Int8Isa isa : isasOfThisCpu()) {
    SCOPED_TRACE(ember::cpu::int8IsaName(isa));
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t n = 1 + int64_t(rng() % 40);
      std::vector<int32_t> acc(n), correction(n), multiplier(n), shift(n);
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t pick = uint32_t(rng() % 4);
        acc[j] = pick == 0 ? INT32_MIN : pick == 1 ? INT32_MAX : int32_t(uint32_t(rng()));
        correction[j] = int32_t(uint32_t(rng())) >> int(rng() % 32);
        // Every multiplier quantizeMultiplier can give, shifts across [-31, 30]; every
        // other trial only shifts >= 1 (real < 1/2), the AVX-512 epilogue's fast path.
        const int exponent = trial % 2 ? -1 - int(rng() % 30) : int(rng() % 61) - 30;
        const double real = std::ldexp(0.5 + double(rng() % 1000000) / 2e6, exponent);
        const ember::quant::FixedPointMultiplier m = ember::quant::quantizeMultiplier(real);
        multiplier[j] = m.multiplier;
        shift[j] = m.shift;
      }
      const bool isSigned = rng() % 2;
      const int32_t zero = isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256);
      const ember::quant::QuantRange range =
          isSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
      std::vector<uint8_t> got(n);
      ember::cpu::int8Requantize(isa, acc.data(), correction.data(), multiplier.data(), shift.data(), n, zero,
                                 range.lo, range.hi, got.data());
      for (int64_t j = 0; j < n; ++j) {
        const int32_t total = int32_t(uint32_t(acc[j]) + uint32_t(correction[j]));
        const int32_t want =
            ember::quant::requantize(total, {multiplier[j], shift[j]}, zero, range.lo, range.hi);
        ASSERT_EQ(got[j], uint8_t(want)) << "trial " << trial << " column " << j << " total " << total
                                         << " multiplier " << multiplier[j] << " shift " << shift[j];
      }
    }
  }
}

/// One random convolution: input codes, filter taps limited to [-tapLimit, tapLimit - 1].
struct ConvCase {
  ember::cpu::Int8ConvCall call;
  std::vector<uint8_t> input;
  std::vector<int8_t> filter;  // [O, KH, KW, C]
  std::vector<int32_t> bias;
  std::vector<float> filterScales;
  float inScale = 0.02f, outScale = 0.05f;
  int32_t inputZero = 0;
};

ConvCase randomConv(std::mt19937_64& rng, int tapLimit) {
  ConvCase t;
  ember::cpu::Int8ConvCall& c = t.call;
  c.n = 1 + int64_t(rng() % 2);
  c.h = 3 + int64_t(rng() % 6);
  c.w = 3 + int64_t(rng() % 6);
  c.c = 1 + int64_t(rng() % 37);
  c.o = 1 + int64_t(rng() % 70);
  c.kh = 1 + int64_t(rng() % 3);
  c.kw = 1 + int64_t(rng() % 3);
  c.sh = 1 + int64_t(rng() % 2);
  c.sw = 1 + int64_t(rng() % 2);
  c.pt = int64_t(rng() % 2);
  c.pl = int64_t(rng() % 2);
  c.oh = (c.h + 2 * c.pt - c.kh) / c.sh + 1;
  c.ow = (c.w + 2 * c.pl - c.kw) / c.sw + 1;
  c.inputSigned = int32_t(rng() % 2);
  c.outputSigned = int32_t(rng() % 2);
  t.inputZero = c.inputSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256);
  c.zu = c.inputSigned ? t.inputZero + 128 : t.inputZero;
  const ember::quant::QuantRange out =
      c.outputSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
  c.outputZero = out.lo + int32_t(rng() % 256);
  c.lo = out.lo;
  c.hi = out.hi;
  t.input.resize(size_t(c.n * c.h * c.w * c.c));
  for (auto& v : t.input) v = uint8_t(rng());
  t.filter.resize(size_t(c.o * c.kh * c.kw * c.c));
  for (auto& v : t.filter) v = int8_t(int32_t(rng() % uint64_t(2 * tapLimit)) - tapLimit);
  for (int64_t o = 0; o < c.o; ++o) {
    t.bias.push_back(int32_t(rng() % 20001) - 10000);
    t.filterScales.push_back(0.001f + float(rng() % 1000) * 1e-5f);
  }
  return t;
}

std::vector<uint8_t> directConv(const ConvCase& t) {
  const ember::cpu::Int8ConvCall& c = t.call;
  std::vector<uint8_t> out(size_t(c.n * c.oh * c.ow * c.o));
  for (int64_t img = 0; img < c.n; ++img)
    for (int64_t oy = 0; oy < c.oh; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox)
        for (int64_t o = 0; o < c.o; ++o) {
          int32_t acc = t.bias[size_t(o)];
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - c.pt + ky * c.dh, ix = ox * c.sw - c.pl + kx * c.dw;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int64_t ch = 0; ch < c.c; ++ch) {
                const uint8_t byte = t.input[size_t(((img * c.h + iy) * c.w + ix) * c.c + ch)];
                const int32_t q = c.inputSigned ? int32_t(int8_t(byte)) : int32_t(byte);
                acc += (q - t.inputZero) * t.filter[size_t(((o * c.kh + ky) * c.kw + kx) * c.c + ch)];
              }
            }
          const auto m = ember::quant::outputMultiplier(t.inScale, t.filterScales[size_t(o)], t.outScale);
          out[size_t(((img * c.oh + oy) * c.ow + ox) * c.o + o)] =
              uint8_t(ember::quant::requantize(acc, m, c.outputZero, c.lo, c.hi));
        }
  return out;
}

/// Packs t's filter, runs the convolution on every ISA of this CPU (2
/// threads) and compares with the direct loop.
void expectEveryIsaMatches(const ConvCase& t, int tapLimit, const std::string& what) {
  ember::cpu::ThreadPool pool(2);
  const int64_t k = t.call.kh * t.call.kw * t.call.c;
  std::vector<uint8_t> block(ember::cpu::int8ConvWeightBytes(k, t.call.o));
  ember::cpu::packInt8Conv(t.filter.data(), t.bias.data(), t.filterScales.data(), t.inScale, t.outScale,
                           t.call.zu, k, t.call.o, block.data());
  EXPECT_EQ(ember::cpu::int8ConvWeightsAt(block.data(), k, t.call.o).narrow, tapLimit == 64) << what;
  const std::vector<uint8_t> want = directConv(t);
  for (Int8Isa isa : isasOfThisCpu()) {
    std::vector<uint8_t> got(want.size(), 0xEE);
    ember::cpu::Int8ConvCall call = t.call;
    call.input = t.input.data();
    call.output = got.data();
    call.weights = block.data();
    ember::cpu::int8Conv(call, pool, isa);
    ASSERT_EQ(got, want) << what << " isa " << ember::cpu::int8IsaName(isa) << " k " << k << " o "
                         << t.call.o;
  }
}

// Taps in [-64, 63] take the AVX2 kernel's vpmaddubsw path, full-range taps
// its widening vpmaddwd path; both must equal the direct loop on every ISA.
TEST(CpuInt8Conv, EveryIsaMatchesTheDirectLoop) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int tapLimit = trial % 2 ? 64 : 128;
    expectEveryIsaMatches(randomConv(rng, tapLimit), tapLimit, "trial " + std::to_string(trial));
  }
}

/// A random case reshaped: input h x w x c, o filters of kh x kw, stride s,
/// padding p, dilation d.
ConvCase shapedConv(std::mt19937_64& rng, int64_t h, int64_t w, int64_t c, int64_t o, int64_t kh, int64_t kw,
                    int64_t s, int64_t p, int64_t d) {
  ConvCase t = randomConv(rng, 128);
  ember::cpu::Int8ConvCall& call = t.call;
  call.n = 1;
  call.h = h;
  call.w = w;
  call.c = c;
  call.o = o;
  call.kh = kh;
  call.kw = kw;
  call.sh = call.sw = s;
  call.pt = call.pl = p;
  call.dh = call.dw = d;
  call.oh = (h + 2 * p - d * (kh - 1) - 1) / s + 1;
  call.ow = (w + 2 * p - d * (kw - 1) - 1) / s + 1;
  t.input.resize(size_t(h * w * c));
  for (auto& v : t.input) v = uint8_t(rng());
  t.filter.resize(size_t(o * kh * kw * c));
  for (auto& v : t.filter) v = int8_t(rng());
  t.bias.resize(size_t(o), 77);
  t.filterScales.resize(size_t(o), 0.004f);
  return t;
}

// The im2col's paths and the work split: the stem's 3-channel windows (runs
// shorter than a vector, padding on both sides), a pointwise layer read as one
// run (several row blocks, and c not a multiple of 4), dilation (tap by tap),
// a 1x1 with stride, and many panels over one row block (split by panels).
TEST(CpuInt8Conv, WindowShapesMatchTheDirectLoop) {
  std::mt19937_64 rng(21);
  struct Shape {
    int64_t h, w, c, o, kh, kw, s, p, d;
  };
  for (const Shape& s : {Shape{23, 21, 3, 40, 7, 7, 2, 3, 1}, Shape{13, 11, 16, 40, 1, 1, 1, 0, 1},
                         Shape{13, 11, 6, 33, 1, 1, 1, 0, 1}, Shape{9, 10, 5, 20, 3, 3, 1, 2, 2},
                         Shape{9, 9, 12, 17, 1, 1, 2, 0, 1}, Shape{3, 3, 24, 200, 3, 3, 1, 1, 1},
                         Shape{6, 7, 40, 70, 5, 2, 1, 1, 1}}) {
    const ConvCase t = shapedConv(rng, s.h, s.w, s.c, s.o, s.kh, s.kw, s.s, s.p, s.d);
    expectEveryIsaMatches(t, 128,
                          "h " + std::to_string(s.h) + " c " + std::to_string(s.c) + " k " +
                              std::to_string(s.kh) + "x" + std::to_string(s.kw) + " d " +
                              std::to_string(s.d));
  }
}

// Filter scales that make some columns' multipliers 1/2 or more (the
// AVX-512 epilogue's general path) next to small ones (its fast path), in
// the same 16 columns and in separate ones, over tile edges.
TEST(CpuInt8Conv, LargeAndSmallMultipliersMatchTheDirectLoop) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 8; ++trial) {
    ConvCase t = shapedConv(rng, 5 + trial, 4, 3 + 5 * trial, 20 + 9 * trial, 1 + trial % 3, 1 + trial % 3,
                            1 + trial % 2, trial % 2, 1);
    for (size_t o = 0; o < t.filterScales.size(); ++o)
      t.filterScales[o] = (o / 16 + trial) % 3 == 0 || (trial % 2 && o % 5 == 0) ? 2.0f + 0.01f * float(o)
                                                                                 : 0.003f + 1e-4f * float(o);
    expectEveryIsaMatches(t, 128, "trial " + std::to_string(trial));
  }
}

// The conv with a fused QuantizedAdd (Int8ConvCall::hasResidual): the direct
// loop's codes added to a residual by addQuantized, on every ISA, with the
// residual apart from the output and as the output itself (in place); shapes
// with row and column tails, several row blocks and split panels.
TEST(CpuInt8Conv, FusedResidualAddMatchesConvThenAddQuantized) {
  ember::cpu::ThreadPool pool(2);
  std::mt19937_64 rng(51);
  for (int trial = 0; trial < 24; ++trial) {
    ConvCase t = trial < 20 ? randomConv(rng, 128)
                            : shapedConv(rng, 11 + trial, 10, 16 * trial - 300, 2 * trial + 30, 1 + trial % 3,
                                         1 + trial % 3, 1, trial % 3 / 2, 1);
    const int64_t k = t.call.kh * t.call.kw * t.call.c;
    std::vector<uint8_t> block(ember::cpu::int8ConvWeightBytes(k, t.call.o));
    ember::cpu::packInt8Conv(t.filter.data(), t.bias.data(), t.filterScales.data(), t.inScale, t.outScale,
                             t.call.zu, k, t.call.o, block.data());
    ember::cpu::Int8AddCall& add = t.call.residualAdd;
    add.aSigned = t.call.outputSigned;
    add.bSigned = int32_t(rng() % 2);
    const bool outSigned = rng() % 2;
    auto zeroOf = [&](bool isSigned) { return isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256); };
    add.aZero = t.call.outputZero;
    add.bZero = zeroOf(add.bSigned != 0);
    add.outZero = zeroOf(outSigned);
    const ember::quant::QuantRange full = outSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
    add.lo = trial % 3 == 1 ? add.outZero : full.lo;  // a fused ReLU
    add.hi = full.hi;
    const float residualScale = 0.01f + float(rng() % 100) * 1e-3f;
    const ember::quant::AddMultipliers m =
        ember::quant::addMultipliers(t.outScale, residualScale, t.outScale + residualScale);
    ember::cpu::setInt8AddMultipliers(add, m);
    t.call.hasResidual = 1;
    const std::vector<uint8_t> conv = directConv(t);
    std::vector<uint8_t> residual(conv.size()), want(conv.size());
    auto code = [](int32_t isSigned, uint8_t byte) {
      return isSigned ? int32_t(int8_t(byte)) : int32_t(byte);
    };
    for (size_t i = 0; i < conv.size(); ++i) {
      residual[i] = uint8_t(rng());
      want[i] = uint8_t(ember::quant::addQuantized(code(add.aSigned, conv[i]), add.aZero,
                                                   code(add.bSigned, residual[i]), add.bZero, m, add.outZero,
                                                   add.lo, add.hi));
    }
    for (Int8Isa isa : isasOfThisCpu())
      for (bool inPlace : {false, true}) {
        std::vector<uint8_t> got = inPlace ? residual : std::vector<uint8_t>(conv.size(), 0xEE);
        ember::cpu::Int8ConvCall call = t.call;
        call.input = t.input.data();
        call.output = got.data();
        call.residual = inPlace ? got.data() : residual.data();
        call.weights = block.data();
        ember::cpu::int8Conv(call, pool, isa);
        ASSERT_EQ(got, want) << "trial " << trial << " isa " << ember::cpu::int8IsaName(isa) << " in place "
                             << inPlace << " k " << k << " o " << t.call.o;
      }
  }
}

/// The depthwise convolution (group == C == O) on every ISA against the
/// spec's loop: channel counts around the 16-lane blocks (32 and 16 with
/// stride 1: 2 or 4 pixels in one load; tails of at most 16 and 32 channels
/// take 4 and 2 pixels per vector), odd and even tap counts (the last pair's second tap is the zero point's row),
/// stride, dilation, padding, i8 and u8 input with any zero point.
TEST(CpuInt8Depthwise, EveryIsaMatchesTheDirectLoop) {
  ember::cpu::ThreadPool pool(2);
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 60; ++trial) {
    ember::cpu::Int8DepthwiseCall d;
    d.n = 1 + int64_t(rng() % 2);
    d.h = 2 + int64_t(rng() % 9);
    d.w = 2 + int64_t(rng() % 9);
    d.c = std::vector<int64_t>{1, 7, 15, 16, 17, 32, 33, 40, 63, 64, 65, 100, 144}[rng() % 13];
    d.kh = 1 + int64_t(rng() % 5);
    d.kw = 1 + int64_t(rng() % 5);
    d.sh = d.sw = 1 + int64_t(rng() % 2);
    d.dh = d.dw = 1 + int64_t(rng() % 2);
    d.pt = d.pl = int64_t(rng() % 3);
    if (trial < 4) {  // 32 (mobilenet's first depthwise) and 16 channels, 3x3, stride 1, padding 1
      d.c = trial < 2 ? 32 : 16;
      d.kh = d.kw = 3;
      d.sh = d.sw = d.dh = d.dw = 1;
      d.pt = d.pl = 1;
      d.w = 9 + trial;
    }
    d.oh = (d.h + 2 * d.pt - d.dh * (d.kh - 1) - 1) / d.sh + 1;
    d.ow = (d.w + 2 * d.pl - d.dw * (d.kw - 1) - 1) / d.sw + 1;
    if (d.oh < 1 || d.ow < 1) continue;
    d.inputSigned = int32_t(rng() % 2);
    d.inputZero = d.inputSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256);
    const ember::quant::QuantRange out = rng() % 2 ? ember::quant::int8Range() : ember::quant::uint8Range();
    d.outputZero = out.lo + int32_t(rng() % 256);
    d.lo = out.lo;
    d.hi = out.hi;
    const int64_t taps = d.kh * d.kw;
    std::vector<uint8_t> input(size_t(d.n * d.h * d.w * d.c));
    for (auto& v : input) v = uint8_t(rng());
    std::vector<int8_t> filter(size_t(d.c * taps));
    for (auto& v : filter) v = int8_t(rng());
    std::vector<int32_t> bias(size_t(d.c));
    std::vector<float> scales(size_t(d.c));
    for (int64_t ch = 0; ch < d.c; ++ch) {
      bias[size_t(ch)] = int32_t(rng() % 200001) - 100000;
      // Every fourth trial has multipliers above 1/2 among small ones (the
      // AVX-512 epilogue's general and fast paths in one block).
      scales[size_t(ch)] = trial % 4 == 3 && rng() % 3 == 0 ? 1.0f + float(rng() % 1000) * 1e-3f
                                                            : 0.001f + float(rng() % 1000) * 1e-5f;
    }
    const float inScale = 0.03f, outScale = 0.02f;
    std::vector<uint8_t> block(ember::cpu::int8DepthwiseWeightBytes(taps, d.c));
    ember::cpu::packInt8Depthwise(filter.data(), bias.data(), scales.data(), inScale, outScale, taps, d.c,
                                  block.data());
    std::vector<uint8_t> want(size_t(d.n * d.oh * d.ow * d.c));
    for (int64_t img = 0; img < d.n; ++img)
      for (int64_t oy = 0; oy < d.oh; ++oy)
        for (int64_t ox = 0; ox < d.ow; ++ox)
          for (int64_t ch = 0; ch < d.c; ++ch) {
            int32_t acc = bias[size_t(ch)];
            for (int64_t ky = 0; ky < d.kh; ++ky)
              for (int64_t kx = 0; kx < d.kw; ++kx) {
                const int64_t iy = oy * d.sh - d.pt + ky * d.dh, ix = ox * d.sw - d.pl + kx * d.dw;
                if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
                const uint8_t byte = input[size_t(((img * d.h + iy) * d.w + ix) * d.c + ch)];
                const int32_t q = d.inputSigned ? int32_t(int8_t(byte)) : int32_t(byte);
                acc += (q - d.inputZero) * filter[size_t(ch * taps + ky * d.kw + kx)];
              }
            const auto m = ember::quant::outputMultiplier(inScale, scales[size_t(ch)], outScale);
            want[size_t(((img * d.oh + oy) * d.ow + ox) * d.c + ch)] =
                uint8_t(ember::quant::requantize(acc, m, d.outputZero, d.lo, d.hi));
          }
    for (Int8Isa isa : isasOfThisCpu()) {
      std::vector<uint8_t> got(want.size(), 0xEE);
      ember::cpu::Int8DepthwiseCall call = d;
      call.input = input.data();
      call.output = got.data();
      call.weights = block.data();
      ember::cpu::int8Depthwise(call, pool, isa);
      ASSERT_EQ(got, want) << "trial " << trial << " isa " << ember::cpu::int8IsaName(isa) << " c " << d.c
                           << " taps " << d.kh << "x" << d.kw;
    }
  }
}

/// QuantizedAdd on every ISA (the AVX-512 arithmetic, the table elsewhere)
/// against quant::addQuantized: scales from equal to 1000x apart, i8 and u8
/// operands and output, zero points, clipped ranges, a count that is not a
/// multiple of 16, and every pair of codes once.
TEST(CpuInt8Add, EveryIsaMatchesAddQuantized) {
  ember::cpu::ThreadPool pool(2);
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 24; ++trial) {
    const float aScale = 0.001f + float(rng() % 1000) * 1e-4f;
    const float bScale = trial % 3 == 0 ? aScale : aScale * std::ldexp(1.0f, int(rng() % 21) - 10);
    const float outScale = (aScale + bScale) * (0.3f + float(rng() % 100) * 0.01f);
    const ember::quant::AddMultipliers m = ember::quant::addMultipliers(aScale, bScale, outScale);
    ember::cpu::Int8AddCall call;
    call.aSigned = int32_t(rng() % 2);
    call.bSigned = int32_t(rng() % 2);
    const bool outSigned = rng() % 2;
    auto zeroOf = [&](bool isSigned) { return isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256); };
    call.aZero = zeroOf(call.aSigned);
    call.bZero = zeroOf(call.bSigned);
    call.outZero = zeroOf(outSigned);
    const ember::quant::QuantRange full = outSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
    call.lo = trial % 4 == 1 ? call.outZero : full.lo;  // a fused ReLU
    call.hi = full.hi;
    ember::cpu::setInt8AddMultipliers(call, m);
    auto code = [](bool isSigned, int byte) { return isSigned ? int32_t(int8_t(byte)) : int32_t(byte); };
    std::vector<uint8_t> a, b, want, table(65536);
    for (int x = 0; x < 256; ++x)
      for (int y = 0; y < 256; ++y) {
        const auto out =
            uint8_t(ember::quant::addQuantized(code(call.aSigned, x), call.aZero, code(call.bSigned, y),
                                               call.bZero, m, call.outZero, call.lo, call.hi));
        table[size_t(x * 256 + y)] = out;
        a.push_back(uint8_t(x));
        b.push_back(uint8_t(y));
        want.push_back(out);
      }
    const size_t count = want.size() - size_t(rng() % 16);
    for (Int8Isa isa : isasOfThisCpu()) {
      std::vector<uint8_t> got(want.size(), 0xEE);
      call.a = a.data();
      call.b = b.data();
      call.out = got.data();
      call.count = int64_t(count);
      ember::cpu::int8Add(call, table.data(), pool, isa);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], i < count ? want[i] : 0xEE)
            << "trial " << trial << " isa " << ember::cpu::int8IsaName(isa) << " a " << int(a[i]) << " b "
            << int(b[i]);
    }
    // AVX-512 both ways: the table-lookup add (when the CPU has VBMI) and the arithmetic.
    if (ember::cpu::int8HostIsa() != Int8Isa::Avx512Vnni) continue;
    ember::cpu::Int8AddPlanes planes;
    const bool lookup = ember::cpu::int8AddPlanesAvx512(call, planes);
    const ember::cpu::Int8AddPlanes* const withPlanes = lookup ? &planes : nullptr;
    for (const ember::cpu::Int8AddPlanes* p :
         {withPlanes, static_cast<const ember::cpu::Int8AddPlanes*>(nullptr)}) {
      std::vector<uint8_t> got(want.size(), 0xEE);
      call.out = got.data();
      ember::cpu::int8AddAvx512(call, p, 0, int64_t(count));
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], i < count ? want[i] : 0xEE) << "trial " << trial << " lookup " << (p != nullptr);
    }
  }
}

}  // namespace

namespace {

// Ties (k + 0.5 exactly), values next to ties, NaN, infinities and values far
// outside the range, against quant::quantizeValue element by element.
TEST(CpuInt8Quantize, MatchesQuantizeValue) {
  ember::cpu::ThreadPool pool(2);
  std::mt19937_64 rng(3);
  std::vector<float> x;
  for (int i = -600; i <= 600; ++i) {
    const float tie = float(i) + 0.5f;
    x.insert(x.end(), {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1e9f), float(i)});
  }
  x.insert(x.end(), {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.0f, -0.0f});
  for (int i = 0; i < 40000; ++i) x.push_back(std::ldexp(float(int32_t(rng() % 2000001) - 1000000), -13));
  // Scales whose ties are not exact in float too: x = the floats around (k + 0.5) * scale.
  std::vector<float> scales{1.0f, 0.25f, 0.0339241f, 3.0f};
  for (int i = 0; i < 6; ++i) scales.push_back(std::ldexp(float(rng() % 1000000 + 1), -int(rng() % 30) - 1));
  for (const float scale : scales)
    for (const Int8Isa isa : isasOfThisCpu())
      for (const bool isSigned : {true, false}) {
        const ember::quant::QuantRange range =
            isSigned ? ember::quant::int8Range() : ember::quant::uint8Range();
        const int32_t zero = isSigned ? 2 : 128;
        std::vector<float> scaled(x);
        for (float& v : scaled) v *= scale;  // ties stay ties: scale is applied back by the division
        for (int k = -300; k <= 300; ++k) {
          const float near = float((double(k) + 0.5) * double(scale));
          scaled.insert(scaled.end(), {near, std::nextafter(near, 0.0f), std::nextafter(near, 1e30f),
                                       std::nextafter(near, -1e30f)});
        }
        std::vector<uint8_t> got(scaled.size());
        ember::cpu::Int8QuantizeCall call;
        call.input = scaled.data();
        call.output = got.data();
        call.count = int64_t(scaled.size());
        call.scale = scale;
        call.zero = zero;
        call.lo = range.lo;
        call.hi = range.hi;
        ember::cpu::int8Quantize(call, pool, isa);
        for (size_t i = 0; i < scaled.size(); ++i)
          ASSERT_EQ(got[i], uint8_t(ember::quant::quantizeValue(scaled[i], scale, zero, range.lo, range.hi)))
              << "x " << scaled[i] << " scale " << scale << " isa " << ember::cpu::int8IsaName(isa);
      }
}

}  // namespace
