// Seeded random NPU programs (docs/testing.md, "Random NPU programs"): valid
// ones that use every opcode with random shapes, dependency tokens and
// double-buffered SRAM, and illegal mutations of them that the static
// checkers (ember/npu/ProgramCheck.h) must refuse. The generator knows
// nothing of the simulator: it writes assembly from the ISA's rules.
#pragma once

#include <cstdint>
#include <string>

#include "ember/npu/Config.h"

namespace ember::npu::test {

/// The ways a valid program is broken, each one a checker must see.
enum class Mutation {
  None,
  DropConsumerPop,     ///< a compute tile no longer waits for its load: tokens unbalanced
  DropProducerPush,    ///< a load tile never announces its data: deadlock
  DropBufferCredit,    ///< a load refills a buffer compute may still read: SRAM race
  OutOfBoundsStore,    ///< a store reads past the scratchpad's end
  WrongReuseShape,     ///< a gemm streams weights of another k x n than were preloaded
  MissingWeightBuffer  ///< a gemm names weight buffer 1 on a one-buffer config
};
constexpr int kNumMutations = 7;
const char* mutationName(Mutation m);
/// The checker that must refuse a mutation: "tokens", "races" or "weights".
const char* expectedChecker(Mutation m);

struct RandomProgram {
  std::string text;  ///< assembly (docs/npu/isa.md)
  int tiles = 0;     ///< double-buffered tiles in the program
  Mutation mutation = Mutation::None;
  /// False when the mutation needs what this program lacks (e.g. a race
  /// needs three tiles); the program is then valid and unmutated.
  bool mutated = false;
};

/// A valid program for `config` (its rows, cols, dataflow and SRAM sizes)
/// from `seed`, or, with `mutation`, that program broken in that way.
RandomProgram randomProgram(const NpuConfig& config, uint64_t seed, Mutation mutation = Mutation::None);

}  // namespace ember::npu::test
