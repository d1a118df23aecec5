// ISA v3's vector queue (vector.queue: separate) and bias init: requants on their own
// in-order queue overlap the next tile's gemms, bit-exact with the same
// pipeline on the shared compute queue; the accumulator banks are the shared
// resource; illegal four-queue programs (a token deadlock, a vector read of an
// accumulator tile the matrix engine writes without a token, vq on a config
// or bundle without the vector queue) are reported by the static checks and
// the simulator.
#include <algorithm>
#include <sstream>

#include "NpuTestUtil.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/ProgramCheck.h"

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

std::vector<isa::Instruction> programOfText(const std::string& text) { return decodeAll(assembleText(text)); }

void expectMessage(const Error& e, std::initializer_list<const char*> parts) {
  ASSERT_TRUE(e) << "expected an error containing '" << *parts.begin() << "'";
  for (const char* part : parts) EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
}

NpuConfig withQueue(const std::string& file, VectorQueue queue, int64_t accumulatorBanks) {
  NpuConfig c = config(file);
  c.vectorQueue = queue;
  c.accumulatorBanks = accumulatorBanks;
  return c;
}

constexpr int kTiles = 8, kRows = 64, kGemmsPerTile = 4;

// Y[t] = requant(4 X[t] x A), t < kTiles, each tile kRows x 16: the 4
// accumulating gemms of tile t write accumulator tile t % 2 (entry 0 or 8192: banks 0 and 1 of a
// 2-bank 64 KiB accumulator), the requant writes output slot t % 2, the store
// writes Y. With `separate` the requants run on the vector queue (vq) and the
// tokens go compute -> vector -> store; otherwise compute -> store as in ISA v2.
std::string pipeline(bool separate) {
  std::ostringstream os;
  os << ".input X i8 [" << kTiles * kRows << ",16] @0x0\n"
     << ".input A i8 [16,16] @0x4000\n"
     << ".output Y i8 [" << kTiles * kRows << ",16] @0x4100\n"
     << ".dram 0x8100\n"
     << "load mem=spad x=16 y=" << kTiles * kRows << " dram_ystride=16 sram_stride=16\n"
     << "load mem=spad dram=0x4000 sram=0x10000 x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n";
  for (int t = 0; t < kTiles; ++t) {
    const int acc = (t % 2) * 8192, out = 0x20000 + (t % 2) * 0x1000;
    for (int g = 0; g < kGemmsPerTile; ++g)
      os << (g ? "\n" : "") << "gemm m=" << kRows << " inp=" << std::hex << "0x" << t * kRows * 16 << std::dec
         << " inp_stride=16 wgt=0x10000 wgt_stride=16 acc=" << acc << " acc_stride=16 k=16 n=16"
         << (t == 0 && g == 0 ? " preload=1 pop_prev" : "") << (g ? " accumulate=1" : "")
         << (separate && t >= 2 && g == 0 ? " pop_side" : "");
    if (separate)
      os << " push_side\n"
         << "requant vq src=" << acc << " dst=0x" << std::hex << out << std::dec << " rows=" << kRows
         << " cols=16 src_stride=16 dst_stride=16 multiplier=1073741824 lo=-128 hi=127 pop_prev"
         << (t >= 2 ? " pop_next" : "") << " push_prev push_next\n"
         << "store mem=spad sram=0x" << std::hex << out << " dram=0x" << 0x4100 + t * kRows * 16 << std::dec
         << " x=16 y=" << kRows << " dram_ystride=16 sram_stride=16 pop_side push_side\n";
    else
      os << "\nrequant src=" << acc << " dst=0x" << std::hex << out << std::dec << " rows=" << kRows
         << " cols=16 src_stride=16 dst_stride=16 multiplier=1073741824 lo=-128 hi=127"
         << (t >= 2 ? " pop_next" : "") << " push_next\n"
         << "store mem=spad sram=0x" << std::hex << out << " dram=0x" << 0x4100 + t * kRows * 16 << std::dec
         << " x=16 y=" << kRows << " dram_ystride=16 sram_stride=16 pop_prev push_prev\n";
  }
  return os.str() + "finish\n";
}

// The expected output from plain integer arithmetic: the accumulator holds
// 4 X A, the requant (multiplier 2^30 = 0.5, exact on even values) halves and
// clamps it. Small operands keep most results inside int8.
std::vector<int8_t> expected(const std::vector<int8_t>& x, const std::vector<int8_t>& a) {
  std::vector<int8_t> y(x.size());
  for (size_t r = 0; r < x.size() / 16; ++r)
    for (int j = 0; j < 16; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < 16; ++k) acc += int32_t(x[r * 16 + size_t(k)]) * a[size_t(k * 16 + j)];
      y[r * 16 + size_t(j)] = int8_t(std::clamp(kGemmsPerTile * acc / 2, -128, 127));
    }
  return y;
}

struct PipelineRun {
  std::vector<int8_t> y, want;
  uint64_t cycles = 0;
};

PipelineRun runPipeline(bool separate, const NpuConfig& c) {
  const Bundle b = assembleText(pipeline(separate));
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 31);
  const Symbol &a = symbol(b, "A"), &x = symbol(b, "X");
  for (uint64_t i = 0; i < 256; ++i)
    dram.bytes[a.dramOffset + i] = uint8_t(2 * (dram.bytes[a.dramOffset + i] % 3) - 2);
  for (uint64_t i = 0; i < kTiles * kRows * 16; ++i)
    dram.bytes[x.dramOffset + i] = uint8_t(int8_t(dram.bytes[x.dramOffset + i]) >> 4);
  const auto program = decodeAll(b);
  const Error tokens = checkTokens(program, c), races = checkSramRaces(program, c);
  EXPECT_FALSE(tokens) << tokens.message();
  EXPECT_FALSE(races) << races.message();
  PipelineRun run;
  run.want = expected(readI8(b, dram, "X"), readI8(b, dram, "A"));
  run.cycles = test::run(b, c, dram).cycles;
  run.y = readI8(b, dram, "Y");
  return run;
}

TEST(VectorQueue, RequantsOverlapTheNextGemmsAndStayExact) {
  const NpuConfig shared = config("npu-16x16.yaml");
  const NpuConfig separate = withQueue("npu-16x16.yaml", VectorQueue::Separate, 2);
  const PipelineRun before = runPipeline(false, shared), after = runPipeline(true, separate);
  EXPECT_EQ(before.y, before.want);
  EXPECT_EQ(after.y, after.want);
  // Each requant (64 rows of 16 int32: 64 accumulator port cycles) now hides
  // behind the next tile's gemms instead of following them.
  EXPECT_LT(after.cycles + uint64_t(kTiles - 2) * kRows, before.cycles)
      << "shared " << before.cycles << ", separate " << after.cycles;
}

TEST(VectorQueue, OneAccumulatorBankSerialisesTheMatrixAndVectorPorts) {
  // The same program on one accumulator port: gemm writes and requant reads
  // take turns, so the overlap shrinks but the result is the same.
  const PipelineRun twoBanks = runPipeline(true, withQueue("npu-16x16.yaml", VectorQueue::Separate, 2));
  const PipelineRun oneBank = runPipeline(true, withQueue("npu-16x16.yaml", VectorQueue::Separate, 1));
  EXPECT_EQ(oneBank.y, oneBank.want);
  EXPECT_LT(twoBanks.cycles + uint64_t(kTiles - 2) * kRows / 2, oneBank.cycles)
      << "two banks " << twoBanks.cycles << ", one bank " << oneBank.cycles;
}

TEST(VectorQueue, NewTokensRoundTripThroughTheAssembler) {
  const Bundle b = assembleText(pipeline(true));
  EXPECT_EQ(b.isaVersion, isa::kIsaVersion);  // the assembler writes the current version
  auto text = disassemble(b);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_NE(text->find(" vq\n"), std::string::npos);
  EXPECT_NE(text->find("pop_side push_side"), std::string::npos);
  EXPECT_EQ(serializeBundle(assembleText(*text)), serializeBundle(b));
  const auto program = decodeAll(b);
  EXPECT_EQ(program[2 + kGemmsPerTile].queue(), isa::Queue::Vector);
  EXPECT_EQ(*isa::linkedQueue(isa::Queue::Vector, isa::Link::Prev), isa::Queue::Compute);
  EXPECT_EQ(*isa::linkedQueue(isa::Queue::Vector, isa::Link::Next), isa::Queue::Store);
  EXPECT_EQ(*isa::linkedQueue(isa::Queue::Vector, isa::Link::Side), isa::Queue::Load);
  EXPECT_EQ(*isa::linkedQueue(isa::Queue::Store, isa::Link::Side), isa::Queue::Vector);
}

// ---- illegal programs ----

// The vector queue waits for the store, the store for the compute queue's
// gemm, which waits for the vector queue: a cycle through three queues.
const char* kFourQueueDeadlock =
    ".dram 0x1000\n"
    "load mem=spad x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n"
    "requant vq src=8192 dst=0x1000 rows=1 cols=16 multiplier=1073741824 lo=-128 hi=127 pop_next push_prev\n"
    "gemm preload=1 m=16 k=16 n=16 inp_stride=16 wgt_stride=16 acc_stride=16 pop_prev pop_side push_next\n"
    "store mem=acc x=16 y=16 dram_ystride=16 sram_stride=16 pop_prev push_side\n"
    "finish\n";

TEST(VectorQueue, ATokenCycleAmongFourQueuesIsADeadlock) {
  const NpuConfig c = withQueue("npu-16x16.yaml", VectorQueue::Separate, 2);
  const Bundle b = assembleText(kFourQueueDeadlock);
  const Error e = checkTokens(decodeAll(b), c);
  expectMessage(e, {"deadlock", "the compute queue waits at instruction 2 (gemm) for a token from vector",
                    "the store queue waits at instruction 3 (store) for a token from compute",
                    "the vector queue waits at instruction 1 (requant) for a token from store"});
  // The simulator finds the same deadlock by running it.
  const std::string run = runError(b, c);
  EXPECT_NE(run.find("deadlock"), std::string::npos) << run;
  EXPECT_NE(run.find("the vector queue waits at instruction 1 (requant) for a token from store"),
            std::string::npos)
      << run;
}

TEST(VectorQueue, AVectorReadOfATileTheGemmWritesWithoutATokenIsARace) {
  const NpuConfig c = withQueue("npu-16x16.yaml", VectorQueue::Separate, 2);
  // The requant reads accumulator tile 0 while the gemm may still write it:
  // it pops nothing from the compute queue.
  const Bundle b = assembleText(
      ".dram 0x1000\n"
      "load mem=spad x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n"
      "gemm preload=1 m=16 k=16 n=16 inp_stride=16 wgt_stride=16 acc_stride=16 pop_prev\n"
      "requant vq src=0 dst=0x1000 rows=16 cols=16 src_stride=16 dst_stride=16 multiplier=1073741824 lo=-128 "
      "hi=127 push_next\n"
      "store mem=spad sram=0x1000 x=16 y=16 dram_ystride=16 sram_stride=16 pop_side\n"
      "finish\n");
  const auto program = decodeAll(b);
  EXPECT_FALSE(checkTokens(program, c));
  expectMessage(checkSramRaces(program, c), {"SRAM race", "instruction 1 (gemm) on the compute queue writes",
                                             "instruction 2 (requant) on the vector queue reads",
                                             "accumulator entries", "no dependency token"});
}

TEST(VectorQueue, UnbalancedTokensTowardTheVectorQueueAreReported) {
  const NpuConfig c = withQueue("npu-16x16.yaml", VectorQueue::Separate, 2);
  const Bundle b = assembleText(
      ".dram 0x1000\n"
      "load mem=spad x=16 y=16 dram_ystride=16 sram_stride=16 push_next push_side\n"
      "gemm preload=1 m=16 k=16 n=16 inp_stride=16 wgt_stride=16 acc_stride=16 pop_prev\n"
      "finish\n");
  expectMessage(checkTokens(decodeAll(b), c), {"unbalanced tokens", "load->vector", "instruction 0 (load)"});
}

TEST(VectorQueue, TheVectorQueueNeedsIsaThreeAndASeparateQueueConfig) {
  const Bundle b = assembleText(pipeline(true));
  // A config without the vector queue refuses the program before running it.
  const std::string shared = runError(b, config("npu-16x16.yaml"));
  EXPECT_NE(shared.find("runs on the vector queue"), std::string::npos) << shared;
  EXPECT_NE(shared.find("vector.queue 'shared'"), std::string::npos) << shared;
  // A version-2 bundle may not use the vector queue's bits.
  Bundle v2 = b;
  v2.isaVersion = 2;
  expectMessage(v2.validate(), {"instruction 5", "vector queue", "ISA version 3", "version 2"});
  EXPECT_FALSE(assemble(".isa 2\n" + pipeline(true), "v2.s"));
  // vq belongs to vector instructions only.
  auto gemm = assemble("gemm m=1 k=1 n=1 vq\nfinish\n", "vq.s");
  ASSERT_FALSE(gemm);
  EXPECT_NE(gemm.error().message().find("only vector instructions"), std::string::npos)
      << gemm.error().message();
  // The RTL co-simulation keeps one compute queue.
  auto rtl = parseConfig("matrix_engine:\n  model: rtl\nvector:\n  queue: separate\n", "q.yaml");
  ASSERT_FALSE(rtl);
  EXPECT_NE(rtl.error().message().find("vector.queue"), std::string::npos) << rtl.error().message();
  EXPECT_NE(rtl.error().message().find("matrix_engine.model"), std::string::npos) << rtl.error().message();
  auto banks = parseConfig("accumulator:\n  banks: 3\n", "b.yaml");
  ASSERT_FALSE(banks);
  EXPECT_NE(banks.error().message().find("accumulator.banks"), std::string::npos) << banks.error().message();
}

// matrix_engine.bias_init (ISA v3 gemm `bias_init`): the first gemm of a
// chain starts from a bias row in the accumulator, the second accumulates.
TEST(BiasInit, TheFirstGemmStartsFromTheBiasRow) {
  const Bundle b = assembleText(
      ".input X i8 [4,16] @0x0\n"
      ".input A i8 [16,16] @0x100\n"
      ".input BIAS i32 [1,16] @0x200\n"
      ".output C i32 [4,16] @0x300\n"
      ".dram 0x400\n"
      "load mem=spad x=16 y=4 dram_ystride=16 sram_stride=16\n"
      "load mem=spad dram=0x100 sram=0x10000 x=16 y=16 dram_ystride=16 sram_stride=16\n"
      "load mem=acc dram=0x200 sram=1000 x=16 y=1 sram_stride=16 push_next\n"
      "gemm preload=1 bias_init=1 bias=1000 m=4 inp_stride=16 wgt=0x10000 wgt_stride=16 acc_stride=16 k=16 "
      "n=16 pop_prev\n"
      "gemm accumulate=1 m=4 inp_stride=16 acc_stride=16 k=16 n=16 push_next\n"
      "store mem=acc x=16 y=4 dram=0x300 dram_ystride=16 sram_stride=16 pop_prev\n"
      "finish\n");
  EXPECT_EQ(b.isaVersion, isa::kIsaVersion);  // the assembler writes the current version
  NpuConfig c = config("npu-16x16.yaml");
  c.biasInit = true;
  const auto program = decodeAll(b);
  EXPECT_FALSE(checkTokens(program, c));
  EXPECT_FALSE(checkSramRaces(program, c));
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 23);
  run(b, c, dram);
  const auto x = readI8(b, dram, "X"), a = readI8(b, dram, "A");
  const auto bias = readI32(b, dram, "BIAS"), got = readI32(b, dram, "C");
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      int64_t want = bias[size_t(j)];
      for (int k = 0; k < 16; ++k) want += 2 * int32_t(x[size_t(i * 16 + k)]) * a[size_t(k * 16 + j)];
      EXPECT_EQ(got[size_t(i * 16 + j)], int32_t(uint32_t(want))) << i << "," << j;
    }
  // Without the switch the simulator refuses the gemm; the RTL has no bias init.
  const std::string off = runError(b, config("npu-16x16.yaml"));
  EXPECT_NE(off.find("matrix_engine.bias_init false"), std::string::npos) << off;
  auto rtl = parseConfig("matrix_engine:\n  model: rtl\n  bias_init: true\n", "b.yaml");
  ASSERT_FALSE(rtl);
  EXPECT_NE(rtl.error().message().find("matrix_engine.bias_init"), std::string::npos)
      << rtl.error().message();
  EXPECT_NE(rtl.error().message().find("matrix_engine.model"), std::string::npos) << rtl.error().message();
  // A version-2 bundle may not use it; the race check sees the bias row read.
  Bundle v2 = b;
  v2.isaVersion = 2;
  expectMessage(v2.validate(), {"instruction 3", "bias_init", "ISA version 3"});
  expectMessage(checkSramRaces(programOfText(".dram 0x100\n"
                                             "load mem=acc sram=1000 x=16 y=1 sram_stride=16\n"
                                             "gemm preload=1 bias_init=1 bias=1000 m=1 k=16 n=16\n"
                                             "finish\n"),
                               c),
                {"SRAM race", "operand 'bias'"});
}

TEST(VectorQueue, TheV2qConfigsParse) {
  for (const char* file : {"npu-16x16-v2q.yaml", "npu-64x64-v2q.yaml"}) {
    const NpuConfig c = config(file);
    EXPECT_FALSE(c.biasInit) << file;
    EXPECT_TRUE(config(std::string(file).replace(std::string(file).find("v2q"), 3, "v3")).biasInit) << file;
    EXPECT_EQ(c.vectorQueue, VectorQueue::Separate) << file;
    EXPECT_EQ(c.accumulatorBanks, 2) << file;
    EXPECT_EQ(c.weightBuffers, 2) << file;
    EXPECT_NE(c.hash(), config(std::string(file).replace(std::string(file).find("v2q"), 3, "v2")).hash());
  }
  // The default configs keep their hashes (bundles compiled before ISA v3 still match).
  EXPECT_EQ(config("npu-16x16.yaml").hash(), NpuConfig{}.hash());
}

}  // namespace
}  // namespace ember::npu::test
