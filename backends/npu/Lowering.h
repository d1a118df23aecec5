// Per-op lowerings of IR instructions to NPU layers. Each appends its steps to
// the context's program between beginLayer/endLayer (done by the compiler).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "CompileContext.h"
#include "Tiling.h"
#include "ember/Error.h"
#include "ember/IR.h"
#include "ember/OpAttrs.h"
#include "ember/QuantMath.h"

namespace ember::npu_backend {

/// A convolution-shaped layer for the matrix engine (conv, matmul, average
/// pooling): geometry, weights (already with the zero point folded into the
/// bias) and the requantization.
struct ConvJob {
  std::string name;
  ConvGeometry g;
  uint64_t input = 0, output = 0;  ///< DRAM addresses (NHWC)
  /// DRAM byte strides of the input's images, rows and pixels when they are
  /// not the dense NHWC ones of `g` (0: dense): a strided 1x1 conv reads only
  /// the pixels it uses and runs as a stride-1 conv on them.
  int64_t inImageBytes = 0, inRowBytes = 0, inPixelBytes = 0;
  /// > 0: `g` is the 2x2-block form of a stride-2 conv over this many
  /// channels (SpaceToDepth.h); the band loads assemble the blocks.
  int64_t spaceToDepthChannels = 0;
  int32_t inZero = 0;  ///< padding value: padded taps contribute 0
  /// filter(o, ky, kx, cInGroup) as int8.
  std::function<int32_t(int64_t, int64_t, int64_t, int64_t)> filter;
  std::vector<int32_t> bias;                                    ///< per output channel, folded
  std::vector<quant::FixedPointMultiplier> channelMultipliers;  ///< per channel (or one for all)
  /// Per output position (average pooling), or empty.
  std::function<quant::FixedPointMultiplier(int64_t, int64_t)> positionMultiplier;
  int32_t outZero = 0, lo = -128, hi = 127;
  /// A QuantizedAdd fused into the epilogue (g.residualAdd): every output tile
  /// loads the add's other operand from `residual` (NHWC like the output) and
  /// one eadd with the add's `residualParams` combines it in place with the
  /// requantized tile; `output` is then the add's result (with a fused max
  /// pooling, g.pool, the pooling's result).
  uint64_t residual = 0;
  bool convIsLhs = true;  ///< the conv's result is the add's first operand
  std::vector<uint8_t> residualParams;
};

Expected<LayerInfo> emitConvJob(CompileContext& ctx, const ConvJob& job);

/// The best tiling of a convolution-shaped layer, or why none exists: a DMA or
/// gemm field limit, or SRAMs too small for even the smallest tiling.
Expected<ConvTiling> fitConv(const ConvGeometry& g, const std::vector<NTile>& tiles, const CostModel& cost);
/// fitConv on `config` alone: supports() asks it so that a layer the engine
/// cannot hold falls back to another backend instead of failing the compile.
Error convFits(const ConvGeometry& g, const npu::NpuConfig& config);

/// NHWC conv geometry from the QuantizedConv's types and attributes.
ConvGeometry convGeometry(const Type& out, const Type& in, const Type& filter,
                          const QuantizedConvAttrs& attrs);
/// The int8 output range of a quantized conv, matmul or add with its optional
/// fused clip (the clip_min/clip_max attributes) applied.
quant::QuantRange clipRange(const Type& out, std::optional<double> clipMin, std::optional<double> clipMax);
/// A strided 1x1 conv without padding uses only every sh-th row and sw-th
/// pixel: the DMA gathers those, and the matrix engine sees a dense stride-1
/// conv on the output grid (gatheredGeometry), without junk columns.
bool gathersStrided1x1(const ConvGeometry& g);
ConvGeometry gatheredGeometry(ConvGeometry g);
/// A QuantizedMatMul [.., K] x [K, N] as a 1x1 conv of K channels over the lhs rows.
ConvGeometry matMulGeometry(const Type& lhs, const Type& rhs);

/// What a conv may run in its epilogue (ResidualFusion.h says when): `add`, a
/// QuantizedAdd with this conv's result as an operand, or `maxPool`, a
/// MaxPool of it.
struct ConvEpilogue {
  const Instruction* add = nullptr;
  bool addOverwritesInput = false;
  const Instruction* maxPool = nullptr;
};
Expected<LayerInfo> lowerConv(CompileContext& ctx, const Instruction& inst,
                              const ConvEpilogue& epilogue = {});
Expected<LayerInfo> lowerMatMul(CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerAvgPool(CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerMaxPool(CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerAdd(CompileContext& ctx, const Instruction& inst);
/// The eadd parameter record of a QuantizedAdd (multipliers, zero points, clip).
std::vector<uint8_t> addParams(const CompileContext& ctx, const Instruction& add);
Expected<LayerInfo> lowerLookup(CompileContext& ctx, const Instruction& inst);
Expected<LayerInfo> lowerRequantize(CompileContext& ctx, const Instruction& inst);
/// Bytes per tile of an elementwise layer with `pairs` double-buffered slot
/// pairs: each pair in its own bank when there are enough banks (half a bank
/// per slot), else an equal share of the scratchpad; 1 KiB is kept for
/// parameters, tables and broadcast rows.
int64_t tileBytes(const npu::NpuConfig& c, int64_t pairs);
/// Allocates `count` scratchpad slots of `bytes` named after the layer.
Expected<std::vector<uint64_t>> allocSlots(CompileContext& ctx, const Instruction& inst,
                                           const std::string& role, int count, int64_t bytes, int bank);
/// Loads a small constant block (table, parameters) into a fresh slot.
Expected<uint64_t> loadConstant(CompileContext& ctx, const Instruction& inst, const std::string& role,
                                uint64_t dram, int64_t bytes, Step& step);
/// Copy, Transpose, Slice, Concat: DMA through the scratchpad.
Expected<LayerInfo> lowerDataMovement(CompileContext& ctx, const Instruction& inst);

/// An int8 tensor with a scale and zero point: what the npu computes on.
inline bool isI8(const Type& t) { return t.kind == ElemKind::Int8Q; }

/// The instruction's operand values: results first, then inputs (IR.h).
inline const IRValue& operandValue(const CompileContext& ctx, const Instruction& inst, size_t i) {
  return ctx.ir().value(inst.operands[i].value);
}

}  // namespace ember::npu_backend
