// Transformer layers on the NPU (docs/npu/compiler.md, "Transformers"):
// QuantizedMatMul with an activation right operand (Q.K^T, scores.V, batched
// over heads), Softmax and LayerNorm on the vector unit's row normalisations,
// and any 8-bit unary elementwise op run as a 256-entry lut.
#pragma once

#include <cstdint>

#include "CompileContext.h"
#include "Support.h"
#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/IR.h"
#include "ember/npu/Config.h"

namespace ember::npu_backend {

/// Rows of the left operand per step and columns of the right operand per
/// n-tile of an activation matmul [M, K] x [K, N], or why none fits the SRAMs.
struct ActivationMatMulPlan {
  int64_t bandRows = 1, tileCols = 1;
};
Expected<ActivationMatMulPlan> planActivationMatMul(int64_t m, int64_t k, int64_t n,
                                                    const npu::NpuConfig& config);

/// A QuantizedMatMul whose right operand is not a constant: i8 operands of
/// rank >= 2 (batch dims broadcast), constant bias and scales, and a plan
/// (else the plan's reason).
Support activationMatMulSupport(const NodeInfo& info, const npu::NpuConfig& config);
Expected<LayerInfo> lowerActivationMatMul(CompileContext& ctx, const Instruction& inst);

/// Rows per step of a row normalisation (softmax, layernorm) over `rows` rows
/// of `n` codes (a row is never split), or why even one row does not fit.
Expected<int64_t> planRowNormBand(int64_t rows, int64_t n, bool masked, uint64_t paramBytes,
                                  const npu::NpuConfig& config);
/// QuantizedSoftmax along the last axis with a constant mask, and
/// QuantizedLayerNorm of at most isa::kLayerNormMaxChannels channels with
/// constant gamma and beta, on the vector unit (LowerRowNorm.cpp); a refusal
/// names the row length and the scratchpad bytes (planRowNormBand's reason).
Support softmaxSupport(const NodeInfo& info, const npu::NpuConfig& config);
Support layerNormSupport(const NodeInfo& info, const npu::NpuConfig& config);
Expected<LayerInfo> lowerSoftmax(CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerLayerNorm(CompileContext& ctx, const Instruction& inst);

/// A DataParallel op of one i8q input and an i8q result of the same shape that
/// the reference kernels evaluate: exactly a 256-entry table (the lut).
bool unaryTableSupported(const NodeInfo& info);
bool isUnaryTableOp(const CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerUnaryAsLookup(CompileContext& ctx, const Instruction& inst);
/// The Lookup layer (LowerVector.cpp) with its 256-byte table at `tableDram`.
Expected<LayerInfo> lowerLookupWithTable(CompileContext& ctx, const Instruction& inst, uint64_t tableDram);

}  // namespace ember::npu_backend
