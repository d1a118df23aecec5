// The static program checks (ProgramCheck.h): correct double-buffered programs
// pass; hand-made broken ones are caught with messages that name the
// instructions; checkTokens and the simulator agree on every deadlock.
#include <filesystem>
#include <fstream>

#include "EmberTool.h"
#include "NpuTestUtil.h"
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

std::vector<isa::Instruction> programOf(const std::string& text) { return decodeAll(assembleText(text)); }

void expectMessage(const Error& e, std::initializer_list<const char*> parts) {
  ASSERT_TRUE(e) << "expected an error containing '" << *parts.begin() << "'";
  for (const char* part : parts) EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
}

// ---- correct programs ----

TEST(ProgramCheck, TheShippedProgramsPass) {
  const NpuConfig c = config();
  std::vector<std::string> files = {std::string(EMBER_NPU_GEMM_EXAMPLE)};
  for (const char* name : {"conv_im2col.s", "gemm_128x128x64_i32.s", "gemm_256x256x256.s", "gemm_64x48x32.s",
                           "pool.s", "vector.s"})
    files.push_back(testFile(name));
  for (const auto& file : files) {
    auto b = assembleFile(file);
    ASSERT_TRUE(b) << b.error().message();
    const auto program = decodeAll(*b);
    const Error tokens = checkTokens(program, c);
    EXPECT_FALSE(tokens) << file << ": " << tokens.message();
    const Error races = checkSramRaces(program, c);
    EXPECT_FALSE(races) << file << ": " << races.message();
  }
}

// Two compute instructions writing interleaved columns of one output while
// the store reads the columns written first: the strided footprints do not
// overlap, so there is no race although the bounding ranges do.
TEST(ProgramCheck, InterleavedStridedColumnsAreNotARace) {
  const auto program = programOf(
      ".dram 0x1000\n"
      "requant rows=8 cols=16 dst=0x0 dst_stride=32 multiplier=1073741824 lo=-128 hi=127 push_next\n"
      "requant rows=8 cols=16 dst=0x10 dst_stride=32 multiplier=1073741824 lo=-128 hi=127\n"
      "store mem=spad sram=0x0 dram=0x0 x=16 y=8 dram_ystride=16 sram_stride=32 pop_prev\n"
      "finish\n");
  EXPECT_FALSE(checkSramRaces(program, config()));
  EXPECT_FALSE(checkTokens(program, config()));
}

// ---- races ----

// Double buffering with the load of the third tile missing its pop_next: it
// overwrites buffer 0 while the first GEMM may still read it.
const char* kDoubleBuffered =
    ".dram 0x10000\n"
    "load mem=spad dram=0x0 sram=0x0 x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n"
    "load mem=spad dram=0x0 sram=0x100 x=16 y=16 dram_ystride=16 sram_stride=16 push_next\n"
    "gemm preload=1 m=16 k=16 n=16 inp=0x0 inp_stride=16 wgt=0x0 wgt_stride=16 acc=0 acc_stride=16 pop_prev "
    "push_prev\n"
    "load mem=spad dram=0x0 sram=0x0 x=16 y=16 dram_ystride=16 sram_stride=16 POP push_next\n"
    "gemm preload=1 m=16 k=16 n=16 inp=0x100 inp_stride=16 wgt=0x100 wgt_stride=16 acc=0 acc_stride=16 "
    "accumulate=1 pop_prev push_prev\n"
    "gemm preload=1 m=16 k=16 n=16 inp=0x0 inp_stride=16 wgt=0x0 wgt_stride=16 acc=0 acc_stride=16 "
    "accumulate=1 pop_prev push_prev push_next\n"
    "store mem=acc sram=0 dram=0x1000 x=16 y=16 dram_ystride=16 sram_stride=16 pop_prev\n"
    "finish\n";

std::string withPop(bool pop) {
  std::string text = kDoubleBuffered;
  text.replace(text.find("POP"), 3, pop ? "pop_next" : "");
  return text;
}

TEST(ProgramCheck, AMissingPopIsARace) {
  const NpuConfig c = config();
  const auto good = programOf(withPop(true));
  EXPECT_FALSE(checkSramRaces(good, c)) << checkSramRaces(good, c).message();
  EXPECT_FALSE(checkTokens(good, c)) << checkTokens(good, c).message();

  const auto bad = programOf(withPop(false));
  expectMessage(checkSramRaces(bad, c),
                {"SRAM race", "instruction 2 (gemm)", "compute queue reads", "instruction 3 (load)",
                 "load queue writes", "'inp'", "scratchpad bytes [0x0, 0x100)"});
  // The tokens alone are fine (a spare credit is allowed) and the simulator
  // runs it: only the race check sees the bug.
  EXPECT_FALSE(checkTokens(bad, c));
  EXPECT_EQ(runError(assembleText(withPop(false)), c), "");
}

// softmax and layernorm (ISA v4): the race check sees their mask and parameter
// reads and their destination writes.
TEST(ProgramCheck, RowNormalisationsReadTheirMaskAndParameters) {
  const NpuConfig c = config();
  const std::string loads =
      "load mem=spad dram=0x0 sram=0x0 x=16 y=4 dram_ystride=16 sram_stride=16\n"
      "load mem=spad dram=0x0 sram=0x100 x=16 y=4 dram_ystride=16 sram_stride=16\n"
      "load mem=spad dram=0x0 sram=0x400 x=288 y=1 push_next\n";
  const std::string softmax =
      "softmax masked=1 src=0x0 dst=0x200 rows=4 cols=16 src_stride=16 dst_stride=16 params=0x400 mask=0x100 "
      "mask_stride=16 pop_prev\n";
  const std::string layernorm =
      "layernorm src=0x0 dst=0x200 rows=4 cols=16 src_stride=16 dst_stride=16 params=0x400 pop_prev\n";
  for (const std::string& op : {softmax, layernorm}) {
    const auto good = programOf(loads + op + "finish\n");
    EXPECT_FALSE(checkSramRaces(good, c)) << checkSramRaces(good, c).message();
    EXPECT_FALSE(checkTokens(good, c)) << checkTokens(good, c).message();
  }
  // A load into the mask (softmax) or the last channel record (layernorm: 16 +
  // 16 x 16 bytes from 0x400) that no token orders after the read.
  const std::string late = "load mem=spad dram=0x0 sram=0x100 x=16 y=1\nfinish\n";
  expectMessage(checkSramRaces(programOf(loads + softmax + late), c),
                {"SRAM race", "(softmax)", "'mask'", "(load)"});
  const std::string lateParams = "load mem=spad dram=0x0 sram=0x500 x=16 y=1\nfinish\n";
  expectMessage(checkSramRaces(programOf(loads + layernorm + lateParams), c),
                {"SRAM race", "(layernorm)", "'params'", "(load)"});
  const std::string lateDst = "load mem=spad dram=0x0 sram=0x200 x=16 y=1\nfinish\n";
  expectMessage(checkSramRaces(programOf(loads + softmax + lateDst), c), {"SRAM race", "(softmax)", "'dst'"});
}

// The compiler builds the queue view once and runs both checks on it: the
// same verdicts and messages as the checks that build their own.
TEST(ProgramCheck, OneViewServesBothChecks) {
  const NpuConfig c = config();
  for (bool pop : {true, false}) {
    const auto program = programOf(withPop(pop));
    const auto view = ProgramView::of(program);
    ASSERT_TRUE(view) << view.error().message();
    EXPECT_EQ(checkSramRaces(*view, c).message(), checkSramRaces(program, c).message());
    EXPECT_EQ(checkTokens(*view, c).message(), checkTokens(program, c).message());
  }
  EXPECT_FALSE(checkSramRaces(*ProgramView::of(programOf(withPop(true))), c));
  EXPECT_TRUE(checkSramRaces(*ProgramView::of(programOf(withPop(false))), c));
  const auto deadlock = programOf("sync q=compute pop_prev\nfinish\n");
  EXPECT_EQ(checkTokens(*ProgramView::of(deadlock), c).message(), checkTokens(deadlock, c).message());
  EXPECT_TRUE(checkTokens(*ProgramView::of(deadlock), c));
  const auto noFinish = ProgramView::of({isa::Instruction{isa::Opcode::Sync, {}, 0, {}}});
  ASSERT_FALSE(noFinish);
  EXPECT_NE(noFinish.error().message().find("no FINISH"), std::string::npos);
}

// The compiler and `ember sim --check` keep the program encoded and check a
// view over it that decodes each instruction as it is read: the same verdicts
// and messages as over the decoded program.
TEST(ProgramCheck, AnEncodedProgramChecksAsItsDecodedForm) {
  const NpuConfig c = config();
  auto encoded = [](const std::vector<isa::Instruction>& program) {
    std::vector<isa::EncodedInstruction> out;
    for (const auto& in : program) out.push_back(*isa::encode(in));
    return out;
  };
  isa::Instruction streamOnly{isa::Opcode::Gemm, {}, 0, {}};  // no earlier preload
  streamOnly[isa::Field::M] = streamOnly[isa::Field::K] = streamOnly[isa::Field::N] = 1;
  const std::vector<std::vector<isa::Instruction>> programs = {programOf(withPop(true)),
                                                               programOf(withPop(false)),
                                                               programOf("sync q=compute pop_prev\nfinish\n"),
                                                               {streamOnly, isa::Instruction{}}};
  for (const auto& program : programs) {
    const auto bytes = encoded(program);
    const auto view = ProgramView::of(bytes);
    ASSERT_TRUE(view) << view.error().message();
    EXPECT_EQ(checkSramRaces(*view, c).message(), checkSramRaces(program, c).message());
    EXPECT_EQ(checkTokens(*view, c).message(), checkTokens(program, c).message());
    EXPECT_EQ(checkWeightBuffers(*view, c).message(), checkWeightBuffers(program, c).message());
    for (size_t i = 0; i + 1 < program.size(); ++i) EXPECT_EQ(view->at(i), program[i]);
  }
  EXPECT_TRUE(checkSramRaces(*ProgramView::of(encoded(programOf(withPop(false)))), c));
  EXPECT_TRUE(checkWeightBuffers(*ProgramView::of(encoded(programs.back())), c));
  // A malformed instruction before FINISH is named by its index.
  auto bad = encoded(programOf(withPop(true)));
  bad[1][1] |= 0x80;  // header bit 15 is reserved
  const auto refused = ProgramView::of(bad);
  ASSERT_FALSE(refused);
  expectMessage(refused.error(), {"instruction 1", "reserved"});
}

TEST(ProgramCheck, EveryOperandFootprintIsChecked) {
  const NpuConfig c = config();
  // Each case: a load writes (no token) what a compute instruction then reads.
  struct Case {
    const char* text;
    const char* operand;
  } cases[] = {
      {"load dram=0 sram=0x1000 x=16 y=1\nlut rows=1 cols=1 src=0 dst=0x20 table=0x1000\n", "'table'"},
      {"load dram=0 sram=0x1010 x=16 y=1\neadd rows=1 cols=1 a=0 b=0 dst=0x20 params=0x1000\n", "'params'"},
      {"load dram=0 sram=0x1000 x=1 y=1\neadd rows=2 cols=1 a=0 a_stride=1 b=0xff0 b_stride=16 dst=0x20 "
       "params=0x2000\n",
       "'b'"},
      {"load dram=0 sram=0x1000 x=1 y=1\npool c=4 kh=3 kw=3 sh=2 sw=2 out_h=2 out_w=2 src=0x0 "
       "src_stride=0x800 "
       "dst=0x4000 dst_stride=8\n",
       "'src'"},
      {"load dram=0 sram=0x100 x=16 y=1\ngemm preload=1 m=1 k=16 n=16 inp=0 wgt=0xf0 wgt_stride=16 acc=0\n",
       "'wgt'"},
      // Padding rows and columns are written too.
      {"load dram=0 sram=0x1000 x=4 y=1 pad_top=1 pad_left=2 pad_right=2 sram_stride=8\n"
       "lut rows=1 cols=1 src=0x1000 dst=0x20 table=0x3000\n",
       "'src'"},
      // Accumulator: gemm with accumulate reads what a load wrote.
      {"load mem=acc dram=0 sram=0x20 x=4 y=1\ngemm preload=1 accumulate=1 m=2 k=1 n=4 inp=0 wgt=0 acc=0x10 "
       "acc_stride=16\n",
       "accumulator entries [0x20, 0x24)"},
      {"load mem=acc dram=0 sram=0x20 x=4 y=1\nvadd rows=1 cols=4 src=0x22 dst=0x100\n", "'src'"},
      {"load mem=acc dram=0 sram=0x20 x=4 y=1\nvclip rows=1 cols=4 dst=0x23 lo=0 hi=1\n", "'dst'"},
  };
  for (const auto& k : cases) {
    const auto program = programOf(std::string(".dram 0x10000\n") + k.text + "finish\n");
    SCOPED_TRACE(k.text);
    expectMessage(checkSramRaces(program, c),
                  {"SRAM race", "instruction 0 (load)", "instruction 1", k.operand});
    // The same pair with a token in between is ordered.
    std::string ordered = k.text;
    ordered.insert(ordered.find('\n'), " push_next");
    ordered.insert(ordered.rfind('\n'), " pop_prev");
    const auto fixed = programOf(std::string(".dram 0x10000\n") + ordered + "finish\n");
    EXPECT_FALSE(checkSramRaces(fixed, c)) << checkSramRaces(fixed, c).message();
  }
  // A store reading the accumulator while a GEMM may still write it.
  expectMessage(checkSramRaces(programOf(".dram 0x1000\ngemm preload=1 m=1 k=1 n=4 acc=0x8\n"
                                         "store mem=acc sram=0 x=16 y=1 dram=0\nfinish\n"),
                               c),
                {"instruction 0 (gemm) on the compute queue writes",
                 "instruction 1 (store) on the store queue reads", "accumulator entries [0x8, 0xc)"});
  // Two reads never race.
  EXPECT_FALSE(checkSramRaces(
      programOf(".dram 0x1000\nstore sram=0 x=16 y=1 dram=0\nlut rows=1 cols=16 src=0 dst=0x100 table=0x200\n"
                "finish\n"),
      c));
}

TEST(ProgramCheck, TransitiveOrderThroughASync) {
  // load -> compute (sync) -> store: the store is ordered after the load.
  const auto program = programOf(
      ".dram 0x1000\nload dram=0 sram=0 x=16 y=1 push_next\nsync q=compute pop_prev push_next\n"
      "store sram=0 dram=0x100 x=16 y=1 pop_prev\nfinish\n");
  EXPECT_FALSE(checkSramRaces(program, config()));
  // Without tokens the store may read bytes before the load has written them.
  const auto racy =
      programOf(".dram 0x1000\nload dram=0 sram=0 x=16 y=1\nstore sram=8 dram=0x100 x=16 y=1\nfinish\n");
  expectMessage(checkSramRaces(racy, config()),
                {"instruction 0 (load)", "instruction 1 (store)", "scratchpad bytes [0x8, 0x10)"});
}

// ---- bounds ----

TEST(ProgramCheck, OutOfRangeAddresses) {
  const NpuConfig c = config();  // 256 KiB scratchpad, 16384 accumulator entries
  expectMessage(checkSramRaces(programOf(".dram 0x1000\nload dram=0 sram=0x3fff8 x=16 y=1\nfinish\n"), c),
                {"instruction 0 (load)", "scratchpad bytes [0x3fff8, 0x40008)", "262144-byte scratchpad"});
  expectMessage(
      checkSramRaces(programOf("gemm preload=1 m=16 k=16 n=16 acc=16380 acc_stride=16\nfinish\n"), c),
      {"instruction 0 (gemm)", "'acc'", "16384-entry accumulator"});
  expectMessage(checkSramRaces(programOf("lut rows=1 cols=1 table=0x3ff80\nfinish\n"), c), {"'table'"});
  expectMessage(checkSramRaces(programOf("eadd rows=1 cols=1 params=0x3fff0\nfinish\n"), c), {"'params'"});
  // The padding counts: 16 data bytes fit, 2 padding columns do not.
  expectMessage(
      checkSramRaces(programOf(".dram 0x100\nload dram=0 sram=0x3fff0 x=16 y=1 pad_right=2\nfinish\n"), c),
      {"[0x3fff0, 0x40002)"});
  EXPECT_FALSE(checkSramRaces(programOf(".dram 0x100\nload dram=0 sram=0x3fff0 x=16 y=1\nfinish\n"), c));
}

// ---- tokens ----

TEST(ProgramCheck, APopWithoutAPushDeadlocks) {
  const NpuConfig c = config();
  const std::string text =
      ".dram 0x100\nload dram=0 sram=0 x=1 y=1 push_next\nsync q=compute pop_prev\n"
      "sync q=compute pop_prev\nfinish\n";
  expectMessage(checkTokens(programOf(text), c),
                {"deadlock", "the compute queue waits at instruction 2 (sync) for a token from load",
                 "pop #2, the program pushes 1 in all"});
  expectMessage(Error::make(runError(assembleText(text), c)),
                {"deadlock", "compute queue waits at instruction 2 (sync) for a token from load"});
}

TEST(ProgramCheck, AFullQueueDeadlocks) {
  NpuConfig c = config();
  c.loadQueueDepth = 1;
  // The load unit waits for compute's token, the next load fills the queue,
  // and fetch never reaches the sync that would send the token.
  const std::string text =
      ".dram 0x100\nload x=1 y=1 pop_next\nload x=1 y=1\nload x=1 y=1\nsync q=compute push_prev\nfinish\n";
  expectMessage(checkTokens(programOf(text), c),
                {"deadlock", "the load queue waits at instruction 0 (load) for a token from compute",
                 "fetch waits at instruction 2 (load) for space in the full load queue (depth 1)"});
  expectMessage(Error::make(runError(assembleText(text), c)), {"deadlock", "fetch waits at instruction 2"});
  // One more entry and fetch reaches the sync.
  c.loadQueueDepth = 2;
  EXPECT_FALSE(checkTokens(programOf(text), c));
  EXPECT_EQ(runError(assembleText(text), c), "");
}

TEST(ProgramCheck, AnUnpoppedPushIsUnbalanced) {
  const NpuConfig c = config();
  expectMessage(
      checkTokens(programOf(".dram 0x100\nload x=1 y=1 push_next\nload x=1 y=1 push_next\n"
                            "sync q=compute pop_prev\nfinish\n"),
                  c),
      {"unbalanced tokens", "load->compute", "keeps 1 token", "first unpopped push by instruction 1 (load)"});
  expectMessage(checkTokens(programOf("sync q=compute push_next\nfinish\n"), c),
                {"compute->store", "instruction 0 (sync)"});
  // Spare buffer-free credits at the end of a double-buffered schedule are fine.
  EXPECT_FALSE(checkTokens(programOf("sync q=compute push_prev\nsync q=store push_prev\nfinish\n"), c));
}

TEST(ProgramCheck, InstructionsAfterFinishDoNotRun) {
  const NpuConfig c = config();
  EXPECT_FALSE(checkTokens(programOf("sync q=compute\nfinish\nsync q=compute pop_prev\n"), c));
  expectMessage(checkTokens({isa::Instruction{isa::Opcode::Sync, {}, 0, {}}}, c), {"no FINISH"});
}

/// A small deterministic generator of token-only programs.
std::string randomTokenProgram(Lcg& rng, int length) {
  static const char* kQueues[] = {"load", "compute", "store"};
  std::string text;
  for (int i = 0; i < length; ++i) {
    const int q = int(rng.next() % 3);
    text += std::string("sync q=") + kQueues[q];
    if (q > 0 && rng.next() % 4 == 0) text += " pop_prev";
    if (q < 2 && rng.next() % 4 == 0) text += " pop_next";
    if (q > 0 && rng.next() % 2 == 0) text += " push_prev";
    if (q < 2 && rng.next() % 2 == 0) text += " push_next";
    text += "\n";
  }
  return text + "finish\n";
}

TEST(ProgramCheck, AgreesWithTheSimulatorOnDeadlock) {
  Lcg rng(1234);
  int deadlocks = 0, completions = 0, fullQueues = 0;
  for (int trial = 0; trial < 300; ++trial) {
    NpuConfig c = config();
    c.loadQueueDepth = 1 + int64_t(rng.next() % 3);
    c.computeQueueDepth = 1 + int64_t(rng.next() % 3);
    c.storeQueueDepth = 1 + int64_t(rng.next() % 3);
    const std::string text = randomTokenProgram(rng, 4 + int(rng.next() % 20));
    const Error check = checkTokens(programOf(text), c);
    const bool checkDeadlock = check && check.message().find("deadlock") != std::string::npos;
    const std::string sim = runError(assembleText(text), c);
    const bool simDeadlock = sim.find("deadlock") != std::string::npos;
    ASSERT_EQ(checkDeadlock, simDeadlock) << text << "check: " << check.message() << "\nsim: " << sim;
    if (simDeadlock) {
      // Both name the same blocked instructions.
      for (const std::string key : {"queue waits at instruction ", "fetch waits at instruction "}) {
        for (size_t at = sim.find(key); at != std::string::npos; at = sim.find(key, at + 1)) {
          const std::string blocked = sim.substr(at, sim.find(' ', at + key.size()) + 1 - at);
          EXPECT_NE(check.message().find(blocked), std::string::npos) << text << check.message() << "\n"
                                                                      << sim;
        }
      }
    }
    deadlocks += simDeadlock;
    fullQueues += sim.find("fetch waits") != std::string::npos;
    completions += !simDeadlock;
  }
  // The generator exercises both outcomes.
  EXPECT_GT(deadlocks, 20);
  EXPECT_GT(completions, 20);
  EXPECT_GT(fullQueues, 10);
}

// ---- allocation ----

TEST(ProgramCheck, Allocation) {
  const NpuConfig c = config();
  const std::vector<SramBuffer> good = {
      {"conv1.input[0]", false, 0x0, 0x1000, 0, 10},
      {"conv1.input[1]", false, 0x1000, 0x1000, 0, 10},  // adjacent addresses
      {"conv2.input[0]", false, 0x0, 0x2000, 11, 20},    // reuses after conv1 ends
      {"conv1.acc", true, 0x0, 0x1000, 0, 20},           // other memory, same address
      {"empty", false, 0x800, 0, 0, 20},                 // no bytes
      {"last", false, 0x3f000, 0x1000, 0, 20},           // ends at the scratchpad's end
  };
  EXPECT_FALSE(checkAllocation(good, c)) << checkAllocation(good, c).message();

  auto bad = good;
  bad.push_back({"conv2.output", false, 0x1800, 0x100, 10, 12});  // live with conv1.input[1] at 10
  expectMessage(checkAllocation(bad, c), {"'conv1.input[1]'", "'conv2.output'", "overlap"});

  expectMessage(checkAllocation({{"big", false, 0x3f000, 0x1001, 0, 1}}, c),
                {"'big'", "does not fit the 262144-byte scratchpad"});
  expectMessage(checkAllocation({{"acc", true, 16000, 400, 0, 1}}, c), {"16384-entry accumulator"});
  expectMessage(checkAllocation({{"backwards", false, 0, 1, 5, 4}}, c), {"ends before it starts"});
  // Overlap detected whichever buffer comes first in the list.
  expectMessage(checkAllocation({{"a", true, 100, 10, 3, 3}, {"b", true, 95, 6, 0, 9}}, c), {"'a'", "'b'"});
}

// ---- the command line ----

TEST(ProgramCheck, SimCheckFlag) {
  const auto dir = std::filesystem::temp_directory_path() / "ember_program_check_test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.s").string(), racy = (dir / "racy.s").string();
  std::ofstream(good) << withPop(true);
  std::ofstream(racy) << withPop(false);
  const std::string cfg = configFile("npu-16x16.yaml");
  EXPECT_EQ(runEmber("sim", {good, "--config", cfg, "--check", "--quiet"}), 0);
  EXPECT_EQ(runEmber("sim", {racy, "--config", cfg, "--quiet"}), 0);  // the simulator alone does not notice
  EXPECT_EQ(runEmber("sim", {racy, "--config", cfg, "--check", "--quiet"}), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember::npu::test
