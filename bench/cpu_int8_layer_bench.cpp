// The cpu backend's int8 convolution kernels on the layer shapes of resnet18,
// resnet50 and mobilenet_v2 (KernelInt8.h), with the ISA the backend would
// choose (EMBER_CPU_INT8_ISA / EMBER_CPU_NO_VNNI force a lower one). Prints,
// per layer, the fastest of R calls in this thread's CPU time (time-slicing
// by other processes does not count) and the MAC rate. With --threads N > 1
// the calls run on a pool of N threads and are timed by the wall clock (the
// fastest call still), which shows how each kernel's split scales.
//   cpu_int8_layer_bench [--runs R] [--threads N] [FILTER]   (FILTER: a substring of the layer names)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/KernelInt8.h"
#include "backends/cpu/ThreadPool.h"

namespace {

using namespace ember::cpu;

/// This thread's CPU time, or the wall clock when the calls run on several threads.
bool gWallClock = false;
double threadCpuMs() {
  timespec t{};
  clock_gettime(gWallClock ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

struct Layer {
  const char* name;
  int64_t h, w, c, o, k, stride, pad;
  bool depthwise;
};

const Layer kLayers[] = {
    {"stem 224 c3 7x7 s2", 224, 224, 3, 64, 7, 2, 3, false},
    {"r18 56 c64 3x3", 56, 56, 64, 64, 3, 1, 1, false},
    {"r18 28 c128 3x3", 28, 28, 128, 128, 3, 1, 1, false},
    {"r18 14 c256 3x3", 14, 14, 256, 256, 3, 1, 1, false},
    {"r18 7 c512 3x3", 7, 7, 512, 512, 3, 1, 1, false},
    {"mb stem 224 c3 3x3 s2", 224, 224, 3, 32, 3, 2, 1, false},
    {"mb 56 c24->144 1x1", 56, 56, 24, 144, 1, 1, 0, false},
    {"mb 56 c144->24 1x1", 56, 56, 144, 24, 1, 1, 0, false},
    {"mb 112 c32->16 1x1", 112, 112, 32, 16, 1, 1, 0, false},
    {"mb 112 c16->96 1x1", 112, 112, 16, 96, 1, 1, 0, false},
    {"r50 56 c64->256 1x1", 56, 56, 64, 256, 1, 1, 0, false},
    {"r50 14 c1024->256 1x1", 14, 14, 1024, 256, 1, 1, 0, false},
    {"dw 112 c32 3x3", 112, 112, 32, 32, 3, 1, 1, true},
    {"dw 112 c96 3x3 s2", 112, 112, 96, 96, 3, 2, 1, true},
    {"dw 56 c144 3x3", 56, 56, 144, 144, 3, 1, 1, true},
    {"dw 56 c128 3x3", 56, 56, 128, 128, 3, 1, 1, true},  // c144 without its 16-channel tail
    {"dw 14 c576 3x3", 14, 14, 576, 576, 3, 1, 1, true},
    {"dw 7 c960 3x3", 7, 7, 960, 960, 3, 1, 1, true},
};

/// The fastest of `runs` calls of one layer (i8 codes in and out, zero point -128).
double bestMs(const Layer& l, int runs, ThreadPool& pool, std::mt19937& rng) {
  const int64_t oh = (l.h + 2 * l.pad - l.k) / l.stride + 1, ow = (l.w + 2 * l.pad - l.k) / l.stride + 1;
  const int64_t taps = l.k * l.k, k = l.depthwise ? taps : taps * l.c;
  std::vector<uint8_t> input(size_t(l.h * l.w * l.c)), output(size_t(oh * ow * l.o));
  for (auto& v : input) v = uint8_t(rng());
  std::vector<int8_t> filter(size_t(l.o * k));
  for (auto& v : filter) v = int8_t(rng());
  const std::vector<int32_t> bias(size_t(l.o), 1000);
  const std::vector<float> scales(size_t(l.o), 0.003f);
  std::vector<uint8_t> block(l.depthwise ? int8DepthwiseWeightBytes(taps, l.c) : int8ConvWeightBytes(k, l.o));
  if (l.depthwise)
    packInt8Depthwise(filter.data(), bias.data(), scales.data(), 0.02f, 0.05f, taps, l.c, block.data());
  else
    packInt8Conv(filter.data(), bias.data(), scales.data(), 0.02f, 0.05f, 0, k, l.o, block.data());
  double best = 1e30;
  for (int run = 0; run < runs; ++run) {
    const double start = threadCpuMs();
    if (l.depthwise) {
      Int8DepthwiseCall d;
      d.input = input.data();
      d.output = output.data();
      d.weights = block.data();
      d.n = 1, d.h = l.h, d.w = l.w, d.c = l.c, d.oh = oh, d.ow = ow, d.kh = d.kw = l.k;
      d.sh = d.sw = l.stride, d.pt = d.pl = l.pad;
      d.inputSigned = 1, d.inputZero = -128, d.outputZero = -128, d.lo = -128, d.hi = 127;
      int8Depthwise(d, pool);
    } else {
      Int8ConvCall c;
      c.input = input.data();
      c.output = output.data();
      c.weights = block.data();
      c.n = 1, c.h = l.h, c.w = l.w, c.c = l.c, c.oh = oh, c.ow = ow, c.kh = c.kw = l.k, c.o = l.o;
      c.sh = c.sw = l.stride, c.pt = c.pl = l.pad;
      c.inputSigned = 1, c.zu = 0, c.outputZero = -128, c.lo = -128, c.hi = 127, c.outputSigned = 1;
      int8Conv(c, pool);
    }
    best = std::min(best, threadCpuMs() - start);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 15, threads = 1;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::clamp(std::atoi(argv[++i]), 1, 256);
    } else if (argv[i][0] == '-') {
      std::printf("usage: cpu_int8_layer_bench [--runs R] [--threads N] [FILTER]\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    } else {
      filter = argv[i];
    }
  }
  gWallClock = threads > 1;
  ThreadPool pool(threads);
  std::mt19937 rng(1);
  std::printf("int8 kernels: %s; %d thread(s); fastest of %d calls, %s\n", int8KernelName(), threads, runs,
              gWallClock ? "wall clock" : "thread CPU time");
  for (const Layer& l : kLayers) {
    if (!filter.empty() && std::string(l.name).find(filter) == std::string::npos) continue;
    const double ms = bestMs(l, runs, pool, rng);
    const int64_t oh = (l.h + 2 * l.pad - l.k) / l.stride + 1, ow = (l.w + 2 * l.pad - l.k) / l.stride + 1;
    const double macs = double(oh * ow * l.o) * double(l.depthwise ? l.k * l.k : l.k * l.k * l.c);
    std::printf("%-24s %8.3f ms  %6.1f GMAC/s\n", l.name, ms, macs / ms / 1e6);
  }
  return 0;
}
