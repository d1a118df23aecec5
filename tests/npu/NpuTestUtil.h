// Shared helpers of the NPU simulator tests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ember/npu/Assembler.h"
#include "ember/npu/Simulator.h"

namespace ember::npu::test {

inline std::string testFile(const std::string& name) { return std::string(EMBER_NPU_TEST_DIR) + "/" + name; }
inline std::string configFile(const std::string& name) {
  return std::string(EMBER_NPU_CONFIG_DIR) + "/" + name;
}

inline NpuConfig config(const std::string& name = "npu-16x16.yaml") {
  auto c = loadConfig(configFile(name));
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : NpuConfig{};
}

inline Bundle assembleText(const std::string& text) {
  auto b = assemble(text, "test.s");
  EXPECT_TRUE(b) << b.error().message();
  return b ? *b : Bundle{};
}

inline Bundle assembleTestFile(const std::string& name) {
  auto b = assembleFile(testFile(name));
  EXPECT_TRUE(b) << b.error().message();
  return b ? *b : Bundle{};
}

/// Deterministic pseudo-random bytes (a 64-bit LCG), independent of the simulator.
struct Lcg {
  uint64_t state;
  explicit Lcg(uint64_t seed) : state(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  }
  int8_t nextI8() { return int8_t(next() & 0xff); }
};

/// Fills every input symbol with random values: int8 in [-128,127], int32 in [-20000, 20000].
inline void randomInputs(const Bundle& b, DramImage& dram, uint64_t seed) {
  Lcg rng(seed);
  for (const auto& s : b.symbols) {
    if (s.direction != Symbol::Direction::Input) continue;
    for (int64_t i = 0; i < s.numElements(); ++i) {
      if (s.type == SymbolType::I32) {
        const int32_t v = int32_t(rng.next() % 40001) - 20000;
        std::memcpy(&dram.bytes[s.dramOffset + 4 * uint64_t(i)], &v, 4);
      } else {
        dram.bytes[s.dramOffset + uint64_t(i)] = uint8_t(rng.next());
      }
    }
  }
}

inline const Symbol& symbol(const Bundle& b, const std::string& name) {
  for (const auto& s : b.symbols)
    if (s.name == name) return s;
  ADD_FAILURE() << "no symbol " << name;
  return b.symbols.front();
}

inline std::vector<int8_t> readI8(const Bundle& b, const DramImage& dram, const std::string& name) {
  const Symbol& s = symbol(b, name);
  std::vector<int8_t> v(size_t(s.numElements()));
  std::memcpy(v.data(), &dram.bytes[s.dramOffset], v.size());
  return v;
}

inline std::vector<int32_t> readI32(const Bundle& b, const DramImage& dram, const std::string& name) {
  const Symbol& s = symbol(b, name);
  std::vector<int32_t> v(size_t(s.numElements()));
  std::memcpy(v.data(), &dram.bytes[s.dramOffset], v.size() * 4);
  return v;
}

/// Runs and expects success.
inline SimStats run(const Bundle& b, const NpuConfig& c, DramImage& dram) {
  auto stats = simulate(b, c, dram);
  EXPECT_TRUE(stats) << stats.error().message();
  return stats ? *stats : SimStats{};
}

/// Runs and returns the error message ("" on success).
inline std::string runError(const Bundle& b, const NpuConfig& c) {
  DramImage dram = makeDram(b);
  auto stats = simulate(b, c, dram);
  return stats ? "" : stats.error().message();
}

}  // namespace ember::npu::test
