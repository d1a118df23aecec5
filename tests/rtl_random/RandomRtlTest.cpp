// CI subset of the random-program co-simulation (docs/testing.md, "Random NPU
// programs"): 1,000 valid programs on the 16x16 array, fast model against the
// RTL matrix engine, and every kind of illegal program refused by its checker.
#include <gtest/gtest.h>

#include "RandomCosim.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Simulator.h"

namespace ember::npu::test {
namespace {

NpuConfig shipped(const std::string& name) {
  auto config = loadConfig(std::string(EMBER_NPU_CONFIG_DIR) + "/" + name);
  EXPECT_TRUE(config) << config.error().message();
  return config ? *config : NpuConfig{};
}

// Seeds 1..count on `config`: every program agrees on both engines (the first
// ten disagreements are reported).
void expectProgramsAgree(const NpuConfig& config, uint64_t count) {
  int mismatches = 0;
  for (uint64_t seed = 1; seed <= count; ++seed) {
    const Verdict v = checkValidProgram(config, seed);
    if (!v.ok && ++mismatches <= 10) ADD_FAILURE() << v.message;
  }
  EXPECT_EQ(mismatches, 0);
}

// Every kind of illegal program over seeds 1..count is refused by its checker.
void expectIllegalRefused(const NpuConfig& config, uint64_t count) {
  for (int m = 1; m < kNumMutations; ++m)
    for (uint64_t seed = 1; seed <= count; ++seed) {
      const Verdict v = checkIllegalProgram(config, seed, Mutation(m));
      EXPECT_TRUE(v.ok) << v.message;
    }
}

TEST(RandomRtl, ThousandPrograms16x16AgreeBitForBitAndCycleForCycle) {
  expectProgramsAgree(shipped("npu-16x16.yaml"), 1000);
}

// Two weight buffers (npu-16x16-v2): the generator draws every preload's
// wbuf, so gemm chains overlap on the RTL's weight loader and stream machine.
TEST(RandomRtl, ThreeHundredPrograms16x16TwoBuffersAgree) {
  const NpuConfig config = shipped("npu-16x16-v2.yaml");
  int withBufferOne = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed)
    withBufferOne += randomProgram(config, seed).text.find("wbuf=1") != std::string::npos;
  EXPECT_GT(withBufferOne, 100);
  expectProgramsAgree(config, 300);
}

TEST(RandomRtl, IllegalProgramsOnTwoBuffersAreRefused) {
  expectIllegalRefused(shipped("npu-16x16-v2.yaml"), 50);
}

TEST(RandomRtl, ProgramsUseEveryOpcode) {
  // Over 50 seeds the generator emits each of the eleven opcodes.
  std::string all;
  for (uint64_t seed = 1; seed <= 50; ++seed) all += randomProgram(shipped("npu-16x16.yaml"), seed).text;
  for (const char* op : {"load ", "store ", "gemm ", "requant ", "vadd ", "vclip ", "lut ", "pool ", "eadd ",
                         "sync ", "finish"})
    EXPECT_NE(all.find(std::string("\n") + op), std::string::npos) << op;
}

TEST(RandomRtl, IllegalProgramsAreRefusedByTheirChecker) {
  expectIllegalRefused(shipped("npu-16x16.yaml"), 200);
}

TEST(RandomRtl, AGeneratedProgramIsDeterministic) {
  const NpuConfig config = shipped("npu-32x32.yaml");
  EXPECT_EQ(randomProgram(config, 7).text, randomProgram(config, 7).text);
  EXPECT_NE(randomProgram(config, 7).text, randomProgram(config, 8).text);
}

}  // namespace
}  // namespace ember::npu::test
