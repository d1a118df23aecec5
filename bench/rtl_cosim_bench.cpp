// rtl_cosim_bench [PROGRAM.s CONFIG.yaml]... [--runs N]
// Co-simulation speed of the simulator with the verilated RTL matrix engine
// (docs/npu/rtl.md, "Benchmark"): simulated cycles per host second (kHz) of
// whole programs in wall and in CPU time, the RTL's own clocked cycles per CPU
// second, and the fast model on the same program for reference; best of N runs,
// plus the peak resident memory. Default programs: a 256^3 GEMM on npu-16x16
// and on npu-32x32.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "ember/npu/Assembler.h"
#include "ember/npu/Simulator.h"

namespace {

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ember::npu;
  std::vector<std::pair<std::string, std::string>> cases;
  int runs = 3;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--help")) {
      std::cout << "usage: rtl_cosim_bench [PROGRAM.s CONFIG.yaml]... [--runs N]\n";
      return 0;
    } else
      positional.push_back(argv[i]);
  }
  for (size_t i = 0; i + 1 < positional.size(); i += 2) cases.push_back({positional[i], positional[i + 1]});
  if (cases.empty())
    cases = {{EMBER_RTL_BENCH_16, std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16.yaml"},
             {EMBER_RTL_BENCH_32, std::string(EMBER_NPU_CONFIG_DIR) + "/npu-32x32.yaml"}};
  std::printf("machine: %s, 1 thread\n", cpuModel().c_str());
  std::printf("%-10s %-24s %9s %10s %8s %8s %15s %15s %10s\n", "config", "program", "cycles", "rtl cycles",
              "wall s", "CPU s", "sim kHz wall", "sim kHz CPU", "rtl kHz");
  for (const auto& [programPath, configPath] : cases) {
    auto bundle = assembleFile(programPath);
    auto config = loadConfig(configPath);
    if (!bundle || !config) {
      std::cerr << "rtl_cosim_bench: " << (!bundle ? bundle.error().message() : config.error().message())
                << "\n";
      return 1;
    }
    // Wall time (stats.hostSeconds) and process CPU time: the machine may be shared.
    auto timeRun = [&](MatrixEngineModel model, SimStats& best, double& bestCpu) {
      NpuConfig c = *config;
      c.matrixEngineModel = model;
      for (int r = 0; r < runs; ++r) {
        DramImage dram = makeDram(*bundle);
        std::mt19937 rng(1);
        for (auto& b : dram.bytes) b = uint8_t(rng());
        const std::clock_t cpu0 = std::clock();
        auto s = simulate(*bundle, c, dram);
        const double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
        if (!s) {
          std::cerr << "rtl_cosim_bench: " << s.error().message() << "\n";
          return false;
        }
        if (r == 0 || s->hostSeconds < best.hostSeconds) best = *s;
        if (r == 0 || cpu < bestCpu) bestCpu = cpu;
      }
      return true;
    };
    SimStats rtl, fast;
    double rtlCpu = 0, fastCpu = 0;
    if (!timeRun(MatrixEngineModel::Rtl, rtl, rtlCpu) || !timeRun(MatrixEngineModel::Fast, fast, fastCpu))
      return 1;
    if (rtl.cycles != fast.cycles)
      std::printf("warning: cycle counts differ (rtl %llu, fast %llu)\n", (unsigned long long)rtl.cycles,
                  (unsigned long long)fast.cycles);
    std::string name = programPath.substr(programPath.find_last_of('/') + 1);
    std::printf("%-10s %-24s %9llu %10llu %8.3f %8.3f %15.1f %15.1f %10.1f\n", config->name.c_str(),
                name.c_str(), (unsigned long long)rtl.cycles, (unsigned long long)rtl.matrixEngineCycles,
                rtl.hostSeconds, rtlCpu, double(rtl.cycles) / rtl.hostSeconds / 1e3,
                double(rtl.cycles) / rtlCpu / 1e3, double(rtl.matrixEngineCycles) / rtlCpu / 1e3);
    std::printf("%-10s %-24s fast model on the same program: %.0f kHz (CPU)\n", "", "",
                double(fast.cycles) / fastCpu / 1e3);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak resident memory: %.1f MB\n", double(usage.ru_maxrss) / 1024.0);
  return 0;
}
