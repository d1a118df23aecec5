// GEMM throughput of the cpu backend's kernel against OpenBLAS and the
// machine's FMA peak, measured side by side in one run.
//
//   cpu_gemm_bench [--threads N] [--runs R] [SIZE...]
//
// For each square size (default 256 512 1024 2048) it prints the median of R
// timed runs (after a warm-up) in GFLOP/s for Ember (packing of the constant
// B excluded, as at model compile time) and OpenBLAS's cblas_sgemm (with
// OPENBLAS_NUM_THREADS set to the same count), and the FMA peak measured with
// independent AVX2 (and, where the CPU has it, AVX-512) FMA chains on every thread.
#include <immintrin.h>

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_ps() placeholders; nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/Arena.h"
#include "backends/cpu/CpuKernels.h"
#include "backends/cpu/ThreadPool.h"

#ifdef EMBER_HAVE_OPENBLAS
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int threads);
}
#endif

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double medianSeconds(int runs, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__attribute__((target("avx2,fma"))) double fmaChainsAvx2(int64_t iterations) {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) double fmaChainsAvx512(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

/// GFLOP/s of FMA chains on `threads` threads (2 flops per lane per FMA).
double fmaPeak(int threads, bool avx512, int runs) {
  const int64_t iterations = 20'000'000;
  const int chains = avx512 ? 12 : 10, lanes = avx512 ? 16 : 8;
  volatile double sink = 0;
  double seconds = medianSeconds(runs, [&] {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back(
          [&] { sink = sink + (avx512 ? fmaChainsAvx512(iterations) : fmaChainsAvx2(iterations)); });
    for (auto& w : workers) w.join();
  });
  return 2.0 * lanes * chains * double(iterations) * threads / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, runs = 10;
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (arg == "--runs" && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (arg == "--help") {
      std::printf("usage: cpu_gemm_bench [--threads N] [--runs R] [SIZE...]\n");
      return 0;
    } else
      sizes.push_back(std::atoll(arg.c_str()));
  }
  if (sizes.empty()) sizes = {256, 512, 1024, 2048};
  if (!ember::cpu::hostHasAvx2Fma()) {
    std::fprintf(stderr, "cpu_gemm_bench: this CPU lacks AVX2/FMA\n");
    return 1;
  }
  const ember::cpu::GemmArch arch = ember::cpu::chooseGemmArch();
  ember::cpu::ThreadPool pool(threads);
#ifdef EMBER_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
  double peak2 = fmaPeak(threads, false, 5);
  double peak512 = ember::cpu::hostHasAvx512() ? fmaPeak(threads, true, 5) : 0;
  std::printf("threads %d, micro-kernel %dx%d (%s), runs %d (median)\n", threads, arch.mr, arch.nr,
              arch.avx512 ? "AVX-512" : "AVX2+FMA", runs);
  std::printf("FMA peak: AVX2 %.1f GFLOP/s", peak2);
  if (peak512 > 0) std::printf(", AVX-512 %.1f GFLOP/s", peak512);
  // ember/peak is against the peak of the ISA the micro-kernel uses: with
  // EMBER_CPU_NO_AVX512=1 on an AVX-512 machine, the AVX2 peak.
  const double peak = arch.avx512 ? peak512 : peak2;
  std::printf("\n%8s %14s %16s %12s %22s\n", "size", "ember GFLOP/s", "openblas GFLOP/s", "ember/blas",
              arch.avx512 ? "ember/peak (AVX-512)" : "ember/peak (AVX2)");
  for (int64_t n : sizes) {
    // The matrices live where a model's do: in regions (Arena.h, transparent huge pages).
    ember::cpu::Arena aArena(uint64_t(n * n) * 4), bArena(uint64_t(n * n) * 4), cArena(uint64_t(n * n) * 4),
        packedArena(uint64_t(ember::cpu::packedBSize(arch, n, n)) * 4);
    std::span<float> a(reinterpret_cast<float*>(aArena.data()), size_t(n * n)),
        b(reinterpret_cast<float*>(bArena.data()), size_t(n * n)),
        c(reinterpret_cast<float*>(cArena.data()), size_t(n * n));
    float* packed = reinterpret_cast<float*>(packedArena.data());
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    ember::cpu::packB(arch, b.data(), n, false, n, n, packed);
    ember::cpu::GemmCall call;
    call.m = call.n = call.k = n;
    call.a.data = a.data();
    call.a.lda = n;
    call.packedB = packed;
    call.c = c.data();
    call.ldc = n;
    const double flops = 2.0 * double(n) * double(n) * double(n);
    double ember = flops / medianSeconds(runs, [&] { ember::cpu::gemm(arch, call, pool); }) / 1e9;
    double blas = 0;
#ifdef EMBER_HAVE_OPENBLAS
    ember::cpu::Arena c2Arena(uint64_t(n * n) * 4);
    std::span<float> c2(reinterpret_cast<float*>(c2Arena.data()), size_t(n * n));
    blas = flops /
           medianSeconds(runs,
                         [&] {
                           cblas_sgemm(101, 111, 111, int(n), int(n), int(n), 1.0f, a.data(), int(n),
                                       b.data(), int(n), 0.0f, c2.data(), int(n));
                         }) /
           1e9;
    double err = 0;
    for (size_t i = 0; i < c.size(); ++i) err = std::max(err, double(std::fabs(c[i] - c2[i])));
    if (err > 1e-2)
      std::fprintf(stderr, "warning: ember and OpenBLAS differ by %g at %lld\n", err, (long long)n);
#endif
    std::printf("%8lld %14.1f %16.1f %12.2f %21.0f%%\n", (long long)n, ember, blas,
                blas > 0 ? ember / blas : 0.0, 100.0 * ember / peak);
  }
  return 0;
}
