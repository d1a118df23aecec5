// The NPU hardware configuration (docs/npu/config.md), read from YAML. One file
// feeds the compiler, the simulator and the RTL's parameters.
#pragma once

#include <cstdint>
#include <string>

#include "ember/Error.h"

namespace ember::npu {

enum class Dataflow : uint8_t { WeightStationary, OutputStationary };
enum class MatrixEngineModel : uint8_t { Fast, Rtl };
/// Where vector instructions run: on the compute queue behind the gemms
/// (shared, ISA v1/v2) or on their own in-order queue beside it (separate,
/// ISA v3 `vq`), so a requant overlaps the next tile's gemms.
enum class VectorQueue : uint8_t { Shared, Separate };

struct EnergyTable {
  double macPj = 0.2;              ///< one int8 multiply-accumulate
  double dramBytePj = 40.0;        ///< one byte read from or written to DRAM
  double scratchpadBytePj = 0.6;   ///< one byte read from or written to the scratchpad
  double accumulatorBytePj = 0.8;  ///< one byte read from or written to the accumulator
  double vectorOpPj = 0.3;         ///< one vector-unit element operation
  double instructionPj = 10.0;     ///< fetching and decoding one instruction
  double staticPjPerCycle = 20.0;  ///< leakage and clock tree, per cycle
};

/// Every parameter of the NPU. The defaults are npu-16x16.yaml; a key absent
/// from a file keeps its default.
struct NpuConfig {
  std::string name = "npu-16x16";
  double clockGhz = 1.0;
  // Matrix engine.
  int64_t rows = 16;
  int64_t cols = 16;
  Dataflow dataflow = Dataflow::WeightStationary;
  MatrixEngineModel matrixEngineModel = MatrixEngineModel::Fast;
  /// Weight buffers in the array (1 or 2). With 2 the next gemm's preload
  /// runs while the current gemm streams (ISA v2 gemm field `wbuf`).
  int64_t weightBuffers = 1;
  /// The array starts a gemm from a bias row in the accumulator instead of
  /// zero (ISA v3 gemm `bias_init`), so no vadd or bias DMA is needed.
  bool biasInit = false;
  // Scratchpad (int8 inputs and weights).
  int64_t scratchpadBytes = 256 * 1024;
  int64_t scratchpadBanks = 4;
  int64_t bankWidthBytes = 16;  ///< bytes one bank reads or writes per cycle
  // Accumulator (int32).
  int64_t accumulatorBytes = 64 * 1024;
  int64_t accumulatorPortBytes = 64;  ///< bytes the accumulator port moves per cycle
  /// Contiguous equal accumulator banks, one port each (bank = entry /
  /// (entries / banks)): the matrix engine's writes and the vector unit's
  /// reads of different banks proceed in parallel, of one bank in turn.
  int64_t accumulatorBanks = 1;
  // DRAM.
  int64_t dramBytes = int64_t(1) << 30;
  int64_t dramBytesPerCycle = 16;
  int64_t dramLatencyCycles = 100;
  // Vector unit.
  int64_t vectorLanes = 16;
  int64_t vectorLatencyCycles = 4;
  VectorQueue vectorQueue = VectorQueue::Shared;
  // Instruction queues (entries).
  int64_t loadQueueDepth = 32;
  int64_t computeQueueDepth = 32;
  int64_t storeQueueDepth = 32;
  int64_t vectorQueueDepth = 32;
  EnergyTable energy;
  // Compiler (not hardware): a program compiled either way runs on the same NPU.
  /// Fuse a residual add into the epilogue of the conv that produces one of
  /// its operands (docs/npu/compiler.md, "Residual add in the conv epilogue").
  bool fuseResidualAdd = false;
  /// Start a layer's first weight loads before the previous layer's barrier
  /// (docs/npu/compiler.md, "Weights prefetched across the layer barrier").
  bool prefetchWeights = false;
  /// Run a batch's 1x1 stride-1 convs as one image of batch x height rows, so
  /// a gemm streams the rows of every image (docs/npu/compiler.md, "Batch as
  /// more rows per gemm").
  bool batchRows = false;
  /// Run a stride-2 conv over few channels (the stem) as a stride-1 conv over
  /// 2x2 blocks of pixels (docs/npu/compiler.md, "The stem as 2x2 blocks").
  bool denseStem = false;
  /// A conv whose result only feeds a max pooling pools each band in its
  /// epilogue and stores only the pooled rows (docs/npu/compiler.md, "Max
  /// pooling in the conv epilogue").
  bool fuseMaxPool = false;
  /// A fused residual add reads the requantized tile from a buffer of its own
  /// and writes the output tile, instead of running in place, where its two
  /// streams share one scratchpad bank (docs/npu/compiler.md, "Residual add in
  /// the conv epilogue").
  bool residualOutOfPlace = false;
  // Simulation (not hardware): how far a DMA may run ahead of SystemC time.
  int64_t quantumCycles = 1000;

  int64_t accumulatorEntries() const { return accumulatorBytes / 4; }
  int64_t bankBytes() const { return scratchpadBytes / scratchpadBanks; }
  int64_t accumulatorBankEntries() const { return accumulatorEntries() / accumulatorBanks; }
  /// A hash of the parameters a compiled program depends on (array shape,
  /// dataflow, weight buffers, vector queue, memory sizes, banks, lanes), not of timing or energy, so that a
  /// bundle stays valid across bandwidth or energy sweeps.
  uint64_t hash() const;
};

/// Parses a YAML config. Errors name the origin, the key and the line:
/// "npu.yaml:7: key 'scratchpad.banks': expected an integer".
Expected<NpuConfig> parseConfig(const std::string& yamlText, const std::string& origin);
Expected<NpuConfig> loadConfig(const std::string& path);

}  // namespace ember::npu
