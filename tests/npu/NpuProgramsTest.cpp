// The hand-written programs of tests/npu run on the simulator and their outputs
// match plain C++ implementations written here (the quantized rounding is the
// one specification, ember::quant).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "NpuTestUtil.h"
#include "ember/QuantMath.h"

namespace ember::npu::test {
namespace {

std::vector<int32_t> matmul(const std::vector<int8_t>& a, const std::vector<int8_t>& b, int m, int k, int n) {
  std::vector<int32_t> c(size_t(m * n), 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      int32_t sum = 0;
      for (int t = 0; t < k; ++t) sum += int32_t(a[size_t(i * k + t)]) * int32_t(b[size_t(t * n + j)]);
      c[size_t(i * n + j)] = sum;
    }
  return c;
}

struct GemmCase {
  const char* file;
  int m, k, n;
  int outScaleLog2;  // 0: int32 output
};

class GemmProgram : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmProgram, MatchesPlainMatmul) {
  const GemmCase& g = GetParam();
  Bundle b = assembleTestFile(g.file);
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 7);
  const SimStats stats = run(b, config(), dram);
  EXPECT_EQ(stats.macs, uint64_t(g.m) * g.k * g.n);
  const auto expected = matmul(readI8(b, dram, "A"), readI8(b, dram, "B"), g.m, g.k, g.n);
  if (g.outScaleLog2 == 0) {
    EXPECT_EQ(readI32(b, dram, "C"), expected);
    return;
  }
  const auto multiplier = quant::quantizeMultiplier(std::ldexp(1.0, -g.outScaleLog2));
  const auto got = readI8(b, dram, "C");
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(got[i], quant::requantize(expected[i], multiplier, 0, -128, 127)) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemmProgram,
                         ::testing::Values(GemmCase{"gemm_64x48x32.s", 64, 48, 32, 11},
                                           GemmCase{"gemm_128x128x64_i32.s", 128, 128, 64, 0},
                                           GemmCase{"gemm_256x256x256.s", 256, 256, 256, 9}));

TEST(NpuPrograms, ConvolutionAsIm2colGemm) {
  Bundle b = assembleTestFile("conv_im2col.s");
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 11);
  run(b, config(), dram);
  const auto x = readI8(b, dram, "X"), w = readI8(b, dram, "W");
  const auto bias = readI32(b, dram, "bias");
  const auto y = readI8(b, dram, "Y");
  const auto multiplier = quant::quantizeMultiplier(0.05 * 0.01 / 0.1);
  ASSERT_EQ(multiplier.multiplier, 1374389535);  // the constant written in conv_im2col.s
  ASSERT_EQ(multiplier.shift, 7);
  const int H = 8, W = 8, C = 16, O = 16;
  for (int oy = 0; oy < H; ++oy)
    for (int ox = 0; ox < W; ++ox)
      for (int o = 0; o < O; ++o) {
        int32_t sum = bias[size_t(o)];
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy + ky - 1, ix = ox + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // zero padding
            for (int c = 0; c < C; ++c)
              sum += int32_t(x[size_t((iy * W + ix) * C + c)]) *
                     int32_t(w[size_t(((ky * 3 + kx) * C + c) * O + o)]);
          }
        const int32_t want = quant::requantize(sum, multiplier, -10, -10, 127);  // ReLU: lo = zero point
        ASSERT_EQ(y[size_t((oy * W + ox) * O + o)], want) << "at " << oy << "," << ox << "," << o;
      }
}

TEST(NpuPrograms, Pooling) {
  Bundle b = assembleTestFile("pool.s");
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 5);
  const SimStats stats = run(b, config(), dram);
  const auto x = readI8(b, dram, "X");
  auto at = [&](int y, int xx, int c) -> int { return x[size_t((y * 8 + xx) * 16 + c)]; };
  const auto p1 = readI8(b, dram, "P1"), p2 = readI8(b, dram, "P2"), p3 = readI8(b, dram, "P3");
  for (int oy = 0; oy < 4; ++oy)
    for (int ox = 0; ox < 4; ++ox)
      for (int c = 0; c < 16; ++c) {
        const size_t o = size_t((oy * 4 + ox) * 16 + c);
        int mx = -128, sum = 0;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx) {
            mx = std::max(mx, at(oy * 2 + ky, ox * 2 + kx, c));
            sum += at(oy * 2 + ky, ox * 2 + kx, c);
          }
        EXPECT_EQ(p1[o], mx);
        const int avg = sum >= 0 ? (2 * sum + 4) / 8 : -((-2 * sum + 4) / 8);  // round half away from zero
        EXPECT_EQ(p2[o], avg) << "sum " << sum;
        int padded = -128;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
            if (iy >= 0 && iy < 8 && ix >= 0 && ix < 8) padded = std::max(padded, at(iy, ix, c));
          }
        EXPECT_EQ(p3[o], padded);
      }
  ASSERT_EQ(stats.layers.size(), 4u);  // maxpool, avgpool, maxpool_pad and the untagged DMA
}

TEST(NpuPrograms, VectorUnitOps) {
  Bundle b = assembleTestFile("vector.s");
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 3);
  run(b, config(), dram);
  const auto a = readI8(b, dram, "A"), bb = readI8(b, dram, "B");
  const auto z = readI32(b, dram, "Z");
  const auto l = readI8(b, dram, "L"), e = readI8(b, dram, "E"), q = readI8(b, dram, "Q");
  // EADD parameters, derived here from the scales the program documents (TFLite's scheme).
  const double sa = 0.02, sb = 0.03, so = 0.04, twice = 2 * std::max(sa, sb);
  const auto ma = quant::quantizeMultiplier(sa / twice), mb = quant::quantizeMultiplier(sb / twice);
  const auto mo = quant::quantizeMultiplier(twice / (double(1 << 20) * so));
  const auto mq = quant::quantizeMultiplier(0.01);
  for (size_t i = 0; i < a.size(); ++i) {
    const int v = a[i];
    EXPECT_EQ(l[i], int8_t(v * v / 128 - 64)) << i;
    const int64_t ra = quant::applyMultiplier((a[i] - 3) * (1 << 20), ma);
    const int64_t rb = quant::applyMultiplier((bb[i] + 2) * (1 << 20), mb);
    EXPECT_EQ(e[i], quant::requantize(int32_t(ra + rb), mo, 1, -128, 127)) << i;
    const int32_t clipped = std::clamp(z[i], -3000, 3000);
    EXPECT_EQ(q[i], quant::requantize(clipped, mq, 5, -128, 127)) << i;
  }
}

// ---- softmax and layernorm (ISA v4) ----

std::string hexBytes(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 64 == 0) text += (i ? "\n" : "") + std::string(".bytes ");
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text + "\n";
}

template <typename T>
void putLe(std::vector<uint8_t>& v, size_t at, T x) {
  std::memcpy(v.data() + at, &x, sizeof(T));
}

// X [6, 20] (scale 0.1) -> softmax with a causal mask -> S; X [6, 20] (scale
// 0.05, zp -3) -> layernorm over its 20 channels -> N. Weights: the softmax
// record (32 bytes), the mask (6 x 20 keep bytes), the layernorm record.
constexpr int kRnRows = 6, kRnCols = 20;

std::vector<quant::LayerNormChannel> rowNormChannels() {
  std::vector<quant::LayerNormChannel> channels;
  for (int j = 0; j < kRnCols; ++j)
    channels.push_back(
        quant::layerNormChannel(float(j % 5) * 0.4f - 0.9f, float(j % 3) * 0.2f - 0.2f, 0.03f));
  return channels;
}

std::string rowNormProgram() {
  std::vector<uint8_t> weights(0x400, 0);
  const quant::SoftmaxParams sp = quant::softmaxParams(0.1f, 1.0f / 255);
  putLe<int32_t>(weights, 0, sp.input.multiplier), putLe<int32_t>(weights, 4, sp.input.shift);
  putLe<int32_t>(weights, 8, sp.output.multiplier), putLe<int32_t>(weights, 12, sp.output.shift);
  putLe<int8_t>(weights, 16, -128), putLe<int8_t>(weights, 17, -128), putLe<int8_t>(weights, 18, 127);
  for (int i = 0; i < kRnRows; ++i)
    for (int j = 0; j < kRnCols; ++j) weights[size_t(0x40 + i * kRnCols + j)] = j <= i ? 1 : 0;
  putLe<int64_t>(weights, 0x100, quant::layerNormEpsilon(1e-5f, 0.05f, kRnCols));
  putLe<int8_t>(weights, 0x108, -3), putLe<int8_t>(weights, 0x109, 2);
  putLe<int8_t>(weights, 0x10a, -128), putLe<int8_t>(weights, 0x10b, 127);
  const auto channels = rowNormChannels();
  for (int j = 0; j < kRnCols; ++j) {
    const size_t at = 0x110 + size_t(j) * 16;
    putLe<int32_t>(weights, at, channels[size_t(j)].gamma.multiplier);
    putLe<int8_t>(weights, at + 4, int8_t(channels[size_t(j)].gamma.shift));
    putLe<int8_t>(weights, at + 5, channels[size_t(j)].gammaSign < 0 ? 1 : 0);
    putLe<int64_t>(weights, at + 8, channels[size_t(j)].beta);
  }
  return ".input X i8 [6,20] @0x0\n"
         ".output S i8 [6,20] @0x100\n"
         ".output N i8 [6,20] @0x200\n"
         ".dram 0x800\n"
         ".weights @0x400\n" +
         hexBytes(weights) +
         "load mem=spad dram=0x0 sram=0x0 x=20 y=6 dram_ystride=20 sram_stride=32\n"
         "load mem=spad dram=0x400 sram=0x10000 x=1024 y=1 push_next\n"
         "softmax masked=1 src=0x0 dst=0x20000 rows=6 cols=20 src_stride=32 dst_stride=20 params=0x10000 "
         "mask=0x10040 mask_stride=20 pop_prev\n"
         "layernorm src=0x0 dst=0x20100 rows=6 cols=20 src_stride=32 dst_stride=20 params=0x10100 push_next\n"
         "store mem=spad sram=0x20000 dram=0x100 x=20 y=6 dram_ystride=20 sram_stride=20 pop_prev\n"
         "store mem=spad sram=0x20100 dram=0x200 x=20 y=6 dram_ystride=20 sram_stride=20\n"
         "finish\n";
}

TEST(NpuPrograms, SoftmaxAndLayerNormAreQuantMathsRows) {
  Bundle b = assembleText(rowNormProgram());
  EXPECT_EQ(b.isaVersion, 4u);
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 5);
  const SimStats stats = run(b, config("npu-16x16-v3.yaml"), dram);
  EXPECT_GT(stats.cycles, 0u);
  const auto x = readI8(b, dram, "X"), s = readI8(b, dram, "S"), n = readI8(b, dram, "N");
  const quant::SoftmaxParams sp = quant::softmaxParams(0.1f, 1.0f / 255);
  const auto channels = rowNormChannels();
  const int64_t eps = quant::layerNormEpsilon(1e-5f, 0.05f, kRnCols);
  for (int i = 0; i < kRnRows; ++i) {
    std::vector<int32_t> q(x.begin() + i * kRnCols, x.begin() + (i + 1) * kRnCols), out(kRnCols);
    std::vector<int64_t> exps(kRnCols);
    bool keep[kRnCols];
    for (int j = 0; j < kRnCols; ++j) keep[j] = j <= i;
    quant::softmaxRow(q.data(), keep, kRnCols, sp, -128, -128, 127, exps.data(), out.data());
    for (int j = 0; j < kRnCols; ++j) EXPECT_EQ(s[size_t(i * kRnCols + j)], out[size_t(j)]) << i << "," << j;
    quant::layerNormRow(q.data(), kRnCols, -3, eps, channels.data(), 2, -128, 127, out.data());
    for (int j = 0; j < kRnCols; ++j) EXPECT_EQ(n[size_t(i * kRnCols + j)], out[size_t(j)]) << i << "," << j;
  }
}

TEST(NpuPrograms, SoftmaxAndLayerNormRoundTripAndNeedVersion4) {
  const Bundle b = assembleText(rowNormProgram());
  auto text = disassemble(b);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_NE(text->find("softmax masked=1 dst=0x20000 rows=6 cols=20"), std::string::npos) << *text;
  EXPECT_NE(text->find("mask=0x10040 mask_stride=20"), std::string::npos) << *text;
  EXPECT_NE(text->find("layernorm dst=0x20100 rows=6 cols=20"), std::string::npos) << *text;
  EXPECT_EQ(serializeBundle(assembleText(*text)), serializeBundle(b));
  // Older bundles cannot hold the new opcodes.
  Bundle v3 = b;
  v3.isaVersion = 3;
  const Error refused = v3.validate();
  ASSERT_TRUE(refused);
  for (const char* part : {"instruction 2", "softmax", "ISA version 4", "version 3"})
    EXPECT_NE(refused.message().find(part), std::string::npos) << refused.message();
  EXPECT_FALSE(assemble(".isa 3\nlayernorm rows=1 cols=1\nfinish\n", "v3.s"));
  // A layernorm wider than the parameter buffer is refused at run time, naming the limit.
  const Bundle wide =
      assembleText("layernorm rows=1 cols=1025 src_stride=1025 dst=0x1000 params=0x8000\nfinish\n");
  const std::string error = runError(wide, config());
  EXPECT_NE(error.find("1024 channels"), std::string::npos) << error;
}

TEST(NpuPrograms, RunsAreDeterministicAndRepeatable) {
  Bundle b = assembleTestFile("gemm_64x48x32.s");
  DramImage first = makeDram(b), second = makeDram(b);
  randomInputs(b, first, 1);
  randomInputs(b, second, 1);
  const SimStats s1 = run(b, config(), first);
  const SimStats s2 = run(b, config(), second);
  EXPECT_EQ(s1.cycles, s2.cycles);
  EXPECT_EQ(first.bytes, second.bytes);
  EXPECT_GT(s1.cycles, 0u);
}

TEST(NpuPrograms, StatsAndTraceAreProduced) {
  Bundle b = assembleTestFile("conv_im2col.s");
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 1);
  const SimStats s = run(b, config(), dram);
  EXPECT_EQ(s.macs, 64u * 144 * 16);
  EXPECT_GT(s.energyPj, 0);
  EXPECT_GT(s.dramReadBytes, 0u);
  EXPECT_EQ(s.dramWriteBytes, 160u * 10 + 64 * 16);
  EXPECT_GT(s.scratchpadPeakBytes, 0u);
  const std::string json = statsToJson(s, b, true);
  for (const char* key :
       {"\"cycles\"", "\"macs\"", "\"mac_utilization\"", "\"dram_read_bytes\"", "\"dram_write_bytes\"",
        "\"energy_pj\"", "\"layers\"", "\"host_seconds\"", "\"busy_cycles\"", "\"token\"",
        "\"dram_bandwidth\"", "\"bank_conflict\"", "\"instruction_records\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  std::vector<std::string> names;
  for (const auto& l : s.layers) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string>{"pad", "im2col", "conv"}));
  const std::string trace = traceToJson(s, b);
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("matrix_engine"), std::string::npos);
  EXPECT_NE(trace.find("wait token"), std::string::npos);
}

}  // namespace
}  // namespace ember::npu::test
