// npu_sim_bench [GEMM.s] [--config CFG.yaml] [--runs N]
// Simulated MAC per host second of the NPU simulator's fast model on the
// 1024^3 int8 GEMM example (functional math included), the median of N runs in
// one process, and the peak resident memory (getrusage). Prints the machine and
// the ratio to a rough single-core int8 MAC peak.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "ember/npu/Assembler.h"
#include "ember/npu/Simulator.h"

namespace {

std::string cpuInfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string program = EMBER_NPU_GEMM_EXAMPLE,
              configPath = std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16.yaml";
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc)
      configPath = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--help") {
      std::cout << "usage: npu_sim_bench [GEMM.s] [--config CFG.yaml] [--runs N]\n";
      return 0;
    } else
      program = a;
  }
  auto bundle = ember::npu::assembleFile(program);
  if (!bundle) {
    std::cerr << "npu_sim_bench: " << bundle.error().message() << "\n";
    return 1;
  }
  auto config = ember::npu::loadConfig(configPath);
  if (!config) {
    std::cerr << "npu_sim_bench: " << config.error().message() << "\n";
    return 1;
  }
  std::vector<double> seconds;
  ember::npu::SimStats last;
  for (int r = 0; r < runs; ++r) {
    ember::npu::DramImage dram = ember::npu::makeDram(*bundle);
    std::mt19937_64 rng(1);
    for (const auto& s : bundle->symbols)
      if (s.direction == ember::npu::Symbol::Direction::Input)
        for (uint64_t i = 0; i < s.sizeInBytes(); ++i) dram.bytes[s.dramOffset + i] = uint8_t(rng());
    const auto start = std::chrono::steady_clock::now();
    auto stats = ember::npu::simulate(*bundle, *config, dram);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!stats) {
      std::cerr << "npu_sim_bench: " << stats.error().message() << "\n";
      return 1;
    }
    last = *stats;
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double macPerSecond = double(last.macs) / median;
  const std::string flags = cpuInfo("flags");
  const int macsPerCycle = flags.find("avx512_vnni") != std::string::npos ? 64
                           : flags.find("avx2") != std::string::npos      ? 32
                                                                          : 16;
  const double ghz = std::atof(cpuInfo("cpu MHz").c_str()) / 1000.0;
  std::cout << "machine: " << cpuInfo("model name") << " @ " << ghz << " GHz (single thread)\n";
  std::cout << "program: " << program << " on " << config->name << "\n";
  std::cout << "simulated: " << last.cycles << " cycles, " << last.macs << " MACs, mac_utilization "
            << last.macUtilization << "\n";
  std::cout << "host seconds per run:";
  for (double s : seconds) std::cout << " " << s;
  std::cout << "\nmedian host seconds: " << median << "\n";
  std::cout << "simulated MAC per host second (median of " << runs << "): " << macPerSecond
            << (macPerSecond >= 1e9 ? "  (goal >= 1e9: met)" : "  (goal >= 1e9: NOT met)") << "\n";
  std::cout << "peak resident memory: " << double(usage.ru_maxrss) / 1024.0 << " MiB"
            << (usage.ru_maxrss <= 1024 * 1024 ? "  (goal <= 1 GB: met)" : "  (goal <= 1 GB: NOT met)")
            << "\n";
  if (ghz > 0)
    std::cout << "ratio to a rough int8 peak of " << macsPerCycle << " MAC/cycle x " << ghz
              << " GHz: " << macPerSecond / (macsPerCycle * ghz * 1e9) << "\n";
  return 0;
}
