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

// Chains of weight-stationary gemms on two weight buffers, issued as the
// simulator issues them (each at the previous one's stream start, or a few
// cycles later), every stage granted when it asks or after a random stall:
// results equal to the golden model (one golden engine per buffer) and stage
// times equal to the two-stage recurrence of docs/npu/timing-model.md, "Two
// weight buffers", written out again here.
struct ChainModel {
  uint64_t loaderFree = 0, streamFree = 0, loaded[2] = {0, 0}, streamed[2] = {0, 0};
};

void chainCases(int size, int chains, uint32_t seed, bool alternate) {
  Bench b(size);
  ASSERT_TRUE(b.array);
  std::mt19937 rng(seed);
  auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  for (auto& v : b.spad) v = int8_t(rng());
  for (size_t i = 0; i < kAccEntries; ++i) b.accRtl[i] = b.accGold[i] = int32_t(rng());
  GoldenEngine golden[2];
  const Memories mem{b.spad.data(), b.spad.size(), b.accRtl.data(), b.accRtl.size()};
  const uint64_t R = uint64_t(size), C = uint64_t(size);
  ChainModel model;
  uint64_t at = 0, index = 0, lastDone = 0;
  for (int chain = 0; chain < chains; ++chain) {
    const int length = int(pick(2, 8));
    for (int g = 0; g < length; ++g) {
      const unsigned wbuf = alternate ? unsigned(index % 2) : pick(0, 1);
      const bool preload = golden[wbuf].keptK == 0 || pick(0, 3) != 0;
      GemmJob j = randomJob(rng, size, false, preload, golden[wbuf].keptK, golden[wbuf].keptN);
      j.wbuf = wbuf;
      if (pick(0, 3) == 0) j.m = pick(1, 3);  // short streams: preloads longer than streams
      j.inpAddr = std::min<uint32_t>(j.inpAddr, uint32_t(kSpadBytes / 2) - j.m * j.inpStride - j.k);
      j.accAddr = std::min<uint32_t>(j.accAddr, uint32_t(kAccEntries) - j.m * j.accStride - j.n - 1);
      // The expected stages, with stalls the grants add.
      const uint64_t stallP = pick(0, 4) == 0 ? pick(1, 5) : 0, stallS = pick(0, 4) == 0 ? pick(1, 5) : 0;
      uint64_t expPreload = at;
      if (preload) {
        expPreload = std::max({at, model.loaderFree, model.streamed[wbuf]}) + stallP;
        model.loaderFree = model.loaded[wbuf] = expPreload + j.k;
      }
      const uint64_t expStream = std::max({at, model.streamFree, model.loaded[wbuf]}) + stallS;
      model.streamFree = model.streamed[wbuf] = expStream + j.m;
      const uint64_t expDone = expStream + j.m + R + C + 3;
      golden[wbuf].run(j, b.spad, b.accGold);
      auto start = b.array->issue(
          j, mem, at, [&](uint64_t ready) { return ready + stallP; },
          [&](uint64_t ready) { return ready + stallS; });
      ASSERT_TRUE(start) << start.error().message();
      EXPECT_EQ(start->preloadStart, expPreload) << "gemm " << index << ": " << describe(j);
      ASSERT_EQ(start->streamStart, expStream) << "gemm " << index << ": " << describe(j);
      // Sometimes wait for the results (a gemm that pushes a token).
      if (g + 1 == length || pick(0, 5) == 0) {
        auto done = b.array->retire(index);
        ASSERT_TRUE(done) << done.error().message();
        EXPECT_EQ(*done, expDone) << "gemm " << index;
        at = *done;
        ASSERT_EQ(b.accRtl, b.accGold) << "gemm " << index << ": " << describe(j);
      } else {
        at = std::max(expStream, at + 1) + (pick(0, 3) == 0 ? pick(1, 6) : 0);  // one issue a cycle
      }
      lastDone = expDone;
      ++index;
    }
  }
  EXPECT_GT(lastDone, 0u);
}

TEST(RtlEngine, ChainsOnAlternatingBuffers16x16) { chainCases(16, 150, 21, true); }
TEST(RtlEngine, ChainsOnRandomBuffers16x16) { chainCases(16, 150, 22, false); }
TEST(RtlEngine, ChainsOnAlternatingBuffers32x32) { chainCases(32, 60, 23, true); }
TEST(RtlEngine, ChainsOnRandomBuffers32x32) { chainCases(32, 60, 24, false); }

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
