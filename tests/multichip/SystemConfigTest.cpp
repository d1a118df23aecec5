// The multi-NPU system config (docs/multichip.md): the example systems, links
// of each topology, routes and transfer times, and bad systems whose errors
// name the chip or the link.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/multichip/SystemConfig.h"

namespace ember::multichip {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs = EMBER_NPU_CONFIG_DIR;

/// Parses a system written next to the NPU configs, so that relative paths resolve.
Expected<SystemConfig> parse(const std::string& yaml) {
  return parseSystemConfig(yaml, kConfigs + "/system.yaml");
}

std::string errorOf(const std::string& yaml) {
  Expected<SystemConfig> system = parse(yaml);
  return system ? std::string("(no error)") : system.error().message();
}

TEST(SystemConfig, RingOfFourFromTheExample) {
  Expected<SystemConfig> system =
      loadSystemConfig(std::string(EMBER_MULTICHIP_CONFIG_DIR) + "/ring4-npu16.yaml");
  ASSERT_TRUE(system) << system.error().message();
  ASSERT_EQ(system->chips.size(), 4u);
  EXPECT_EQ(system->chips[3].name, "npu3");
  EXPECT_EQ(system->chips[0].config.rows, 16);
  ASSERT_EQ(system->links.size(), 4u);
  std::vector<std::string> names;
  for (const Link& l : system->links) names.push_back(system->linkName(l));
  EXPECT_EQ(names, (std::vector<std::string>{"npu0-npu1", "npu1-npu2", "npu2-npu3", "npu0-npu3"}));
  EXPECT_EQ(system->dramBytesOf(2), int64_t(1024) * 1024 * 1024);  // npu-16x16's dram.size_mib: 1024
  // npu0 to npu2 is two hops either way; the tie goes through npu1.
  std::vector<size_t> r = route(*system, 0, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(system->linkName(system->links[r[0]]), "npu0-npu1");
  EXPECT_EQ(system->linkName(system->links[r[1]]), "npu1-npu2");
  EXPECT_EQ(route(*system, 0, 3).size(), 1u);  // the ring's closing link
  // 64 KiB over two 32 GB/s hops of 500 ns: 1000 ns + 65536 B / 32 B/ns.
  EXPECT_DOUBLE_EQ(transferNanoseconds(*system, r, 65536), 1000.0 + 2048.0);
}

TEST(SystemConfig, MixedChipsAllToAllWithSharedDram) {
  Expected<SystemConfig> system =
      loadSystemConfig(std::string(EMBER_MULTICHIP_CONFIG_DIR) + "/mixed3-shared.yaml");
  ASSERT_TRUE(system) << system.error().message();
  EXPECT_EQ(system->chips[0].config.rows, 64);
  EXPECT_EQ(system->chips[2].config.rows, 16);
  ASSERT_EQ(system->links.size(), 3u);
  const Link& slow = system->links[route(*system, 1, 2).at(0)];
  EXPECT_EQ(system->linkName(slow), "mid-small");
  EXPECT_EQ(slow.bandwidthGBps, 16);
  EXPECT_EQ(slow.latencyNs, 800);
  EXPECT_EQ(system->dram, DramKind::Shared);
  EXPECT_EQ(system->dramBytesOf(0), int64_t(2048) * 1024 * 1024);
}

TEST(SystemConfig, ListedLinksAndOneChip) {
  Expected<SystemConfig> line = parse(
      "chips: {count: 3, config: npu-16x16.yaml, name_prefix: c}\n"
      "interconnect:\n  topology: listed\n  links:\n"
      "    - {between: [c0, c1], bandwidth_gb_per_s: 8, latency_ns: 100}\n"
      "    - {between: [c2, c1], bandwidth_gb_per_s: 4}\n");
  ASSERT_TRUE(line) << line.error().message();
  std::vector<size_t> r = route(*line, 0, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(line->linkName(line->links[r[1]]), "c1-c2");
  EXPECT_DOUBLE_EQ(transferNanoseconds(*line, r, 400), 100.0 + 100.0);  // slowest hop: 4 B/ns, no latency
  Expected<SystemConfig> one = parse("chips: [{name: solo, config: npu-32x32.yaml}]\n");
  ASSERT_TRUE(one) << one.error().message();
  EXPECT_TRUE(one->links.empty());
}

TEST(SystemConfig, LinksThatDoNotConnectTheChipsNameTheChip) {
  std::string error = errorOf(
      "chips: {count: 4, config: npu-16x16.yaml}\n"
      "interconnect:\n  topology: listed\n  links:\n"
      "    - {between: [npu0, npu1]}\n    - {between: [npu2, npu1]}\n");
  EXPECT_NE(error.find("the links do not connect chip 'npu3' to chip 'npu0'"), std::string::npos) << error;
}

TEST(SystemConfig, TextThatYamlMayNotHoldIsRefused) {
  EXPECT_NE(errorOf(std::string("name: r\x01ng\nchips: {count: 2, config: npu-16x16.yaml}\n"))
                .find("system.yaml:1: character U+0001"),
            std::string::npos);
}

TEST(SystemConfig, BadLinksNameTheLink) {
  const std::string chips = "chips: {count: 3, config: npu-16x16.yaml}\n";
  EXPECT_NE(errorOf(chips + "interconnect:\n  topology: listed\n  links:\n    - {between: [npu0, npu7]}\n")
                .find("link 'npu0-npu7': no chip 'npu7'"),
            std::string::npos);
  EXPECT_NE(errorOf(chips + "interconnect:\n  topology: listed\n  links:\n    - {between: [npu1, npu1]}\n")
                .find("link 'npu1-npu1' connects chip 'npu1' to itself"),
            std::string::npos);
  EXPECT_NE(errorOf(chips + "interconnect:\n  topology: listed\n  links:\n    - {between: [npu0, npu1]}\n"
                            "    - {between: [npu1, npu0]}\n")
                .find("link 'npu1-npu0' is listed twice"),
            std::string::npos);
  std::string error = errorOf(chips +
                              "interconnect:\n  topology: ring\n  bandwidth_gb_per_s: 8\n  links:\n"
                              "    - {between: [npu0, npu1], bandwidth_gb_per_s: 0}\n");
  EXPECT_NE(error.find("system.yaml:6: link 'npu0-npu1': 'bandwidth_gb_per_s' must be > 0"),
            std::string::npos)
      << error;
  error = errorOf(
      "chips: {count: 4, config: npu-16x16.yaml}\ninterconnect:\n  topology: ring\n"
      "  bandwidth_gb_per_s: 8\n  links:\n    - {between: [npu0, npu2], latency_ns: 10}\n");
  EXPECT_NE(error.find("link 'npu0-npu2' is not a link of the ring"), std::string::npos) << error;
  error = errorOf(chips + "interconnect: {topology: torus, bandwidth_gb_per_s: 8}\n");
  EXPECT_NE(error.find("topology 'torus' (known: ring, all_to_all, listed)"), std::string::npos) << error;
  error = errorOf(chips + "interconnect: {topology: ring}\n");
  EXPECT_NE(error.find("interconnect: missing 'bandwidth_gb_per_s'"), std::string::npos) << error;
  error = errorOf(chips);
  EXPECT_NE(error.find("3 chips but no 'interconnect'"), std::string::npos) << error;
}

TEST(SystemConfig, BadChipsNameTheChip) {
  std::string error = errorOf(
      "chips:\n  - {name: a, config: npu-16x16.yaml}\n  - {name: b, config: nothere.yaml}\n"
      "interconnect: {bandwidth_gb_per_s: 8}\n");
  EXPECT_NE(error.find("chip 'b': "), std::string::npos) << error;
  EXPECT_NE(error.find("nothere.yaml"), std::string::npos) << error;
  error = errorOf(
      "chips:\n  - {name: a, config: npu-16x16.yaml}\n  - {name: a, config: npu-16x16.yaml}\n"
      "interconnect: {bandwidth_gb_per_s: 8}\n");
  EXPECT_NE(error.find("chip 'a' is declared twice"), std::string::npos) << error;
  error = errorOf("chips:\n  - {name: a, config: npu-16x16.yaml, clock: 2}\n");
  EXPECT_NE(error.find("chip 'a': unknown key 'clock'"), std::string::npos) << error;
  error = errorOf(
      "chips: {count: 2, config: npu-16x16.yaml}\ninterconnect: {bandwidth_gb_per_s: 8}\n"
      "dram: {kind: shared, size_mib: 64}\n");
  EXPECT_NE(error.find("dram: missing 'bandwidth_gb_per_s'"), std::string::npos) << error;
  EXPECT_NE(errorOf("[1, 2]").find("a system config is a YAML mapping"), std::string::npos);
  EXPECT_NE(errorOf("chips: [").find("invalid YAML"), std::string::npos);
}

TEST(SystemConfig, AChipThatCannotHoldItsStagesIsNamed) {
  Expected<SystemConfig> system = parse(
      "chips:\n  - {name: big, config: npu-64x64.yaml}\n  - {name: small, config: npu-16x16.yaml}\n"
      "interconnect: {topology: ring, bandwidth_gb_per_s: 32}\n");
  ASSERT_TRUE(system) << system.error().message();
  const int64_t mib = 1024 * 1024;
  const int64_t smallDram = system->chips[1].config.dramBytes;
  EXPECT_FALSE(checkStagePlacement(*system, {{"s0", "big", 100 * mib}, {"s1", "small", smallDram}}));
  Error e =
      checkStagePlacement(*system, {{"s0", "small", smallDram / 2}, {"s1", "small", smallDram / 2 + 1}});
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("chip 'small' (npu-16x16) cannot hold stage 's1'"), std::string::npos)
      << e.message();
  e = checkStagePlacement(*system, {{"s0", "medium", 1}});
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("stage 's0' is placed on chip 'medium', which the system does not have"),
            std::string::npos)
      << e.message();

  Expected<SystemConfig> shared = parse(
      "chips: {count: 2, config: npu-16x16.yaml}\ninterconnect: {bandwidth_gb_per_s: 32}\n"
      "dram: {kind: shared, size_mib: 64, bandwidth_gb_per_s: 50}\n");
  ASSERT_TRUE(shared) << shared.error().message();
  e = checkStagePlacement(*shared, {{"s0", "npu0", 40 * mib}, {"s1", "npu1", 40 * mib}});
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("chip 'npu1' (npu-16x16) cannot hold stage 's1'"), std::string::npos)
      << e.message();
  EXPECT_NE(e.message().find("the shared DRAM, 64 MiB"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace ember::multichip
