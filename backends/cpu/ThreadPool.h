// A small persistent thread pool for the cpu backend's kernels. The caller
// takes part in every parallel loop. Each thread first claims the items of its
// own contiguous share of the loop, then those left in the other shares;
// workers spin briefly between loops (a model runs many short kernels back to
// back) and then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::cpu {

/// The pool size a model gets: EMBER_CPU_THREADS, else EMBER_THREADS, else 1
/// (values outside 1..1024 are ignored). One rule for the JIT and AOT runtime.
int threadsFromEnvironment();

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  /// Calls body(item, thread) for every item in [0, items); returns when all
  /// are done. Thread t runs the items of the t-th contiguous share first, so
  /// consecutive loops over the same rows keep them on the same core (its
  /// cache holds what it wrote); a thread that runs out takes the items left
  /// in the other shares. Not reentrant.
  template <typename Body>
  void parallelFor(int64_t items, Body&& body) {
    if (items <= 0) return;
    if (workers_.empty() || items == 1) {
      for (int64_t i = 0; i < items; ++i) body(i, 0);
      return;
    }
    run(
        items, [](void* ctx, int64_t item, int thread) { (*static_cast<Body*>(ctx))(item, thread); }, &body);
  }

 private:
  using Trampoline = void (*)(void* ctx, int64_t item, int thread);
  void run(int64_t items, Trampoline fn, void* ctx);
  void workerLoop(int index);
  void work(int thread);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  /// [63:32] generation of the current loop, bit 31 closed (no worker may
  /// join), [30:0] workers inside it. The caller waits only for workers that
  /// joined: one not yet woken (descheduled on a busy machine) is not waited
  /// for, the caller takes its items instead. Fields are rewritten only while
  /// the previous loop is closed and drained.
  std::atomic<uint64_t> state_{kClosed};
  static constexpr uint64_t kClosed = uint64_t(1) << 31;
  static constexpr uint64_t kInflightMask = kClosed - 1;
  /// One thread's share of the loop: items [next, end) not yet claimed. On
  /// its own cache line, so the owner claims without contention until
  /// another thread takes what it has left.
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Share[]> shares_;
  std::atomic<bool> stop_{false};
  Trampoline fn_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace ember::cpu
