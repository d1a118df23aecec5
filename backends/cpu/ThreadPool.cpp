#include "ThreadPool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>

namespace ember::cpu {

namespace {
// Pauses before a worker sleeps: 50-400 microseconds by the CPU's pause
// latency (about 400 on the AMD EPYC VMs), enough to span the gap between two
// layers, so a worker does not sleep inside a model run.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int threads) : shares_(std::make_unique<Share[]>(size_t(std::max(threads, 1)))) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    state_.fetch_add(uint64_t(1) << 32);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work(int thread) {
  const int threads = size();
  for (int k = 0; k < threads; ++k) {
    Share& share = shares_[size_t((thread + k) % threads)];
    for (int64_t i; (i = share.next.fetch_add(1, std::memory_order_relaxed)) < share.end;)
      fn_(ctx_, i, thread);
  }
}

void ThreadPool::run(int64_t items, Trampoline fn, void* ctx) {
  // The previous loop is closed and drained: no worker reads these now.
  const uint64_t generation = (state_.load() >> 32) + 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int threads = size();
    for (int t = 0; t < threads; ++t) {
      shares_[size_t(t)].next.store(items * t / threads, std::memory_order_relaxed);
      shares_[size_t(t)].end = items * (t + 1) / threads;
    }
    fn_ = fn;
    ctx_ = ctx;
    state_.store(generation << 32);  // open, nobody inside
  }
  wake_.notify_all();
  work(0);
  // Close the loop once the workers that joined it are done.
  for (;;) {
    uint64_t st = state_.load();
    if ((st & kInflightMask) == 0 && state_.compare_exchange_weak(st, st | kClosed)) break;
    _mm_pause();
  }
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while ((state_.load() >> 32) == seen && ++spins < kSpinIterations) _mm_pause();
    if ((state_.load() >> 32) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return (state_.load() >> 32) != seen; });
    }
    uint64_t st = state_.load();
    seen = st >> 32;
    if (stop_) return;
    // Join the loop `seen` unless the caller has already closed it.
    bool joined = false;
    while (!joined && (st >> 32) == seen && !(st & kClosed))
      joined = state_.compare_exchange_weak(st, st + 1);
    if (!joined) continue;
    work(index);
    state_.fetch_sub(1);
  }
}

int threadsFromEnvironment() {
  for (const char* name : {"EMBER_CPU_THREADS", "EMBER_THREADS"})
    if (const char* v = std::getenv(name)) {
      int n = std::atoi(v);
      if (n >= 1 && n <= 1024) return n;
    }
  return 1;
}

}  // namespace ember::cpu
