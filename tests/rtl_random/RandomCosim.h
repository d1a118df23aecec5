// One random program through the static checkers, then on the fast matrix
// engine and on the verilated RTL (matrix_engine: rtl): the DRAM images must
// be identical byte for byte, and the cycle counts, total and per
// instruction, equal. Shared by the CI test and the nightly driver.
#pragma once

#include <cstdint>
#include <string>

#include "RandomProgram.h"
#include "ember/npu/Config.h"

namespace ember::npu::test {

struct Verdict {
  bool ok = true;
  std::string message;  ///< what differed (empty when ok)
  uint64_t cycles = 0;  ///< the fast model's cycles of a valid program
};

/// The program of `seed` on `config` (both dataflows, alternating with the
/// seed): the checkers accept it and both engines agree.
Verdict checkValidProgram(const NpuConfig& config, uint64_t seed);

/// The program of `seed` broken by `mutation`: its expected checker refuses it.
Verdict checkIllegalProgram(const NpuConfig& config, uint64_t seed, Mutation mutation);

}  // namespace ember::npu::test
