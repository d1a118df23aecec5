// rtl_random: the nightly random-program co-simulation (scripts/nightly.sh rtl).
//   rtl_random CONFIG.yaml PROGRAMS [FIRST_SEED]
// Runs PROGRAMS valid programs (seeds FIRST_SEED...) on the fast model and the
// RTL matrix engine, plus one illegal mutation of each kind per 100 programs,
// and prints one line of figures. Exit status 1 on any mismatch.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "RandomCosim.h"

int main(int argc, char** argv) {
  using namespace ember::npu;
  using namespace ember::npu::test;
  if (argc < 3) {
    std::cerr << "usage: rtl_random CONFIG.yaml PROGRAMS [FIRST_SEED]\n";
    return 2;
  }
  auto config = loadConfig(argv[1]);
  if (!config) {
    std::cerr << "rtl_random: " << config.error().message() << "\n";
    return 2;
  }
  const uint64_t programs = std::strtoull(argv[2], nullptr, 10);
  const uint64_t first = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const auto start = std::chrono::steady_clock::now();
  uint64_t mismatches = 0, cycles = 0, illegal = 0, refused = 0;
  for (uint64_t seed = first; seed < first + programs; ++seed) {
    const Verdict v = checkValidProgram(*config, seed);
    cycles += v.cycles;
    if (!v.ok) {
      ++mismatches;
      std::cerr << "MISMATCH " << v.message << "\n";
    }
    if (seed % 100 == 0)
      for (int m = 1; m < kNumMutations; ++m) {
        ++illegal;
        const Verdict bad = checkIllegalProgram(*config, seed, Mutation(m));
        if (bad.ok)
          ++refused;
        else
          std::cerr << "ACCEPTED " << bad.message << "\n";
      }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "rtl_random " << config->name << ": " << programs << " programs (seeds " << first << "-"
            << first + programs - 1 << "), " << mismatches << " mismatches, " << cycles << " cycles; illegal "
            << refused << " of " << illegal << " refused; " << int(seconds) << " s\n";
  return mismatches == 0 && refused == illegal ? 0 : 1;
}
