// The functional semantics of the compute instructions (docs/npu/isa.md):
// plain C++ on raw memories, independent of SystemC and of timing. Range
// checks happen before these run (Simulator.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Isa.h"

namespace ember::npu::functional {

/// The weight registers of the matrix engine: the preloaded k x n int8 tile,
/// kept as int16 pairs of consecutive rows (the layout gemm's inner loop wants).
struct WeightTile {
  int64_t k = 0, n = 0;
  std::vector<int16_t> packed;
};

/// acc[i][j] (+)= sum_t inp[i][t] * w[t][j].
void gemm(const isa::Instruction& in, const int8_t* spad, int32_t* acc, WeightTile& weights);
void requant(const isa::Instruction& in, const int32_t* acc, int8_t* spad);
void vadd(const isa::Instruction& in, int32_t* acc);
void vclip(const isa::Instruction& in, int32_t* acc);
void lut(const isa::Instruction& in, int8_t* spad);
void pool(const isa::Instruction& in, int8_t* spad);
void eadd(const isa::Instruction& in, int8_t* spad);
/// Row normalisations (ISA v4): quant::softmaxRow and quant::layerNormRow on
/// each row, with the parameters read from the scratchpad record.
void softmax(const isa::Instruction& in, int8_t* spad);
void layerNorm(const isa::Instruction& in, int8_t* spad);

/// Checks the operand values that are not addresses (shift ranges, lo <= hi,
/// non-zero sizes, the eadd, softmax and layernorm parameter records).
/// Returns a message or success.
Error checkOperands(const isa::Instruction& in, const int8_t* spad, int64_t spadBytes);

}  // namespace ember::npu::functional
