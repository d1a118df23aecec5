// The co-simulation's links computed by hand (ember/npu/CoSimulation.h,
// docs/multichip.md): chips whose drivers only send and receive, so every
// time is a link's bandwidth and latency; a blocked chip is named, and the
// elaboration serves run after run.
#include <gtest/gtest.h>

#include <numeric>

#include "ember/npu/CoSimulation.h"

namespace ember::npu {
namespace {

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

TEST(CoSimulation, SystemBeyondTheElaborationIsAnError) {
  Expected<CoSimResult> tooMany = coSimulate(
      chipsAndLinks(9, {}), std::vector<ChipDriver>(9, [](ChipPort&) { return Error::success(); }));
  ASSERT_FALSE(tooMany);
  EXPECT_NE(tooMany.error().message().find("at most 8 chips"), std::string::npos)
      << tooMany.error().message();
}

}  // namespace
}  // namespace ember::npu
