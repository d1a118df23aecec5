// Co-simulation: the simulator with the verilated matrix engine
// (matrix_engine: rtl) against the fast model. Every program of tests/npu and
// generated gemm mixes on both shipped array sizes and both dataflows give
// bit-identical DRAM images; with the calibrated formula they also give the
// same cycle counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "EmberTool.h"
#include "RtlPrograms.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Bundle.h"
#include "ember/npu/MatrixEngine.h"
#include "ember/npu/Simulator.h"

namespace ember::rtl::test {
namespace {

using namespace ember::npu;
using ember::npu::test::runEmber;

NpuConfig loadShipped(const std::string& name) {
  auto c = loadConfig(std::string(EMBER_NPU_CONFIG_DIR) + "/" + name);
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : NpuConfig{};
}

void randomize(const Bundle& b, DramImage& dram, uint32_t seed) {
  std::mt19937 rng(seed);
  for (const auto& s : b.symbols) {
    if (s.direction != Symbol::Direction::Input) continue;
    for (uint64_t i = 0; i < s.sizeInBytes(); ++i) dram.bytes[s.dramOffset + i] = uint8_t(rng());
  }
}

struct Outcome {
  DramImage dram;
  SimStats stats;
};

Outcome runWith(const Bundle& b, NpuConfig c, MatrixEngineModel model, uint32_t seed) {
  c.matrixEngineModel = model;
  Outcome o{makeDram(b), {}};
  randomize(b, o.dram, seed);
  auto s = simulate(b, c, o.dram);
  EXPECT_TRUE(s) << s.error().message();
  if (s) o.stats = *s;
  return o;
}

void expectSame(const Bundle& b, const NpuConfig& c, const std::string& what) {
  const Outcome fast = runWith(b, c, MatrixEngineModel::Fast, 5);
  const Outcome rtl = runWith(b, c, MatrixEngineModel::Rtl, 5);
  EXPECT_EQ(rtl.stats.matrixEngine, "rtl");
  EXPECT_TRUE(fast.dram.bytes == rtl.dram.bytes) << what << ": DRAM images differ";
  EXPECT_EQ(fast.stats.cycles, rtl.stats.cycles) << what;
  EXPECT_EQ(fast.stats.macs, rtl.stats.macs) << what;
  // Every instruction starts and ends in the same cycles (the gemms' match
  // the calibrated formula exactly).
  ASSERT_EQ(fast.stats.records.size(), rtl.stats.records.size());
  for (size_t i = 0; i < fast.stats.records.size(); ++i) {
    const auto &f = fast.stats.records[i], &r = rtl.stats.records[i];
    EXPECT_EQ(f.index, r.index) << what;
    EXPECT_EQ(f.startCycle, r.startCycle) << what << " instruction " << f.index;
    EXPECT_EQ(f.endCycle, r.endCycle) << what << " instruction " << f.index;
  }
}

TEST(RtlCosim, EveryNpuTestProgramIsBitIdentical) {
  const NpuConfig c = loadShipped("npu-16x16.yaml");
  int programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(EMBER_NPU_TEST_DIR)) {
    if (entry.path().extension() != ".s") continue;
    auto b = assembleFile(entry.path().string());
    ASSERT_TRUE(b) << b.error().message();
    expectSame(*b, c, entry.path().filename().string());
    ++programs;
  }
  EXPECT_GE(programs, 6);
}

// Two weight buffers (matrix_engine.weight_buffers: 2): the RTL's weight
// loader and stream machine overlap the gemms; every tests/npu program and
// random chains of 2-8 gemms (wbuf alternating or random) give the same DRAM
// images and the same cycles, total and per instruction, as the fast model.
NpuConfig twoBuffers(const std::string& configName) {
  NpuConfig c = loadShipped(configName);
  c.weightBuffers = 2;
  c.dataflow = Dataflow::WeightStationary;
  return c;
}

TEST(RtlCosim, EveryNpuTestProgramOnTwoWeightBuffers) {
  for (const char* name : {"npu-16x16-v2.yaml", "npu-32x32.yaml"}) {
    const NpuConfig c = twoBuffers(name);
    for (const auto& entry : std::filesystem::directory_iterator(EMBER_NPU_TEST_DIR)) {
      if (entry.path().extension() != ".s") continue;
      auto b = assembleFile(entry.path().string());
      ASSERT_TRUE(b) << b.error().message();
      expectSame(*b, c, std::string(name) + " " + entry.path().filename().string());
    }
  }
}

// Programs compiled from real models (digits, tiny_cnn; int8) for two-buffer
// configs: npu-16x16-v2 and npu-32x32 with weight_buffers: 2 (the compiler's
// gemm chains alternate wbuf).
TEST(RtlCosim, CompiledModelsOnTwoWeightBuffers) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "ember_rtl_models";
  std::filesystem::create_directories(dir);
  const std::string models = std::string(EMBER_NPU_TEST_DIR) + "/../../examples/models/";
  // npu-32x32.yaml with the key added under matrix_engine.
  const std::string cfg32 = (dir / "npu-32x32-wb2.yaml").string();
  {
    std::ifstream in(std::string(EMBER_NPU_CONFIG_DIR) + "/npu-32x32.yaml");
    std::ofstream out(cfg32);
    for (std::string line; std::getline(in, line);)
      out << line << "\n" << (line.rfind("matrix_engine:", 0) == 0 ? "  weight_buffers: 2\n" : "");
  }
  for (const std::string& cfg : {std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16-v2.yaml", cfg32}) {
    auto config = loadConfig(cfg);
    ASSERT_TRUE(config) << config.error().message();
    ASSERT_EQ(config->weightBuffers, 2);
    for (const std::string model : {"digits", "tiny_cnn"}) {
      const std::string onnx = models + model + ".onnx", stem = (dir / model).string();
      const std::string samples = models + model + (model == "digits" ? ".calibration.npy" : ".input.npy");
      ASSERT_EQ(runEmber("quantize", {onnx, "--dim", "N=1", "--calibrate", samples, "-o", stem + ".yaml"}),
                0);
      ASSERT_EQ(runEmber("compile", {onnx, "--dim", "N=1", "--backend", "npu", "--config", cfg, "--quantize",
                                     stem + ".yaml", "-o", stem + ".bundle"}),
                0)
          << model;
      auto b = readBundle(stem + ".bundle");
      ASSERT_TRUE(b) << b.error().message();
      expectSame(*b, *config, config->name + " " + model);
    }
  }
  std::filesystem::remove_all(dir);
}

void gemmChains(const std::string& configName, bool alternate, uint32_t seed) {
  const NpuConfig c = twoBuffers(configName);
  std::mt19937 rng(seed);
  for (int i = 0; i < 12; ++i) {
    const auto chain = randomChain(rng, c.rows, c.cols, 2 + int(rng() % 7), alternate);
    auto b = assemble(gemmChainProgram(chain, c.rows, c.cols, c.bankBytes()), "chain.s");
    ASSERT_TRUE(b) << b.error().message();
    expectSame(*b, c, configName + " chain " + std::to_string(i));
  }
}

TEST(RtlCosim, GemmChains16x16AlternatingBuffers) { gemmChains("npu-16x16-v2.yaml", true, 31); }
TEST(RtlCosim, GemmChains16x16RandomBuffers) { gemmChains("npu-16x16-v2.yaml", false, 32); }
TEST(RtlCosim, GemmChains32x32AlternatingBuffers) { gemmChains("npu-32x32.yaml", true, 33); }
TEST(RtlCosim, GemmChains32x32RandomBuffers) { gemmChains("npu-32x32.yaml", false, 34); }

void gemmMixes(const std::string& configName, Dataflow dataflow) {
  NpuConfig c = loadShipped(configName);
  c.dataflow = dataflow;
  std::mt19937 rng(11);
  const bool ws = dataflow == Dataflow::WeightStationary;
  for (int i = 0; i < 8; ++i) {
    auto dim = [&](int64_t hi) { return 1 + int64_t(rng() % uint64_t(hi)); };
    const GemmShape s = ws ? GemmShape{dim(3 * c.rows), dim(c.rows), dim(c.cols)}
                           : GemmShape{dim(c.rows), dim(3 * c.rows), dim(c.cols)};
    auto b = assemble(gemmMixProgram(s, c.bankBytes()), "mix.s");
    ASSERT_TRUE(b) << b.error().message();
    expectSame(
        *b, c,
        configName + " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n));
  }
}

TEST(RtlCosim, GemmMixes16x16WeightStationary) { gemmMixes("npu-16x16.yaml", Dataflow::WeightStationary); }
TEST(RtlCosim, GemmMixes16x16OutputStationary) { gemmMixes("npu-16x16.yaml", Dataflow::OutputStationary); }
TEST(RtlCosim, GemmMixes32x32WeightStationary) { gemmMixes("npu-32x32.yaml", Dataflow::WeightStationary); }
TEST(RtlCosim, GemmMixes32x32OutputStationary) { gemmMixes("npu-32x32.yaml", Dataflow::OutputStationary); }

TEST(RtlCosim, VcdNeedsTheRtlEngine) {
  auto b = assemble("finish\n", "t.s");
  ASSERT_TRUE(b);
  DramImage dram = makeDram(*b);
  SimOptions o;
  o.vcdPath = ::testing::TempDir() + "cosim.vcd";
  auto s = simulate(*b, loadShipped("npu-16x16.yaml"), dram, o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("rtl"), std::string::npos) << s.error().message();
}

TEST(RtlCosim, VcdOfAProgram) {
  auto b = assemble(gemmMixProgram({20, 16, 16}, 64 * 1024), "mix.s");
  ASSERT_TRUE(b);
  NpuConfig c = loadShipped("npu-16x16.yaml");
  c.matrixEngineModel = MatrixEngineModel::Rtl;
  DramImage dram = makeDram(*b);
  SimOptions o;
  o.vcdPath = ::testing::TempDir() + "cosim_program.vcd";
  auto s = simulate(*b, c, dram, o);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_GT(s->matrixEngineCycles, 0u);
  EXPECT_GT(std::filesystem::file_size(o.vcdPath), 1000u);
  std::filesystem::remove(o.vcdPath);
}

TEST(RtlCosim, SimCommandWithRtlEngineAndVcd) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "ember_rtl_cli";
  std::filesystem::create_directories(dir);
  const std::string vcd = (dir / "me.vcd").string(), stats = (dir / "stats.json").string();
  const std::string program = std::string(EMBER_NPU_TEST_DIR) + "/gemm_64x48x32.s";
  const std::string cfg = std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16.yaml";
  EXPECT_EQ(runEmber("sim", {program, "--config", cfg, "--matrix-engine", "rtl", "--random-inputs", "--vcd",
                             vcd, "--stats", stats, "--output-dir", dir.string(), "--quiet"}),
            0);
  EXPECT_GT(std::filesystem::file_size(vcd), 1000u);
  std::ifstream in(stats);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"matrix_engine\": \"rtl\""), std::string::npos);
  // --vcd with the fast engine, and an array size without an RTL build, are errors.
  EXPECT_NE(runEmber("sim", {program, "--config", cfg, "--random-inputs", "--vcd", vcd, "--quiet"}), 0);
  EXPECT_NE(runEmber("sim", {program, "--config", std::string(EMBER_NPU_CONFIG_DIR) + "/npu-64x64.yaml",
                             "--matrix-engine", "rtl", "--random-inputs", "--quiet"}),
            0);
  std::filesystem::remove_all(dir);
}

TEST(RtlCosim, NarrowPortsAreRefused) {
  NpuConfig c = loadShipped("npu-16x16.yaml");
  c.bankWidthBytes = 8;
  auto e = makeRtlMatrixEngine(c);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("bank_width_bytes"), std::string::npos) << e.error().message();
}

}  // namespace
}  // namespace ember::rtl::test
