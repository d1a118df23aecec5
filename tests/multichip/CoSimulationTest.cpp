// The co-simulation's links computed by hand (ember/npu/CoSimulation.h,
// docs/multichip.md): chips whose drivers only send and receive, so every
// time is a link's bandwidth and latency; a blocked chip is named, and the
// elaboration serves run after run. A shared DRAM against bytes / bandwidth
// with chips that only load, and more than 8 chips.
#include <gtest/gtest.h>

#include <numeric>

#include "ember/npu/Assembler.h"
#include "ember/npu/CoSimulation.h"
#include "ember/npu/Simulator.h"

namespace ember::npu {
namespace {

// Before any test's first simulation: this process elaborates 12 chip tops.
const bool kTwelveChipsReserved = !reserveCoSimulatedChips(12);

CoSimSystemSpec chipsAndLinks(size_t chips, std::vector<CoSimLinkSpec> links) {
  CoSimSystemSpec system;
  for (size_t c = 0; c < chips; ++c) system.chips.push_back({"c" + std::to_string(c), 1.0});
  system.links = std::move(links);
  return system;
}

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> data(bytes);
  std::iota(data.begin(), data.end(), seed);
  return data;
}

TEST(CoSimulation, TransferTakesBytesOverBandwidthPlusLatencyOneAtATimePerDirection) {
  // 2 GB/s, 300 ns: 1000 B hold the direction 500 ns and arrive 300 ns after.
  const CoSimSystemSpec system = chipsAndLinks(2, {{0, 1, 2.0, 300.0}});
  std::vector<double> arrivals, backArrivals;
  std::vector<ChipDriver> drivers(2);
  drivers[0] = [&](ChipPort& port) -> Error {
    for (uint64_t tag = 0; tag < 3; ++tag)
      EMBER_RETURN_IF_ERROR(port.send(1, {0}, tag, pattern(1000, uint8_t(tag))));
    EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> back, port.receive(7));
    backArrivals.push_back(port.nowNs());
    EXPECT_EQ(back, pattern(1000, 7));
    return Error::success();
  };
  drivers[1] = [&](ChipPort& port) -> Error {
    EMBER_RETURN_IF_ERROR(port.send(0, {0}, 7, pattern(1000, 7)));  // the other direction: no waiting
    for (uint64_t tag = 0; tag < 3; ++tag) {
      EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, port.receive(tag));
      EXPECT_EQ(bytes, pattern(1000, uint8_t(tag)));
      arrivals.push_back(port.nowNs());
    }
    return Error::success();
  };
  Expected<CoSimResult> result = coSimulate(system, drivers);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(arrivals, (std::vector<double>{800, 1300, 1800}));
  EXPECT_EQ(backArrivals, (std::vector<double>{800}));
  ASSERT_EQ(result->links.size(), 1u);
  EXPECT_DOUBLE_EQ(result->links[0].busyNs[0], 1500);
  EXPECT_DOUBLE_EQ(result->links[0].busyNs[1], 500);
  EXPECT_EQ(result->links[0].bytes[0], 3000u);
  EXPECT_EQ(result->links[0].bytes[1], 1000u);
  EXPECT_EQ(result->links[0].transfers, 4u);
  EXPECT_DOUBLE_EQ(result->endNs, 1800);
}

TEST(CoSimulation, TwoHopRouteIsCutThroughAtTheSlowestHop) {
  // c0 -(4 GB/s, 100 ns)- c1 -(2 GB/s, 200 ns)- c2: 1000 B hold both hops
  // 500 ns and arrive after both latencies, 800 ns.
  const CoSimSystemSpec system = chipsAndLinks(3, {{0, 1, 4.0, 100.0}, {1, 2, 2.0, 200.0}});
  double arrival = 0;
  std::vector<ChipDriver> drivers(3, [](ChipPort&) { return Error::success(); });
  drivers[0] = [](ChipPort& port) { return port.send(2, {0, 1}, 1, pattern(1000, 1)); };
  drivers[2] = [&](ChipPort& port) -> Error {
    EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, port.receive(1));
    arrival = port.nowNs();
    return Error::success();
  };
  Expected<CoSimResult> result = coSimulate(system, drivers);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_DOUBLE_EQ(arrival, 800);
  EXPECT_DOUBLE_EQ(result->links[0].busyNs[0], 500);
  EXPECT_DOUBLE_EQ(result->links[1].busyNs[0], 500);
}

TEST(CoSimulation, BlockedChipIsNamedAndTheElaborationServesTheNextRun) {
  const CoSimSystemSpec system = chipsAndLinks(2, {{0, 1, 1.0, 0.0}});
  std::vector<ChipDriver> drivers(2, [](ChipPort&) { return Error::success(); });
  drivers[1] = [](ChipPort& port) -> Error {
    EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, port.receive(42));
    return bytes.size() == 10 ? Error::success() : makeError("wrong message");
  };
  Expected<CoSimResult> blocked = coSimulate(system, drivers);
  ASSERT_FALSE(blocked);
  EXPECT_NE(blocked.error().message().find("chip 'c1' can make no progress"), std::string::npos)
      << blocked.error().message();

  drivers[0] = [](ChipPort&) { return makeError("broken stage"); };
  Expected<CoSimResult> failed = coSimulate(system, drivers);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("chip 'c0'"), std::string::npos) << failed.error().message();
  EXPECT_NE(failed.error().message().find("broken stage"), std::string::npos) << failed.error().message();

  drivers[0] = [](ChipPort& port) { return port.send(1, {0}, 42, pattern(10, 0)); };
  Expected<CoSimResult> fine = coSimulate(system, drivers);
  ASSERT_TRUE(fine) << fine.error().message();
  EXPECT_DOUBLE_EQ(fine->endNs, 10);
}

TEST(CoSimulation, TwelveChipsPassATokenAroundTheirRing) {
  ASSERT_TRUE(kTwelveChipsReserved);
  // A ring of 12 at 1 GB/s, 50 ns: chip c sends 100 B to chip c + 1 once it
  // has the token, so the token is back at chip 0 after 12 x (100 + 50) ns.
  constexpr size_t kChips = 12;
  std::vector<CoSimLinkSpec> links;
  for (size_t c = 0; c < kChips; ++c) links.push_back({c, (c + 1) % kChips, 1.0, 50.0});
  std::vector<ChipDriver> drivers;
  for (size_t c = 0; c < kChips; ++c)
    drivers.push_back([c](ChipPort& port) -> Error {
      if (c != 0) EMBER_RETURN_IF_ERROR(port.receive(c).error());
      return port.send((c + 1) % kChips, {c}, (c + 1) % kChips, pattern(100, uint8_t(c)));
    });
  double back = 0;
  drivers[0] = [&back](ChipPort& port) -> Error {
    EMBER_RETURN_IF_ERROR(port.send(1, {0}, 1, pattern(100, 0)));
    EMBER_RETURN_IF_ERROR(port.receive(0).error());
    back = port.nowNs();
    return Error::success();
  };
  Expected<CoSimResult> result = coSimulate(chipsAndLinks(kChips, links), drivers);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_DOUBLE_EQ(back, 12 * 150.0);
}

TEST(CoSimulation, SystemBeyondTheElaborationIsAnError) {
  // Elaborate (a run of two chips), then ask for more chips than it holds.
  ASSERT_TRUE(coSimulate(chipsAndLinks(2, {{0, 1, 1.0, 0.0}}),
                         std::vector<ChipDriver>(2, [](ChipPort&) { return Error::success(); })));
  Expected<CoSimResult> tooMany = coSimulate(
      chipsAndLinks(13, {}), std::vector<ChipDriver>(13, [](ChipPort&) { return Error::success(); }));
  ASSERT_FALSE(tooMany);
  const std::string message = tooMany.error().message();
  EXPECT_NE(message.find("13 chips but this process co-simulates at most 12"), std::string::npos) << message;
  EXPECT_NE(message.find("SystemC elaborates once per process"), std::string::npos) << message;
  EXPECT_TRUE(reserveCoSimulatedChips(13));
  EXPECT_FALSE(reserveCoSimulatedChips(12));
}

// ---- a shared DRAM ----

NpuConfig npu16x16() {
  Expected<NpuConfig> config = loadConfig(std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16.yaml");
  EXPECT_TRUE(config) << config.error().message();
  return config.take();
}

/// A program that only loads `rows` rows of `rowBytes` from DRAM into the scratchpad.
Bundle loadOnly(uint64_t rowBytes, uint64_t rows) {
  const std::string n = std::to_string(rowBytes);
  Expected<Bundle> bundle =
      assemble(".dram " + std::to_string(rowBytes * rows) + "\nload mem=spad dram=0x0 sram=0x0 x=" + n +
                   " y=" + std::to_string(rows) + " dram_ystride=" + n + " sram_stride=" + n + "\nfinish\n",
               "load.s", "");
  EXPECT_TRUE(bundle) << bundle.error().message();
  return bundle.take();
}

/// Chips that each run `bundle` once (their own DRAM images), on `sharedGBps` (0: DRAM per chip).
Expected<CoSimResult> runOnEveryChip(size_t chips, const Bundle& bundle, const NpuConfig& config,
                                     double sharedGBps, double clockGhz = 1.0) {
  CoSimSystemSpec system = chipsAndLinks(chips, {});
  for (CoSimChipSpec& chip : system.chips) chip.clockGhz = clockGhz;
  system.sharedDramGBps = sharedGBps;
  std::vector<ChipDriver> drivers(chips, [&](ChipPort&) -> Error {
    DramImage dram = makeDram(bundle);
    return simulate(bundle, config, dram).error();
  });
  return coSimulate(system, drivers);
}

TEST(CoSimulationSharedDram, ChipsLoadingAtOnceShareItsBandwidth) {
  const NpuConfig config = npu16x16();  // 16 B/cycle at 1 GHz: 16 GB/s of its own
  constexpr uint64_t kRow = 4096, kRows = 16, kBytes = kRow * kRows;
  const Bundle bundle = loadOnly(kRow, kRows);
  Expected<CoSimResult> own = runOnEveryChip(2, bundle, config, 0);
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_EQ(own->sharedDramBusyNs, 0);
  // Alone, a chip streams its 64 KiB at 16 B/ns, after the DMA's latency.
  EXPECT_GE(own->endNs, double(kBytes) / 16.0);
  EXPECT_LT(own->endNs, double(kBytes) / 16.0 + 500);
  for (double shared : {16.0, 4.0, 1.0}) {
    SCOPED_TRACE(std::to_string(shared) + " GB/s shared");
    Expected<CoSimResult> contended = runOnEveryChip(2, bundle, config, shared);
    ASSERT_TRUE(contended) << contended.error().message();
    // Both chips' bytes pass through the one DRAM: 2 x 64 KiB / bandwidth.
    const double bound = 2.0 * double(kBytes) / shared;
    EXPECT_DOUBLE_EQ(contended->sharedDramBusyNs, bound);
    EXPECT_EQ(contended->sharedDramBytes, 2 * kBytes);
    EXPECT_GE(contended->endNs, bound);
    EXPECT_LT(contended->endNs, bound + 500);  // + the DMA latency and the last row's
    EXPECT_GT(contended->sharedDramWaitCycles[0] + contended->sharedDramWaitCycles[1], 0u);
    EXPECT_GE(contended->dramStallCycles[1], contended->sharedDramWaitCycles[1]);
  }
}

TEST(CoSimulationSharedDram, HugeBandwidthIsTheRunOfDramPerChip) {
  const NpuConfig config = npu16x16();
  const Bundle bundle = loadOnly(1024, 64);
  Expected<CoSimResult> own = runOnEveryChip(3, bundle, config, 0);
  Expected<CoSimResult> shared = runOnEveryChip(3, bundle, config, 1e6);
  ASSERT_TRUE(own && shared);
  EXPECT_EQ(shared->endNs, own->endNs);
  EXPECT_EQ(shared->chipBusyNs, own->chipBusyNs);
  EXPECT_EQ(shared->dramStallCycles, own->dramStallCycles);
  EXPECT_EQ(shared->sharedDramWaitCycles, (std::vector<uint64_t>{0, 0, 0}));
}

TEST(CoSimulationSharedDram, OneChipOnADramAsFastAsItsOwnIsCycleIdentical) {
  const NpuConfig config = npu16x16();
  Expected<Bundle> conv = assembleFile(std::string(EMBER_NPU_TEST_DIR) + "/conv_im2col.s");
  ASSERT_TRUE(conv) << conv.error().message();
  const Bundle odd = loadOnly(100, 37);  // rows that are not a whole number of DRAM cycles
  for (double clockGhz : {1.0, 0.8, 2.0}) {
    SCOPED_TRACE(std::to_string(clockGhz) + " GHz");
    for (const Bundle* bundle : {static_cast<const Bundle*>(&*conv), &odd}) {
      Expected<CoSimResult> own = runOnEveryChip(1, *bundle, config, 0, clockGhz);
      Expected<CoSimResult> shared =
          runOnEveryChip(1, *bundle, config, double(config.dramBytesPerCycle) * clockGhz, clockGhz);
      ASSERT_TRUE(own && shared);
      EXPECT_EQ(shared->endNs, own->endNs);
      EXPECT_EQ(shared->chipBusyNs, own->chipBusyNs);
      EXPECT_EQ(shared->dramStallCycles, own->dramStallCycles);
      EXPECT_EQ(shared->sharedDramWaitCycles, (std::vector<uint64_t>{0}));
      EXPECT_GT(shared->sharedDramBusyNs, 0);
    }
  }
}

}  // namespace
}  // namespace ember::npu
