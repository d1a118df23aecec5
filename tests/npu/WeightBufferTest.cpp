// ISA v2's two weight buffers (matrix_engine.weight_buffers: 2, gemm `wbuf`):
// each buffer keeps its own weights, illegal uses are refused by the static
// check, by `ember sim --check` and by the simulator, a version-1 bundle still
// runs, and the configs that cannot have two buffers say so.
#include <filesystem>
#include <fstream>

#include "EmberTool.h"
#include "NpuTestUtil.h"
#include "ember/npu/MatrixEngine.h"
#include "ember/npu/ProgramCheck.h"
#include "ember/npu/Timing.h"

namespace ember::npu::test {
namespace {

std::vector<isa::Instruction> decodeAll(const Bundle& b) {
  std::vector<isa::Instruction> program;
  for (const auto& bytes : b.program) {
    auto in = isa::decode(bytes);
    EXPECT_TRUE(in) << in.error().message();
    if (in) program.push_back(*in);
  }
  return program;
}

void expectMessage(const Error& e, std::initializer_list<const char*> parts) {
  ASSERT_TRUE(e) << "expected an error containing '" << *parts.begin() << "'";
  for (const char* part : parts) EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
}

// X[4,16] times A (buffer 0) and B (buffer 1), then X times A again from
// buffer 0 without a preload, accumulated: C = 2 X A, D = X B.
const char* kTwoBuffers =
    ".input X i8 [4,16] @0x0\n"
    ".input A i8 [16,16] @0x100\n"
    ".input B i8 [16,16] @0x200\n"
    ".output C i32 [4,16] @0x300\n"
    ".output D i32 [4,16] @0x400\n"
    ".dram 0x500\n"
    "load mem=spad x=16 y=4 dram_ystride=16 sram_stride=16\n"
    "load mem=spad dram=0x100 sram=0x10000 x=16 y=16 dram_ystride=16 sram_stride=16\n"
    "load mem=spad dram=0x200 sram=0x20000 x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n"
    "gemm preload=1 wbuf=0 m=4 inp_stride=16 wgt=0x10000 wgt_stride=16 acc_stride=16 k=16 n=16 pop_prev\n"
    "gemm preload=1 wbuf=1 m=4 inp_stride=16 wgt=0x20000 wgt_stride=16 acc=64 acc_stride=16 k=16 n=16\n"
    "gemm accumulate=1 wbuf=0 m=4 inp_stride=16 acc_stride=16 k=16 n=16 push_next\n"
    "store mem=acc x=16 y=4 dram=0x300 dram_ystride=16 sram_stride=16 pop_prev\n"
    "store mem=acc sram=64 x=16 y=4 dram=0x400 dram_ystride=16 sram_stride=16\n"
    "finish\n";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(WeightBuffers, EachBufferKeepsItsWeights) {
  const NpuConfig c = config("npu-16x16-v2.yaml");
  ASSERT_EQ(c.weightBuffers, 2);
  const Bundle b = assembleText(kTwoBuffers);
  EXPECT_EQ(b.isaVersion, isa::kIsaVersion);
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 17);
  auto stats = simulate(b, c, dram);
  ASSERT_TRUE(stats) << stats.error().message();
  const auto x = readI8(b, dram, "X"), a = readI8(b, dram, "A"), w = readI8(b, dram, "B");
  const auto got = readI32(b, dram, "C"), gotB = readI32(b, dram, "D");
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      int32_t xa = 0, xb = 0;
      for (int t = 0; t < 16; ++t) {
        xa += int32_t(x[size_t(i * 16 + t)]) * a[size_t(t * 16 + j)];
        xb += int32_t(x[size_t(i * 16 + t)]) * w[size_t(t * 16 + j)];
      }
      EXPECT_EQ(got[size_t(i * 16 + j)], 2 * xa) << i << "," << j;
      EXPECT_EQ(gotB[size_t(i * 16 + j)], xb) << i << "," << j;
    }
  const auto program = decodeAll(b);
  EXPECT_FALSE(checkTokens(program, c));
  EXPECT_FALSE(checkWeightBuffers(program, c));
  EXPECT_FALSE(checkSramRaces(program, c));
}

TEST(WeightBuffers, ASecondBufferNeedsTwoBuffersInTheConfig) {
  const NpuConfig c = config("npu-16x16.yaml");
  const Bundle b = assembleText(kTwoBuffers);
  expectMessage(checkWeightBuffers(decodeAll(b), c),
                {"instruction 4 (gemm)", "wbuf=1", "matrix_engine.weight_buffers: 1"});
  DramImage dram = makeDram(b);
  auto stats = simulate(b, c, dram);
  ASSERT_FALSE(stats);
  expectMessage(stats.error(), {"instruction 4", "wbuf=1", "matrix_engine.weight_buffers: 1"});
}

TEST(WeightBuffers, StreamingABufferNeverPreloadedIsRefused) {
  const NpuConfig c = config("npu-16x16-v2.yaml");
  // The third gemm streams buffer 1's 16x16 weights as 16x8, then buffer 0 as
  // if the first gemm had not preloaded it.
  const Bundle wrongShape =
      assembleText(replaced(kTwoBuffers, "gemm accumulate=1 wbuf=0 m=4 inp_stride=16 acc_stride=16 k=16 n=16",
                            "gemm accumulate=1 wbuf=1 m=4 inp_stride=16 acc_stride=16 k=16 n=8"));
  expectMessage(checkWeightBuffers(decodeAll(wrongShape), c),
                {"instruction 5 (gemm)", "16x8", "buffer 1", "holds 16x16", "instruction 4"});
  DramImage dram = makeDram(wrongShape);
  auto stats = simulate(wrongShape, c, dram);
  ASSERT_FALSE(stats);
  expectMessage(stats.error(), {"instruction 5", "buffer 1", "holds 16x16"});

  const Bundle neverLoaded =
      assembleText(replaced(kTwoBuffers, "gemm preload=1 wbuf=1", "gemm preload=0 wbuf=1"));
  expectMessage(checkWeightBuffers(decodeAll(neverLoaded), c),
                {"instruction 4 (gemm)", "buffer 1", "no earlier gemm preloaded"});
  dram = makeDram(neverLoaded);
  stats = simulate(neverLoaded, c, dram);
  ASSERT_FALSE(stats);
  expectMessage(stats.error(), {"instruction 4", "buffer 1", "holds 0x0"});
}

TEST(WeightBuffers, SimCheckReportsIt) {
  const auto dir = std::filesystem::temp_directory_path() / "ember_weight_buffer_test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.s").string(), bad = (dir / "bad.s").string();
  std::ofstream(good) << kTwoBuffers;
  std::ofstream(bad) << replaced(kTwoBuffers, "gemm preload=1 wbuf=1", "gemm preload=0 wbuf=1");
  const std::string v2 = configFile("npu-16x16-v2.yaml"), v1 = configFile("npu-16x16.yaml");
  EXPECT_EQ(runEmber("sim", {good, "--config", v2, "--check", "--random-inputs", "--quiet"}), 0);
  EXPECT_EQ(runEmber("sim", {bad, "--config", v2, "--check", "--random-inputs", "--quiet"}), 1);
  EXPECT_EQ(runEmber("sim", {good, "--config", v1, "--check", "--random-inputs", "--quiet"}), 1);
  EXPECT_EQ(runEmber("sim", {bad, "--config", v2, "--random-inputs", "--quiet"}),
            1);  // the simulator refuses it too
  std::filesystem::remove_all(dir);
}

// A preload into the buffer an earlier gemm still streams from waits for that
// stream (an interlock): legal, and timed as P1 + S1 + P2 + S2 + R + C + 3.
TEST(WeightBuffers, PreloadingTheStreamedBufferWaits) {
  const NpuConfig c = config("npu-16x16-v2.yaml");
  const Bundle b = assembleText(
      ".dram 0x40\n"
      "gemm preload=1 m=100 inp_stride=16 wgt=0x10000 wgt_stride=16 acc_stride=16 k=16 n=16\n"
      "gemm preload=1 m=50 inp_stride=16 wgt=0x20000 wgt_stride=16 acc_stride=16 k=16 n=16\n"
      "finish\n");
  const auto program = decodeAll(b);
  EXPECT_FALSE(checkWeightBuffers(program, c));
  DramImage dram = makeDram(b);
  auto stats = simulate(b, c, dram);
  ASSERT_TRUE(stats) << stats.error().message();
  const uint64_t p = 16, pipeline = uint64_t(c.rows + c.cols + 3);  // preload: 16 rows of one bank word
  EXPECT_EQ(stats->cycles - timing::kFetchCycles, p + 100 + p + 50 + pipeline);
  // With the second gemm on the other buffer its preload hides under the first stream.
  auto other = program;
  other[1][isa::Field::WeightBuffer] = 1;
  EXPECT_EQ(timing::gemm(c, other[0]).preload, p);
  Bundle ob = b;
  ob.program[1] = *isa::encode(other[1]);
  dram = makeDram(ob);
  stats = simulate(ob, c, dram);
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_EQ(stats->cycles - timing::kFetchCycles, p + 100 + 50 + pipeline);
}

TEST(WeightBuffers, VersionOneBundlesStillRun) {
  Bundle b = assembleTestFile("gemm_64x48x32.s");
  b.isaVersion = 1;
  auto parsed = parseBundle(serializeBundle(b), "v1.bundle");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->isaVersion, 1u);
  for (const char* name : {"npu-16x16.yaml", "npu-16x16-v2.yaml"}) {
    DramImage dram = makeDram(*parsed);
    randomInputs(*parsed, dram, 5);
    auto stats = simulate(*parsed, config(name), dram);
    EXPECT_TRUE(stats) << name << ": " << (stats ? "" : stats.error().message());
  }
  // The disassembly keeps the version (.isa 1), so asm(disasm(bundle)) is the same bytes.
  auto text = disassemble(*parsed);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_NE(text->find(".isa 1\n"), std::string::npos);
  const Bundle again = assembleText(*text);
  EXPECT_EQ(serializeBundle(again), serializeBundle(*parsed));
  EXPECT_FALSE(assemble(".isa 5\nfinish\n", "v5.s"));
  // A version-1 bundle cannot use the field version 2 added.
  Bundle v1 = assembleText(kTwoBuffers);
  v1.isaVersion = 1;
  expectMessage(v1.validate(), {"instruction 4", "'wbuf'", "ISA version 2", "version 1"});
  auto refused = parseBundle(serializeBundle(v1), "v1wbuf.bundle");
  ASSERT_FALSE(refused);
  expectMessage(refused.error(), {"v1wbuf.bundle", "'wbuf'"});
  v1.isaVersion = 5;
  expectMessage(v1.validate(), {"ISA version 5", "1 to 4"});
}

TEST(WeightBuffers, ConfigsThatCannotHaveTwoBuffers) {
  auto three = parseConfig("matrix_engine:\n  weight_buffers: 3\n", "wb.yaml");
  ASSERT_FALSE(three);
  expectMessage(three.error(), {"wb.yaml", "matrix_engine.weight_buffers"});
  // The RTL has two weight buffers too (docs/npu/rtl.md).
  EXPECT_TRUE(parseConfig("matrix_engine:\n  model: rtl\n  weight_buffers: 2\n", "rtl.yaml"));
  auto os = parseConfig("matrix_engine:\n  dataflow: output_stationary\n  weight_buffers: 2\n", "os.yaml");
  ASSERT_FALSE(os);
  expectMessage(os.error(), {"os.yaml", "matrix_engine.weight_buffers", "matrix_engine.dataflow"});
  NpuConfig c = config("npu-16x16-v2.yaml");
  if (rtlMatrixEngineBuilt()) {
    EXPECT_TRUE(makeRtlMatrixEngine(c));
  }
  // One buffer hashes as before the key existed; two change what a bundle needs.
  EXPECT_EQ(config("npu-16x16.yaml").hash(), NpuConfig{}.hash());
  EXPECT_NE(c.hash(), config("npu-16x16.yaml").hash());
}

}  // namespace
}  // namespace ember::npu::test
