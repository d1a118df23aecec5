// ceilDiv, alignUp and the whole-file readers and writers of core/support.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "ember/Arithmetic.h"
#include "ember/FileIO.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

TEST(CeilDiv, RoundsUpExactAndInexactQuotients) {
  EXPECT_EQ(ceilDiv(0, 4), 0);
  EXPECT_EQ(ceilDiv(1, 4), 1);
  EXPECT_EQ(ceilDiv(8, 4), 2);
  EXPECT_EQ(ceilDiv(9, 4), 3);
  EXPECT_EQ(ceilDiv(int64_t(1) << 40, int64_t(3)), ((int64_t(1) << 40) + 2) / 3);
  static_assert(ceilDiv(7u, 2u) == 4u);
}

TEST(CeilDiv, WidensToSixtyFourBitsOfTheOperandsSignedness) {
  // Two 32-bit ints whose sum overflows 32 bits.
  EXPECT_EQ(ceilDiv(2147483647, 2), int64_t(1073741824));
  static_assert(std::is_same_v<decltype(ceilDiv(1, 2)), int64_t>);
  static_assert(std::is_same_v<decltype(ceilDiv(uint32_t(1), uint64_t(2))), uint64_t>);
  static_assert(std::is_same_v<decltype(ceilDiv(size_t(1), int64_t(2))), int64_t>);
}

TEST(AlignUp, RoundsToTheNextMultipleInTheValuesType) {
  EXPECT_EQ(alignUp(0, 64), 0);
  EXPECT_EQ(alignUp(1, 64), 64);
  EXPECT_EQ(alignUp(64, 64), 64);
  EXPECT_EQ(alignUp(65, 64), 128);
  EXPECT_EQ(alignUp(int64_t(10), int64_t(6)), 12);  // a panel width, not a power of two
  EXPECT_EQ(alignUp(uint64_t(1) << 40, 3), ((uint64_t(1) << 40) + 2) / 3 * 3);
  static_assert(alignUp(uint64_t(100), 16) == 112u);
  static_assert(std::is_same_v<decltype(alignUp(uint64_t(1), 64)), uint64_t>);
  static_assert(std::is_same_v<decltype(alignUp(int64_t(1), uint64_t(64))), int64_t>);
}

class FileIOTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_support_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(FileIOTest, WriteThenReadGivesTheSameBytes) {
  const std::string bytes("a\0b\nc", 5);
  ASSERT_FALSE(writeFile(path("x.bin"), bytes));
  Expected<std::string> back = readFile(path("x.bin"));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, bytes);
  EXPECT_EQ(fs::file_size(path("x.bin")), 5u);
}

TEST_F(FileIOTest, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  ASSERT_FALSE(writeFile(path("r.json"), "old, longer contents"));
  ASSERT_FALSE(writeFileAtomic(path("r.json"), "new"));
  EXPECT_EQ(*readFile(path("r.json")), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// Two Slurm tasks of one sweep rewrite the same files at the same instant; with
// one shared temporary name, one writer's rename found nothing and it failed.
TEST_F(FileIOTest, ConcurrentAtomicWritersOfOnePathAllSucceed) {
  constexpr int kThreads = 8, kWrites = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i)
        if (Error e = writeFileAtomic(path("shared.yaml"), std::string(100 + t, char('a' + t)))) {
          ADD_FAILURE() << e.message();
          ++failures;
        }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  std::string last = *readFile(path("shared.yaml"));
  ASSERT_GE(last.size(), 100u);
  EXPECT_EQ(last, std::string(last.size(), last[0])) << "a torn file";
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1)
      << "a temporary was left";
}

TEST_F(FileIOTest, ErrorsNameThePath) {
  Expected<std::string> missing = readFile(path("missing"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find(path("missing") + ": cannot open for reading"), std::string::npos);
  Error unwritable = writeFile(path("no/such/dir/f"), "x");
  ASSERT_TRUE(unwritable);
  EXPECT_NE(unwritable.message().find(path("no/such/dir/f") + ": cannot open for writing"),
            std::string::npos);
  Error atomic = writeFileAtomic(path("no/such/dir/f"), "x");
  ASSERT_TRUE(atomic);
  EXPECT_NE(atomic.message().find("no/such/dir/f"), std::string::npos);
}

}  // namespace
}  // namespace ember
