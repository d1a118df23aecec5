// The cpu backend's thread pool on its own (backends/cpu/ThreadPool.h): every
// item runs exactly once whatever the thread count, a loop's writes are
// visible to the caller when parallelFor returns, and many short loops back to
// back (a model's kernels) neither lose items nor race. Small enough to build
// and run under ThreadSanitizer in CI (scripts/tsan-subset.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "ThreadPool.h"

namespace ember::cpu {
namespace {

TEST(ThreadPool, EveryItemRunsOnceOnAValidThread) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t items : {0, 1, 2, 3, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(items));
      std::atomic<int> badThread{0};
      pool.parallelFor(items, [&](int64_t i, int thread) {
        hits[size_t(i)].fetch_add(1);
        if (thread < 0 || thread >= threads) badThread.fetch_add(1);
      });
      for (int64_t i = 0; i < items; ++i)
        ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " " << items << " " << i;
      EXPECT_EQ(badThread.load(), 0);
    }
  }
}

TEST(ThreadPool, ManyShortLoopsPublishTheirPlainWrites) {
  // Plain (non-atomic) writes to disjoint elements, read by the caller after
  // each loop: correct only if parallelFor's return orders them.
  ThreadPool pool(4);
  std::vector<int64_t> out(64);
  int64_t expected = 0, got = 0;
  for (int loop = 0; loop < 3000; ++loop) {
    const int64_t items = 2 + loop % 61;
    pool.parallelFor(items, [&](int64_t i, int) { out[size_t(i)] = i * loop; });
    for (int64_t i = 0; i < items; ++i) {
      got += out[size_t(i)];
      expected += i * loop;
    }
  }
  EXPECT_EQ(got, expected);
}

TEST(ThreadPool, PerThreadPartialsGiveTheSameTotalAtEveryThreadCount) {
  // The cpu kernels' pattern: each thread owns a slot and the caller reduces
  // the slots in a fixed order afterwards.
  auto total = [](int threads) {
    ThreadPool pool(threads);
    std::vector<uint64_t> partial(size_t(threads), 0);
    pool.parallelFor(10000,
                     [&](int64_t i, int thread) { partial[size_t(thread)] += uint64_t(i) * 2654435761u; });
    uint64_t sum = 0;
    for (uint64_t p : partial) sum += p;
    return sum;
  };
  const uint64_t one = total(1);
  EXPECT_EQ(total(2), one);
  EXPECT_EQ(total(4), one);
}

TEST(ThreadPool, PoolsComeAndGoWithAndWithoutWork) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(1 + round % 4);
    if (round % 2) {
      std::atomic<int64_t> sum{0};
      pool.parallelFor(100, [&](int64_t i, int) { sum.fetch_add(i); });
      EXPECT_EQ(sum.load(), 4950);
    }
  }
}

}  // namespace
}  // namespace ember::cpu
