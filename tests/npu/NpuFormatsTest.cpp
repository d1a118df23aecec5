// The ISA encoding, the assembly round trip, the config reader, the bundle
// loader and every illegal-program case.
#include <filesystem>
#include <fstream>

#include "EmberTool.h"
#include "NpuTestUtil.h"

namespace ember::npu::test {
namespace {

using isa::Field;
using isa::Instruction;
using isa::Opcode;

// ---- ISA ----

TEST(NpuIsa, RandomInstructionsRoundTripThroughBinaryAndText) {
  Lcg rng(42);
  for (const auto& spec : isa::allOpcodes())
    for (int trial = 0; trial < 200; ++trial) {
      Instruction in;
      in.opcode = spec.opcode;
      in.layer = 0;
      for (const auto& f : spec.fields) {
        const uint64_t span = uint64_t(isa::fieldMax(f) - isa::fieldMin(f)) + 1;
        in[f.field] = isa::fieldMin(f) + int64_t((uint64_t(rng.next()) << 32 | rng.next()) % span);
      }
      const isa::Queue q = in.queue();
      in.deps.popPrev = q != isa::Queue::Load && rng.next() % 2;
      in.deps.pushPrev = q != isa::Queue::Load && rng.next() % 2;
      in.deps.popNext = q != isa::Queue::Store && rng.next() % 2;
      in.deps.pushNext = q != isa::Queue::Store && rng.next() % 2;
      auto bytes = isa::encode(in);
      ASSERT_TRUE(bytes) << bytes.error().message();
      auto back = isa::decode(*bytes);
      ASSERT_TRUE(back) << back.error().message();
      EXPECT_EQ(*back, in) << formatInstruction(in);
      // Text: one instruction plus finish.
      auto bundle = assemble(formatInstruction(in) + "\nfinish\n", "t.s");
      ASSERT_TRUE(bundle) << bundle.error().message() << "\n" << formatInstruction(in);
      EXPECT_EQ(bundle->program[0], *bytes);
    }
}

TEST(NpuIsa, EncodeRejectsValuesThatDoNotFit) {
  Instruction in;
  in.opcode = Opcode::Gemm;
  in[Field::M] = 70000;
  auto e = isa::encode(in);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("'m'"), std::string::npos);
  in[Field::M] = 1;
  in[Field::Lo32] = 5;  // not a gemm field
  EXPECT_FALSE(isa::encode(in));
}

TEST(NpuIsa, DecodeRejectsMalformedInstructions) {
  isa::EncodedInstruction bytes{};
  EXPECT_FALSE(isa::decode(bytes));  // opcode 0
  bytes[0] = 200;
  EXPECT_FALSE(isa::decode(bytes));  // unknown opcode
  bytes[0] = uint8_t(Opcode::Finish);
  EXPECT_TRUE(isa::decode(bytes));
  bytes[20] = 1;  // bits outside finish's (empty) field list
  EXPECT_FALSE(isa::decode(bytes));
  bytes[20] = 0;
  bytes[1] = 0x80;  // reserved header bit 15
  EXPECT_FALSE(isa::decode(bytes));
  bytes[0] = uint8_t(Opcode::Load);
  bytes[1] = 0x01;  // pop_prev on the load queue: no previous queue
  auto e = isa::decode(bytes);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("no previous queue"), std::string::npos);
}

TEST(NpuAssembly, EveryTestProgramRoundTripsByteIdentically) {
  for (const auto& entry : std::filesystem::directory_iterator(EMBER_NPU_TEST_DIR)) {
    if (entry.path().extension() != ".s") continue;
    auto b = assembleFile(entry.path().string());
    ASSERT_TRUE(b) << b.error().message();
    const auto bytes = serializeBundle(*b);
    auto text = disassemble(*b);
    ASSERT_TRUE(text) << text.error().message();
    auto again = assemble(*text, "disassembled");
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(serializeBundle(*again), bytes) << entry.path();
  }
}

TEST(NpuAssembly, ErrorsNameTheLine) {
  auto expectError = [](const std::string& text, const std::string& needle) {
    auto b = assemble(text, "p.s");
    ASSERT_FALSE(b) << text;
    EXPECT_NE(b.error().message().find(needle), std::string::npos) << b.error().message();
  };
  expectError("finish\nlod x=1\n", "p.s:2: unknown mnemonic 'lod'");
  expectError("gemm m=1 q=3\nfinish\n", "has no field 'q'");
  expectError("gemm m=99999\nfinish\n", "does not fit");
  expectError("load push_prev x=1 y=1\nfinish\n", "no previous queue");
  expectError(".input A f32 [2] @0\nfinish\n", "unknown type");
  expectError(".input A i8 [2] @0x10\n.dram 0x8\nfinish\n", "exceeds the bundle's DRAM size");
  expectError("sync q=load\n", "no FINISH");
  expectError(".bogus 1\nfinish\n", "unknown directive");
}

// ---- config ----

TEST(NpuConfigFile, ShippedConfigsLoad) {
  const NpuConfig c16 = config("npu-16x16.yaml");
  const NpuConfig defaults;
  EXPECT_EQ(c16.hash(), defaults.hash());
  EXPECT_EQ(c16.scratchpadBytes, 256 * 1024);
  EXPECT_EQ(c16.accumulatorBytes, 64 * 1024);
  EXPECT_EQ(c16.dramBytesPerCycle, 16);
  EXPECT_EQ(c16.dramLatencyCycles, 100);
  const NpuConfig c32 = config("npu-32x32.yaml"), c64 = config("npu-64x64.yaml");
  EXPECT_EQ(c32.rows, 32);
  EXPECT_EQ(c64.cols, 64);
  EXPECT_EQ(c64.scratchpadBytes, 1024 * 1024);
  EXPECT_EQ(c64.accumulatorBytes, 256 * 1024);
  EXPECT_NE(c32.hash(), c16.hash());
}

TEST(NpuConfigFile, ErrorsNameKeyAndLine) {
  auto expectError = [](const std::string& yaml, const std::string& a, const std::string& b) {
    auto c = parseConfig(yaml, "cfg.yaml");
    ASSERT_FALSE(c) << yaml;
    EXPECT_NE(c.error().message().find(a), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find(b), std::string::npos) << c.error().message();
  };
  expectError("name: x\nmatrix_engine:\n  rowz: 16\n", "cfg.yaml:3:", "'matrix_engine.rowz': unknown key");
  expectError("scratchpad:\n  banks: four\n", "cfg.yaml:2:", "expected an integer");
  expectError("matrix_engine:\n  rows: 0\n", "'matrix_engine.rows'", "out of range");
  expectError("clock_ghz: fast\n", "cfg.yaml:1:", "expected a number");
  expectError("matrix_engine:\n  dataflow: diagonal\n", "'matrix_engine.dataflow'", "weight_stationary");
  expectError("dram: 16\n", "'dram'", "mapping");
  expectError("energy_pj:\n  mac: -1\n", "'energy_pj.mac'", "out of range");
  expectError("scratchpad:\n  size_kib: 256\n  banks: 3\n", "'scratchpad.banks'", "do not divide");
  expectError("a: [1, 2\n", "cfg.yaml:", "invalid YAML");
  expectError("clock_ghz: 1\nclock_ghz: 2\n", "cfg.yaml:2:", "duplicate");
  // yaml-cpp reads a NUL followed by a letter as an escape (NUL N gave a lone 0x85 byte).
  expectError(std::string("name: a\0Nb\n", 11), "cfg.yaml:1:", "character U+0000");
  expectError("name: caf\xe9\n", "cfg.yaml:1:", "not valid UTF-8 (byte 0xe9)");
}

TEST(NpuConfigFile, MismatchedConfigHashIsRefused) {
  Bundle b = assembleText("finish\n");
  b.configHash = config("npu-32x32.yaml").hash();
  EXPECT_NE(runError(b, config()).find("config hash"), std::string::npos);
  EXPECT_EQ(runError(b, config("npu-32x32.yaml")), "");
}

// ---- bundle loader ----

std::vector<uint8_t> sampleBundleBytes() {
  Bundle b = assembleText(
      ".input A i8 [4,4] @0x0 scale=0.5 zp=1\n.output C i32 [4] @0x40\n.weights @0x20\n.bytes 0102030405\n"
      ".layer l1\nload mem=spad x=16 y=1 push_next\n.nolayer\nsync q=compute pop_prev\nfinish\n");
  return serializeBundle(b);
}

std::string parseError(const std::vector<uint8_t>& bytes) {
  auto b = parseBundle(bytes, "b.bin");
  return b ? "" : b.error().message();
}

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + size_t(i)] = uint8_t(x >> (8 * i));
}

TEST(NpuBundle, RoundTripsThroughBytes) {
  const auto bytes = sampleBundleBytes();
  auto b = parseBundle(bytes, "b.bin");
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(serializeBundle(*b), bytes);
  EXPECT_EQ(b->symbols[0].scale, 0.5f);
  EXPECT_EQ(b->weights.size(), 5u);
  EXPECT_EQ(b->layers, std::vector<std::string>{"l1"});
}

TEST(NpuBundle, EveryTruncationIsRefused) {
  const auto bytes = sampleBundleBytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string e = parseError(std::vector<uint8_t>(bytes.begin(), bytes.begin() + int64_t(n)));
    EXPECT_FALSE(e.empty()) << "prefix " << n;
  }
  EXPECT_NE(parseError(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1)).find("truncated"),
            std::string::npos);
}

TEST(NpuBundle, BadHeadersAreRefused) {
  auto bytes = sampleBundleBytes();
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(parseError(bad).find("bad magic"), std::string::npos);
  bad = bytes;
  put32(bad, 8, 99);
  EXPECT_NE(parseError(bad).find("format version 99"), std::string::npos);
  bad = bytes;
  put32(bad, 12, 7);
  EXPECT_NE(parseError(bad).find("ISA version 7"), std::string::npos);
  bad = bytes;
  put32(bad, 32, 0xffffffffu);  // instruction count
  EXPECT_NE(parseError(bad).find("too large"), std::string::npos);
  bad = bytes;
  put32(bad, 32, 1000);
  EXPECT_NE(parseError(bad).find("truncated"), std::string::npos);
  bad = bytes;
  put32(bad, 56, 0xfffffff0u);  // weight size
  EXPECT_NE(parseError(bad).find("truncated"), std::string::npos);
  bad = bytes;
  bad.push_back(0);
  EXPECT_NE(parseError(bad).find("trailing"), std::string::npos);
  bad = bytes;
  put32(bad, 24, 16);  // DRAM size smaller than the symbols
  EXPECT_NE(parseError(bad).find("exceeds the bundle's DRAM size"), std::string::npos);
}

TEST(NpuBundle, HugeSymbolShapesAreRefused) {
  Bundle b = assembleText(".input A i8 [4] @0x0\nfinish\n");
  b.symbols[0].shape = {int64_t(1) << 31, int64_t(1) << 31};
  EXPECT_FALSE(parseError(serializeBundle(b)).empty());
  b.symbols[0].shape = {-4};
  EXPECT_FALSE(parseError(serializeBundle(b)).empty());
}

TEST(NpuBundle, RandomCorruptionNeverCrashes) {
  const auto bytes = sampleBundleBytes();
  Lcg rng(9);
  for (int trial = 0; trial < 3000; ++trial) {
    auto bad = bytes;
    for (int flips = 0; flips < 1 + trial % 4; ++flips)
      bad[rng.next() % bad.size()] ^= uint8_t(1 + rng.next() % 255);
    auto b = parseBundle(bad, "fuzz");
    if (b && b->dramBytes <= (1u << 20)) {  // the CLI checks the size against the config first
      DramImage dram = makeDram(*b);
      (void)simulate(*b, config(), dram);  // either runs or reports an error
    }
  }
}

TEST(NpuBundle, MalformedInstructionNamesItsIndex) {
  auto bytes = sampleBundleBytes();
  bytes[kBundleHeaderBytes + 32 + 1] |= 0x80;  // reserved header bit 15 of instruction 1
  const std::string e = parseError(bytes);
  EXPECT_NE(e.find("instruction 1"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed"), std::string::npos) << e;
}

// ---- illegal programs ----

void expectRunError(const std::string& program, const std::vector<std::string>& needles,
                    const NpuConfig& c = config()) {
  Bundle b = assembleText(program);
  const std::string e = runError(b, c);
  ASSERT_FALSE(e.empty()) << program;
  for (const auto& n : needles) EXPECT_NE(e.find(n), std::string::npos) << e;
}

TEST(NpuIllegal, ScratchpadOutOfRange) {
  expectRunError(".dram 0x10000\nsync q=compute\nload x=256 y=2 sram=0x3ff00 sram_stride=256\nfinish\n",
                 {"instruction 1 (load)", "scratchpad address out of range"});
  expectRunError("gemm preload=1 m=16 k=16 n=16 inp=0x3fff0 inp_stride=16\nfinish\n",
                 {"instruction 0 (gemm)", "scratchpad"});
}

TEST(NpuIllegal, DramOutOfRange) {
  expectRunError(".dram 0x1000\nload dram=0xf00 x=256 y=2 dram_ystride=256 sram_stride=256\nfinish\n",
                 {"instruction 0 (load)", "DRAM address out of range"});
  expectRunError(".dram 0x1000\nstore dram=0x0 x=16 y=2 dram_ystride=0x1000\nfinish\n",
                 {"instruction 0 (store)", "DRAM"});
}

TEST(NpuIllegal, AccumulatorOverrun) {
  expectRunError("gemm preload=1 m=16 k=16 n=16 acc=16380 acc_stride=16\nfinish\n",
                 {"instruction 0 (gemm)", "accumulator overrun"});
  expectRunError(".dram 0x10000\nload mem=acc x=16 y=2 sram=16380 sram_stride=16\nfinish\n",
                 {"instruction 0 (load)", "accumulator overrun"});
  expectRunError("requant rows=2000 cols=16 src_stride=16\nfinish\n", {"accumulator overrun"});
}

TEST(NpuIllegal, MalformedAtRunTime) {
  expectRunError("gemm preload=1 m=4 k=32 n=16\nfinish\n", {"instruction 0 (gemm)", "exceeds the 16x16"});
  expectRunError("sync q=compute\ngemm m=4 k=16 n=16\nfinish\n", {"instruction 1", "preloaded"});
  expectRunError(".dram 0x100\nload y=1\nfinish\n", {"instruction 0", "malformed"});
  expectRunError("requant rows=1 cols=1 shift=40\nfinish\n", {"shift 40"});
  expectRunError("pool c=1 out_h=1 out_w=1 kh=1 kw=1 sh=0 sw=1\nfinish\n", {"'sh'"});
}

TEST(NpuIllegal, DeadlockOnTokens) {
  expectRunError("gemm preload=1 m=1 k=1 n=1 pop_prev\nfinish\n",
                 {"deadlock", "compute queue waits at instruction 0 (gemm) for a token from load"});
  expectRunError(".dram 0x100\nload x=1 y=1 pop_next\nstore x=1 y=1 pop_prev\nfinish\n",
                 {"deadlock", "load queue waits at instruction 0", "store queue waits at instruction 1"});
}

TEST(NpuIllegal, DeadlockOnAFullQueue) {
  NpuConfig c = config();
  c.loadQueueDepth = 1;
  // The load unit waits for compute's token, the next load fills the queue, and
  // fetch never reaches the sync that would send the token.
  expectRunError(
      ".dram 0x100\nload x=1 y=1 pop_next\nload x=1 y=1\nload x=1 y=1\nsync q=compute push_prev\nfinish\n",
      {"deadlock", "fetch waits at instruction 2", "full load queue"}, c);
}

TEST(NpuIllegal, TheSimulatorRecoversAfterErrors) {
  expectRunError("gemm preload=1 m=1 k=1 n=1 pop_prev\nfinish\n", {"deadlock"});
  Bundle b = assembleTestFile("gemm_64x48x32.s");
  DramImage dram = makeDram(b);
  randomInputs(b, dram, 2);
  const SimStats s = run(b, config(), dram);
  EXPECT_EQ(s.macs, 64u * 48 * 32);
}

// The RTL matrix engine has Verilator builds for 16x16 and 32x32 only (and
// none at all when Verilator was not found): a clear error, not a crash.
TEST(NpuIllegal, RtlEngineIsReportedMissing) {
  NpuConfig c = config("npu-64x64.yaml");
  c.matrixEngineModel = MatrixEngineModel::Rtl;
  EXPECT_NE(runError(assembleText("finish\n"), c).find("rtl"), std::string::npos);
}

// ---- commands ----

TEST(NpuCommands, AsmDisasmSimFromFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_npu_cmd_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bundle = (dir / "conv.bin").string(), text = (dir / "conv.s").string();
  EXPECT_EQ(
      runEmber("asm", {testFile("conv_im2col.s"), "-o", bundle, "--config", configFile("npu-16x16.yaml")}),
      0);
  EXPECT_EQ(runEmber("disasm", {bundle, "-o", text}), 0);
  const std::string again = (dir / "again.bin").string();
  EXPECT_EQ(runEmber("asm", {text, "-o", again}), 0);
  auto read = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read(bundle), read(again));
  const std::string stats = (dir / "stats.json").string(), trace = (dir / "trace.json").string();
  EXPECT_EQ(runEmber("sim",
                     {bundle, "--config", configFile("npu-16x16.yaml"), "--random-inputs", "--seed", "3",
                      "--output-dir", (dir / "out").string(), "--stats", stats, "--trace", trace, "--quiet"}),
            0);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "Y.npy"));
  EXPECT_NE(read(stats).find("\"mac_utilization\""), std::string::npos);
  EXPECT_NE(read(trace).find("traceEvents"), std::string::npos);
  EXPECT_EQ(runEmber("sim", {bundle, "--quiet"}), 1);  // missing inputs
  EXPECT_EQ(runEmber("sim", {bundle, "--bogus"}), 2);
  EXPECT_EQ(runEmber("sim", {"--help"}), 0);
  EXPECT_EQ(runEmber("asm", {"--help"}), 0);
  EXPECT_EQ(runEmber("disasm", {"--help"}), 0);
  EXPECT_EQ(runEmber("disasm", {(dir / "missing.bin").string()}), 1);
  EXPECT_EQ(runEmber("sim", {bundle, "--config", (dir / "missing.yaml").string()}), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember::npu::test
