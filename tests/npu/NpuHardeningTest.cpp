// Bad NPU input read from files, as `ember sim|asm|disasm` read it: every
// error names the file and the config key, symbol, layer or instruction index
// it concerns, and claimed sizes are checked before anything is allocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "NpuTestUtil.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Bundle.h"
#include "ember/npu/Config.h"

namespace ember::npu::test {
namespace {

namespace fs = std::filesystem;

class NpuHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("ember_npu_hardening_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    return write(name, std::string(bytes.begin(), bytes.end()));
  }

  fs::path dir_;
};

/// The bytes of a small valid bundle: two instructions, one layer, two symbols, 4 weight bytes.
std::vector<uint8_t> sampleBytes() {
  return serializeBundle(
      assembleText(".input x i8 [2,8] @0x0\n.output y i32 [2,4] @0x40\n.weights @0x80\n"
                   ".bytes 01020304\n.layer conv1\nsync q=load\nfinish\n"));
}

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + size_t(i)] = uint8_t(x >> (8 * i));
}
void put64(std::vector<uint8_t>& v, size_t at, uint64_t x) {
  for (int i = 0; i < 8; ++i) v[at + size_t(i)] = uint8_t(x >> (8 * i));
}

void expectError(const Error& e, const std::vector<std::string>& fragments) {
  ASSERT_TRUE(e) << "no error";
  for (const auto& f : fragments) EXPECT_NE(e.message().find(f), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find('\n'), std::string::npos) << "not one line: " << e.message();
}

template <typename T>
void expectError(const Expected<T>& r, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(r.hasValue()) << "accepted";
  expectError(r.error(), fragments);
}

TEST_F(NpuHardening, CorruptBundleFilesNameTheFile) {
  const auto good = sampleBytes();
  ASSERT_TRUE(readBundle(write("good.bundle", good)));
  expectError(readBundle(write("garbage.bundle", std::string("not a bundle at all"))),
              {"garbage.bundle", "bad magic"});
  expectError(readBundle(write("short.bundle", std::vector<uint8_t>(good.begin(), good.end() - 3))),
              {"short.bundle", "truncated"});
  expectError(readBundle((dir_ / "missing.bundle").string()), {"missing.bundle"});
}

TEST_F(NpuHardening, WrongVersionsNameTheFileAndVersion) {
  auto bad = sampleBytes();
  put32(bad, 8, 2);
  expectError(readBundle(write("v2.bundle", bad)), {"v2.bundle", "format version 2"});
  bad = sampleBytes();
  put32(bad, 12, 9);
  expectError(readBundle(write("isa9.bundle", bad)), {"isa9.bundle", "ISA version 9"});
}

TEST_F(NpuHardening, HugeClaimedSizesAreRefusedBeforeAllocation) {
  // Each header field claims far more than the file holds; the loader must
  // refuse without trying to allocate it (ASan would report a huge allocation).
  auto bad = sampleBytes();
  put32(bad, 32, uint32_t(kMaxInstructions));  // 2^26 instructions = 2 GiB
  expectError(readBundle(write("insns.bundle", bad)), {"insns.bundle", "truncated", "the program"});
  bad = sampleBytes();
  put64(bad, 56, uint64_t(1) << 40);  // a 1 TiB weight image
  expectError(readBundle(write("weights.bundle", bad)), {"weights.bundle", "truncated", "weight image"});
  bad = sampleBytes();
  put64(bad, 24, ~uint64_t(0));  // DRAM size
  expectError(readBundle(write("dram.bundle", bad)), {"dram.bundle", "DRAM size"});
  bad = sampleBytes();
  put32(bad, 40, 0xffffu);  // symbol count
  expectError(readBundle(write("symbols.bundle", bad)), {"symbols.bundle"});
}

TEST_F(NpuHardening, OverflowingSymbolShapesNameTheSymbol) {
  Bundle b = assembleText(".input big i32 [4] @0x0\nfinish\n");
  b.symbols[0].shape = {int64_t(1) << 32, int64_t(1) << 32, int64_t(1) << 32};  // product overflows 64 bits
  expectError(readBundle(write("shape.bundle", serializeBundle(b))), {"shape.bundle", "symbol 'big'"});
  // The assembler computes the DRAM extent from shapes it has not validated yet.
  expectError(assemble(".input big i32 [4294967296,4294967296,4294967296] @0x0\nfinish\n", "ovf.s", ""),
              {"ovf.s", "symbol 'big'"});
}

TEST_F(NpuHardening, MalformedInstructionNamesFileAndIndex) {
  auto bad = sampleBytes();
  bad[kBundleHeaderBytes + 32 + 1] |= 0x80;  // reserved header bit 15 of instruction 1
  expectError(readBundle(write("insn.bundle", bad)), {"insn.bundle", "instruction 1", "malformed"});
  Bundle b = assembleText(".layer a\nsync q=load\nfinish\n");
  b.program[0][2] = 9;  // layer tag 9 of 1
  expectError(readBundle(write("tag.bundle", serializeBundle(b))),
              {"tag.bundle", "instruction 0", "layer tag 9"});
}

TEST_F(NpuHardening, NamesThatCannotRoundTripAreRefused) {
  Bundle b = assembleText(".layer a\nsync q=load\n.layer b\nfinish\n");
  b.layers[1] = "a";
  expectError(readBundle(write("dup.bundle", serializeBundle(b))), {"dup.bundle", "layer 1", "duplicate"});
  b.layers[1] = "a#b";  // '#' starts an assembly comment
  expectError(readBundle(write("hash.bundle", serializeBundle(b))), {"hash.bundle", "layer 1"});
}

TEST_F(NpuHardening, NonFiniteSymbolScalesAreRefused) {
  Bundle b = assembleText(".input x i8 [4] @0x0 scale=0.5\nfinish\n");
  for (float scale :
       {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    b.symbols[0].scale = scale;
    expectError(readBundle(write("scale.bundle", serializeBundle(b))),
                {"scale.bundle", "symbol 'x'", "scale"});
  }
}

TEST_F(NpuHardening, BadConfigKeysNameFileKeyAndLine) {
  expectError(loadConfig(write("typo.yaml", "name: t\nmatrix_engine:\n  rowz: 16\n")),
              {"typo.yaml:3", "matrix_engine.rowz", "unknown key"});
  expectError(loadConfig(write("type.yaml", "scratchpad:\n  banks: many\n")),
              {"type.yaml:2", "scratchpad.banks", "expected an integer"});
  expectError(loadConfig(write("range.yaml", "dram:\n  size_mib: 99999999999999999999\n")),
              {"range.yaml:2", "dram.size_mib"});
  expectError(loadConfig(write("nested.yaml", std::string(5000, '[') + std::string(5000, ']'))),
              {"nested.yaml"});
  expectError(loadConfig(write("list.yaml", "- 1\n- 2\n")), {"list.yaml:1", "mapping"});
}

TEST_F(NpuHardening, AssemblyErrorsNameFileAndLine) {
  expectError(assembleFile(write("bad.s", "sync q=load\nfrobnicate x=1\nfinish\n")),
              {"bad.s:2", "frobnicate"});
  expectError(assembleFile(write("field.s", "gemm m=70000\nfinish\n")), {"field.s:1", "'m'"});
}

TEST_F(NpuHardening, IncbinReadsOnlyRegularFiles) {
  write("w.bin", std::string("\x01\x02\x03", 3));
  auto ok = assembleFile(write("ok.s", ".incbin w.bin\nfinish\n"));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->weights, (std::vector<uint8_t>{1, 2, 3}));
  // A device would never end; text without a file has no directory to read from.
  expectError(assembleFile(write("dev.s", ".incbin /dev/zero\nfinish\n")), {"dev.s:1", "not a regular file"});
  expectError(assemble(".incbin w.bin\nfinish\n", "text.s", ""), {"text.s:1", ".incbin is not allowed"});
}

}  // namespace
}  // namespace ember::npu::test
