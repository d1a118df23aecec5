// The verilated matrix engine (rtl/) against the golden model of RtlGolden.h:
// >= 1000 random instructions per dataflow (random shapes including partial
// tiles, strides, addresses, accumulate/overwrite, weight reuse without
// preload), edge values (-128 x -128 over a full k, sums wrapping at the int32
// limits), both shipped array sizes, and the VCD dump.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "RtlGolden.h"

namespace ember::rtl::test {
namespace {

constexpr size_t kSpadBytes = 1 << 16;
constexpr size_t kAccEntries = 1 << 14;

struct Bench {
  std::unique_ptr<RtlArray> array;
  GoldenEngine golden;
  std::vector<int8_t> spad = std::vector<int8_t>(kSpadBytes);
  std::vector<int32_t> accRtl = std::vector<int32_t>(kAccEntries),
                       accGold = std::vector<int32_t>(kAccEntries);

  explicit Bench(int size, const std::string& vcd = "") {
    auto a = RtlArray::create(size, size, vcd);
    EXPECT_TRUE(a) << a.error().message();
    if (a) array = a.take();
  }
  /// Runs `job` on both; returns the RTL's cycles (0 on error).
  uint64_t run(const GemmJob& job) {
    golden.run(job, spad, accGold);
    auto cycles = array->run(job, Memories{spad.data(), spad.size(), accRtl.data(), accRtl.size()});
    EXPECT_TRUE(cycles) << cycles.error().message();
    return cycles ? *cycles : 0;
  }
};

std::string describe(const GemmJob& j) {
  std::ostringstream os;
  os << (j.outputStationary ? "OS" : "WS") << " m=" << j.m << " k=" << j.k << " n=" << j.n
     << " acc=" << j.accumulate << " preload=" << j.preload << " inp=" << j.inpAddr << "/" << j.inpStride
     << " wgt=" << j.wgtAddr << "/" << j.wgtStride << " accAddr=" << j.accAddr << "/" << j.accStride;
  return os.str();
}

// A random legal instruction whose operands fit the test memories.
GemmJob randomJob(std::mt19937& rng, int size, bool os, bool preload, uint32_t keptK, uint32_t keptN) {
  auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  GemmJob j;
  j.outputStationary = os;
  j.preload = preload;
  j.accumulate = pick(0, 1);
  // Full tiles a quarter of the time, partial ones otherwise.
  const bool full = pick(0, 3) == 0;
  const uint32_t s = uint32_t(size);
  if (os) {
    j.m = full ? s : pick(1, s);
    j.k = pick(0, 4) == 0 ? pick(1, 4 * s) : pick(1, s + 3);
  } else {
    j.k = full ? s : pick(1, s);
    j.m = pick(0, 4) == 0 ? pick(1, 4 * s) : pick(1, s + 3);
  }
  j.n = full ? s : pick(1, s);
  if (!preload) {
    j.k = keptK;
    j.n = keptN;
  }
  j.inpStride = j.k + pick(0, 1) * pick(0, 20);
  j.wgtStride = j.n + pick(0, 1) * pick(0, 20);
  j.accStride = pick(0, 9) == 0 ? pick(0, j.n) : j.n + pick(0, 1) * pick(0, 8);  // overlaps sometimes
  j.inpAddr = pick(0, uint32_t(kSpadBytes / 2) - j.m * j.inpStride - j.k);
  j.wgtAddr = uint32_t(kSpadBytes / 2) + pick(0, uint32_t(kSpadBytes / 2) - j.k * j.wgtStride - j.n - 1);
  j.accAddr = pick(0, uint32_t(kAccEntries) - j.m * j.accStride - j.n - 1);
  return j;
}

void randomCases(int size, bool os, int cases, uint32_t seed) {
  Bench b(size);
  ASSERT_TRUE(b.array);
  std::mt19937 rng(seed);
  for (auto& v : b.spad) v = int8_t(rng());
  for (size_t i = 0; i < kAccEntries; ++i) b.accRtl[i] = b.accGold[i] = int32_t(rng());
  int reused = 0;
  for (int c = 0; c < cases; ++c) {
    // Refresh part of the scratchpad so weight reuse really reads kept weights.
    for (int i = 0; i < 256; ++i) b.spad[rng() % kSpadBytes] = int8_t(rng());
    const bool preload = c == 0 || rng() % 4 != 0;
    reused += !preload;
    const GemmJob j = randomJob(rng, size, os, preload, b.golden.keptK, b.golden.keptN);
    b.run(j);
    ASSERT_EQ(b.accRtl, b.accGold) << "case " << c << ": " << describe(j);
  }
  EXPECT_GT(reused, cases / 8);
}

TEST(RtlEngine, WeightStationaryRandom16x16) { randomCases(16, false, 1000, 1); }
TEST(RtlEngine, OutputStationaryRandom16x16) { randomCases(16, true, 1000, 2); }
TEST(RtlEngine, WeightStationaryRandom32x32) { randomCases(32, false, 300, 3); }
TEST(RtlEngine, OutputStationaryRandom32x32) { randomCases(32, true, 300, 4); }

// -128 x -128 over a full k: the largest product sum (k * 16384), and sums that
// cross the int32 limits in both directions (wrapping, as the ISA specifies).
void edgeValues(int size, bool os) {
  Bench b(size);
  ASSERT_TRUE(b.array);
  const uint32_t s = uint32_t(size);
  GemmJob j;
  j.outputStationary = os;
  j.m = s;
  j.k = os ? 4 * s : s;
  j.n = s;
  j.inpStride = j.k;
  j.wgtAddr = 32768;
  j.wgtStride = j.n;
  j.accStride = j.n;
  std::fill(b.spad.begin(), b.spad.end(), int8_t(-128));
  b.run(j);
  ASSERT_EQ(b.accRtl, b.accGold);
  EXPECT_EQ(b.accRtl[0], int32_t(16384 * j.k));
  // Accumulate onto values next to INT32_MAX and INT32_MIN.
  const int32_t big = std::numeric_limits<int32_t>::max(), small = std::numeric_limits<int32_t>::min();
  for (uint32_t i = 0; i < j.m * j.n; ++i)
    b.accRtl[i] = b.accGold[i] = (i % 2 ? big - int32_t(i) : small + int32_t(i));
  for (uint32_t i = 0; i < j.m * j.k; ++i) b.spad[i] = int8_t(i % 3 == 0 ? -128 : i % 3 == 1 ? 127 : -1);
  j.accumulate = true;
  b.run(j);
  ASSERT_EQ(b.accRtl, b.accGold);
  // 127 x -128 and repeated accumulation towards and past the limit.
  for (uint32_t i = 0; i < j.k * j.n; ++i) b.spad[32768 + i] = int8_t(i % 2 ? 127 : -128);
  for (int rep = 0; rep < 3; ++rep) {
    j.preload = rep == 0;
    b.run(j);
    ASSERT_EQ(b.accRtl, b.accGold) << "repetition " << rep;
  }
}

TEST(RtlEngine, EdgeValuesWeightStationary) {
  edgeValues(16, false);
  edgeValues(32, false);
}
TEST(RtlEngine, EdgeValuesOutputStationary) {
  edgeValues(16, true);
  edgeValues(32, true);
}

TEST(RtlEngine, UnavailableSizeIsAnError) {
  auto a = RtlArray::create(64, 64);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("16x16 and 32x32"), std::string::npos) << a.error().message();
}

TEST(RtlEngine, VcdDumpHasTheEngineSignals) {
  const std::string path = ::testing::TempDir() + "rtl_engine_test.vcd";
  {
    Bench b(16, path);
    ASSERT_TRUE(b.array);
    GemmJob j;
    j.m = 4;
    j.k = 16;
    j.n = 16;
    j.inpStride = 16;
    j.wgtAddr = 4096;
    j.wgtStride = 16;
    j.accStride = 16;
    b.run(j);
    EXPECT_EQ(b.accRtl, b.accGold);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string vcd = text.str();
  EXPECT_NE(vcd.find("$timescale"), std::string::npos);
  EXPECT_NE(vcd.find(" acc_wr_en "), std::string::npos);
  EXPECT_NE(vcd.find(" a_rd_data "), std::string::npos);
  EXPECT_NE(vcd.find("#1000"), std::string::npos);  // 1 cycle = 1 ns = 1000 ps
  std::remove(path.c_str());
  auto bad = RtlArray::create(16, 16, "/nonexistent-dir/x.vcd");
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace ember::rtl::test
