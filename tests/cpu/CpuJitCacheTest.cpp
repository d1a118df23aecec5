// The cpu backend's on-disk JIT cache (backends/cpu/JitDiskCache.h): a miss
// writes an entry, the same program hits it (no LLVM IR is generated: the
// dumped IR text stays empty), a changed program misses, and a corrupt entry
// or one of another Ember build is ignored with a one-line warning and
// replaced. Every loaded object is run: it must call its kernel step with the
// host address bound at load time and perform its copy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backends/cpu/Jit.h"
#include "backends/cpu/JitDiskCache.h"

namespace {

namespace fs = std::filesystem;
using ember::cpu::JitOp;

std::vector<const void*> calls;
void recordStep(const void* step, uint8_t** /*regions*/, void* /*context*/) { calls.push_back(step); }

class CpuJitCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_jit_cache_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::setenv("EMBER_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("EMBER_NO_CACHE");
    ::setenv("EMBER_CPU_DUMP_IR", "1", 1);  // a compiled (missed) program has IR text, a loaded one none
    runtime_.runStep = reinterpret_cast<void*>(&recordStep);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    ::unsetenv("EMBER_CACHE_DIR");
    ::unsetenv("EMBER_CPU_DUMP_IR");
  }

  /// A kernel step then a copy of `bytes` bytes from the I/O region to the activations.
  std::vector<JitOp> program(uint64_t bytes) {
    JitOp kernel;
    kernel.step = &marker_;
    JitOp copy;
    copy.kind = JitOp::Kind::Copy;
    copy.src = {ember::cpu::kIO, 0};
    copy.dst = {ember::cpu::kActivations, 0};
    copy.bytes = bytes;
    return {kernel, copy};
  }

  /// Compiles, runs, checks the run; returns whether it was a cache hit.
  bool compileAndRun(const std::vector<JitOp>& ops, const std::string& key) {
    auto code = ember::cpu::jitCompile("cache_test", ops, runtime_, key);
    EXPECT_TRUE(code) << code.error().message();
    if (!code) return false;
    std::vector<uint8_t> io(64), activations(64, 0);
    for (size_t i = 0; i < io.size(); ++i) io[i] = uint8_t(i + 1);
    uint8_t* regions[ember::cpu::kNumRegions] = {nullptr, io.data(), activations.data(), nullptr};
    calls.clear();
    (*code)->entry()(regions, nullptr);
    EXPECT_EQ(calls, std::vector<const void*>{&marker_});
    const uint64_t bytes = ops[1].bytes;
    for (size_t i = 0; i < activations.size(); ++i) EXPECT_EQ(activations[i], i < bytes ? io[i] : 0) << i;
    return (*code)->irText().empty();
  }

  std::vector<fs::path> entries() const {
    std::vector<fs::path> files;
    if (fs::exists(dir_))
      for (const auto& e : fs::directory_iterator(dir_))
        if (e.path().filename() != ".last-trim") files.push_back(e.path());  // the trim stamp is no entry
    return files;
  }

  fs::path dir_;
  ember::cpu::JitRuntime runtime_;
  int marker_ = 0;
};

TEST_F(CpuJitCacheTest, MissWritesHitLoadsChangedProgramMisses) {
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_TRUE(compileAndRun(program(16), "ir A"));
  EXPECT_FALSE(compileAndRun(program(24), "ir A"));  // the ops changed
  EXPECT_FALSE(compileAndRun(program(16), "ir B"));  // the IR changed
  EXPECT_EQ(entries().size(), 3u);
  EXPECT_TRUE(compileAndRun(program(24), "ir A"));
}

TEST_F(CpuJitCacheTest, CorruptEntryIsIgnoredWithAWarningAndReplaced) {
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry = entries()[0];
  for (const std::string& garbage : {std::string("not an entry"), std::string("EMBERJIT\x05")}) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << garbage;
    testing::internal::CaptureStderr();
    EXPECT_FALSE(compileAndRun(program(16), "ir A"));
    const std::string warning = testing::internal::GetCapturedStderr();
    EXPECT_NE(warning.find("ignoring JIT cache entry"), std::string::npos) << warning;
    EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
    EXPECT_TRUE(compileAndRun(program(16), "ir A"));  // rewritten
  }
  // Truncate the object of a valid entry.
  fs::resize_file(entry, fs::file_size(entry) - 100);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("truncated"), std::string::npos);
}

TEST_F(CpuJitCacheTest, EntryOfAnotherEmberBuildIsIgnored) {
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  const fs::path entry = entries().at(0);
  std::ifstream in(entry, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::string version = ember::cpu::jitCacheVersionLine();
  const size_t at = bytes.find(version);
  ASSERT_NE(at, std::string::npos);
  bytes[at + version.size() - 1] ^= 1;  // same length, another build stamp
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("another Ember build"), std::string::npos) << warning;
  EXPECT_TRUE(compileAndRun(program(16), "ir A"));
}

TEST_F(CpuJitCacheTest, NoCacheWritesNothing) {
  ::setenv("EMBER_NO_CACHE", "1", 1);
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  ::unsetenv("EMBER_NO_CACHE");
  EXPECT_TRUE(entries().empty());
}

TEST_F(CpuJitCacheTest, VersionLineNamesTheBinaryThatHoldsTheCodeGenerator) {
  // A rebuilt binary (another size or modification time) is another build.
  const std::string version = ember::cpu::jitCacheVersionLine();
  EXPECT_NE(version.find(" binary /"), std::string::npos) << version;
  EXPECT_EQ(version.find('\n'), std::string::npos) << version;
}

TEST_F(CpuJitCacheTest, TrimRemovesTheLeastRecentlyUsedEntriesDownToThreeQuartersOfTheLimit) {
  fs::create_directories(dir_);
  const auto now = fs::file_time_type::clock::now();
  // Five 1000-byte entries, entry i last used i minutes ago, and a writer's
  // temporary that must stay.
  for (int i = 0; i < 5; ++i) {
    const fs::path entry = dir_ / ("entry" + std::to_string(i) + ".jit");
    std::ofstream(entry, std::ios::binary) << std::string(1000, 'x');
    fs::last_write_time(entry, now - std::chrono::minutes(i));
  }
  std::ofstream(dir_ / "entry9.jit.tmp.1.0", std::ios::binary) << std::string(5000, 'x');
  ember::cpu::trimJitCache(dir_.string(), 5000);  // at the limit: nothing goes
  EXPECT_EQ(entries().size(), 6u);
  ember::cpu::trimJitCache(dir_.string(), 4000);  // over it: down to 3000 bytes
  std::vector<std::string> left;
  for (const auto& e : entries()) left.push_back(e.filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"entry0.jit", "entry1.jit", "entry2.jit", "entry9.jit.tmp.1.0"}));
}

TEST_F(CpuJitCacheTest, AHitMarksTheEntryRecentlyUsed) {
  EXPECT_FALSE(compileAndRun(program(16), "ir A"));
  const fs::path entry = entries().at(0);
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(entry, old);
  EXPECT_TRUE(compileAndRun(program(16), "ir A"));
  EXPECT_GT(fs::last_write_time(entry), old + std::chrono::minutes(59));
}

TEST_F(CpuJitCacheTest, ATrimIsClaimedAtMostOnceAMinute) {
  fs::create_directories(dir_);
  EXPECT_TRUE(ember::cpu::claimJitCacheTrim(dir_.string()));  // no stamp yet
  EXPECT_FALSE(ember::cpu::claimJitCacheTrim(dir_.string()));
  fs::last_write_time(dir_ / ".last-trim", fs::file_time_type::clock::now() - std::chrono::minutes(2));
  EXPECT_TRUE(ember::cpu::claimJitCacheTrim(dir_.string()));
  EXPECT_FALSE(ember::cpu::claimJitCacheTrim(dir_.string()));
}

}  // namespace
