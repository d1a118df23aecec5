// The threads' work split of the GEMM and the direct convolution
// (KernelGemmBlocks.h): even splits of M and N scored by a cost model.
#include "KernelGemmBlocks.h"

#include <algorithm>

namespace ember::cpu {
namespace {

/// The time the pool needs for these blocks when they are handed out as
/// ThreadPool::parallelFor does: thread t first runs the items of its own
/// contiguous share, then takes those left in the next shares. (Handing
/// items to whichever thread is free first instead would model a pool that
/// does not exist: M = 196, N = 1024 on 2 threads was cut into 144- and
/// 52-row blocks, which that model balances, but thread 0's share held both
/// 144-row items: the layer ran 1.6x faster on 2 threads than on 1 instead
/// of 1.9x.)
double poolMakespan(const GemmCostModel& model, int64_t m, int64_t n, int64_t mc, int64_t nc, int threads) {
  constexpr int kMaxSlots = 64;
  const int slots = std::clamp(threads, 1, kMaxSlots);
  const int64_t nBlocks = ceilDiv(n, nc), items = ceilDiv(m, mc) * nBlocks;
  int64_t next[kMaxSlots], end[kMaxSlots];
  double time[kMaxSlots];
  bool done[kMaxSlots];
  for (int t = 0; t < slots; ++t) {
    next[t] = items * t / slots;
    end[t] = items * (t + 1) / slots;
    time[t] = 0;
    done[t] = false;
  }
  for (int finished = 0; finished < slots;) {
    int t = -1;  // the thread that is free first claims next
    for (int u = 0; u < slots; ++u)
      if (!done[u] && (t < 0 || time[u] < time[t])) t = u;
    int share = -1;
    for (int k = 0; k < slots && share < 0; ++k)
      if (next[(t + k) % slots] < end[(t + k) % slots]) share = (t + k) % slots;
    if (share < 0) {
      done[t] = true;
      ++finished;
      continue;
    }
    const int64_t item = next[share]++, i = (item / nBlocks) * mc, j = (item % nBlocks) * nc;
    time[t] += model.item(std::min(mc, m - i), std::min(nc, n - j));
  }
  return *std::max_element(time, time + slots);
}

/// MC and NC for `threads`: on one thread the cache sizes; on more, the split
/// of M and N whose items (even splits of M and of N, up to the cache sizes)
/// finish first (poolMakespan), unless there are plenty of cache blocks. Splitting M is preferred where
/// it balances, because every column block packs A again: layers with a small M (7x7 stages) split N into as
/// few blocks as keep the threads busy.
GemmBlocks chooseGemmBlocks(const GemmCostModel& model, int64_t m, int64_t n, int threads) {
  const int mr = model.mr, nr = model.nr;
  GemmBlocks best{std::max<int64_t>(mr, (kGemmMC / mr) * mr), alignUp(std::min<int64_t>(kGemmNC, n), nr), 0,
                  0};
  // Pieces per dimension: from what the cache block needs to a few per thread.
  // With 8 cache blocks per thread or more, the load balances as it is.
  const int64_t mFirst = ceilDiv(m, best.mc), nFirst = ceilDiv(n, best.nc);
  if (threads > 1 && mFirst * nFirst < 8 * threads) {
    double bestTime = poolMakespan(model, m, n, best.mc, best.nc, threads);
    for (int64_t mPieces = mFirst; mPieces <= mFirst + 2 * threads; ++mPieces) {
      const int64_t mc = alignUp(ceilDiv(m, mPieces), mr);
      if (mPieces > mFirst && mc >= alignUp(ceilDiv(m, mPieces - 1), mr)) continue;  // same split
      for (int64_t nPieces = nFirst; nPieces <= nFirst + 2 * threads; ++nPieces) {
        const int64_t nc = alignUp(ceilDiv(n, nPieces), nr);
        if (nPieces > nFirst && nc >= alignUp(ceilDiv(n, nPieces - 1), nr)) continue;
        const double time = poolMakespan(model, m, n, mc, nc, threads);
        if (time < bestTime * 0.999) {
          bestTime = time;
          best.mc = mc;
          best.nc = nc;
        }
      }
    }
  }
  best.mBlocks = ceilDiv(m, best.mc);
  best.nBlocks = ceilDiv(n, best.nc);
  return best;
}

}  // namespace

/// chooseGemmBlocks' answers, per thread: a model asks for the same few
/// shapes on every run, and the search takes microseconds.
GemmBlocks cachedGemmBlocks(const GemmCostModel& model, int64_t m, int64_t n, int threads) {
  struct Entry {
    int64_t m = -1, n = -1;
    int threads = 0, mr = 0, nr = 0;
    double aPerRow = 0;
    GemmBlocks blocks{};
  };
  thread_local Entry cache[256];
  const uint64_t hash = uint64_t(m) * 0x9E3779B97F4A7C15ULL ^ uint64_t(n) * 0xC2B2AE3D27D4EB4FULL ^
                        uint64_t(threads) * 0x165667B19E3779F9ULL ^ uint64_t(model.mr * 64 + model.nr) ^
                        uint64_t(model.aPerRow * 1024) * 0x27D4EB2F165667C5ULL;
  Entry& e = cache[(hash >> 40) & 255];
  if (e.m != m || e.n != n || e.threads != threads || e.mr != model.mr || e.nr != model.nr ||
      e.aPerRow != model.aPerRow)
    e = Entry{m, n, threads, model.mr, model.nr, model.aPerRow, chooseGemmBlocks(model, m, n, threads)};
  return e.blocks;
}

}  // namespace ember::cpu
