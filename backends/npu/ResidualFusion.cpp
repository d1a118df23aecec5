#include "ResidualFusion.h"

#include "IsaLimits.h"
#include "ember/OpAttrs.h"

namespace ember::npu_backend {
namespace {

bool isAllocation(OpKind kind) {
  return kind == OpKind::AllocActivation || kind == OpKind::DeallocActivation;
}

struct ByteRange {
  uint64_t begin, end;
  bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

ByteRange rangeOf(CompileContext& ctx, ValueId id) {
  const uint64_t at = ctx.addressOf(id);
  return {at, at + uint64_t(ctx.ir().value(id).type.numElements())};  // int8: one byte per element
}

/// Whether any instruction but `producer` and `consumer` touches `value`:
/// directly, or also through a view unless `directOnly` (the add is in place
/// on `value`, so its views after the add are the add's result).
bool usedElsewhere(const IRFunction& ir, ValueId value, size_t producer, size_t consumer, bool directOnly) {
  const auto& instrs = ir.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (i == producer || i == consumer || isAllocation(instrs[i].kind)) continue;
    for (const Operand& op : instrs[i].operands)
      if (op.value == value || (!directOnly && ir.resolve(op.value).first == value)) return true;
  }
  return false;
}

}  // namespace

std::map<size_t, ResidualAddCandidate> residualAddCandidates(CompileContext& ctx) {
  std::map<size_t, ResidualAddCandidate> plan;
  if (!ctx.config().fuseResidualAdd) return plan;
  const IRFunction& ir = ctx.ir();
  const auto& instrs = ir.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instruction& conv = instrs[i];
    if (conv.kind != OpKind::QuantizedConv) continue;
    size_t j = i + 1;
    while (j < instrs.size() && isAllocation(instrs[j].kind)) ++j;
    if (j == instrs.size() || instrs[j].kind != OpKind::QuantizedAdd) continue;
    const Instruction& add = instrs[j];
    const ValueId result = conv.operands[0].value;
    const ValueId lhs = add.operands[1].value, rhs = add.operands[2].value;
    if ((lhs == result) == (rhs == result)) continue;  // not an operand, or both
    const ValueId other = lhs == result ? rhs : lhs, sum = add.operands[0].value;
    const Dims& dims = ir.value(sum).type.dims;
    if (ir.value(lhs).type.dims != dims || ir.value(rhs).type.dims != dims) continue;  // broadcasts stay
    // The planner often puts the add in place on the conv's result.
    const bool inPlaceOnResult = ir.resolve(sum) == std::pair<ValueId, uint64_t>{result, 0};
    if (ir.value(result).kind != ValueKind::Activation || usedElsewhere(ir, result, i, j, inPlaceOnResult))
      continue;
    if (ir.regionOf(ir.resolve(other).first) == Region::Constants) continue;
    // The sum is written tile by tile while the conv still reads the other
    // operand (and its input, see ResidualAddCandidate).
    const ByteRange out = rangeOf(ctx, sum), input = rangeOf(ctx, conv.operands[1].value),
                    residual = rangeOf(ctx, other);
    if (out.overlaps(residual) && out.begin != residual.begin) continue;
    plan[i] = {j, out.overlaps(input)};
  }
  return plan;
}

namespace {

/// The MaxPool a conv at `i` may run in its epilogue (convFusionCandidates).
std::optional<size_t> maxPoolAfter(CompileContext& ctx, size_t i) {
  const IRFunction& ir = ctx.ir();
  const auto& instrs = ir.instructions();
  const Instruction& conv = instrs[i];
  size_t j = i + 1;
  while (j < instrs.size() && isAllocation(instrs[j].kind)) ++j;
  if (j == instrs.size() || instrs[j].kind != OpKind::MaxPool) return std::nullopt;
  const Instruction& pool = instrs[j];
  const ValueId result = conv.operands[0].value;
  if (pool.operands[1].value != result || ir.value(result).kind != ValueKind::Activation ||
      usedElsewhere(ir, result, i, j, false))
    return std::nullopt;
  const Type &in = ir.value(result).type, &out = ir.value(pool.operands[0].value).type;
  if (in.rank() != 4 || out.rank() != 4 || in.scale != out.scale || in.offset != out.offset)
    return std::nullopt;
  const MaxPoolAttrs attrs = MaxPoolAttrs::from(pool.attrs);
  for (size_t a = 0; a < 2; ++a)
    if (attrs.dilations[a] != 1 || attrs.kernel[a] > limits::kPoolWindow ||
        attrs.strides[a] > limits::kPoolStride)
      return std::nullopt;
  const int64_t halo = attrs.kernel[0] - attrs.strides[0];
  if (attrs.pads[0] != halo || halo < 0 || halo > attrs.strides[0]) return std::nullopt;
  if (rangeOf(ctx, pool.operands[0].value).overlaps(rangeOf(ctx, conv.operands[1].value)))
    return std::nullopt;
  return j;
}

}  // namespace

std::map<size_t, ConvFusion> convFusionCandidates(CompileContext& ctx) {
  std::map<size_t, ConvFusion> plan;
  for (const auto& [conv, add] : residualAddCandidates(ctx)) plan[conv].add = add;
  if (!ctx.config().fuseMaxPool) return plan;
  const auto& instrs = ctx.ir().instructions();
  for (size_t i = 0; i < instrs.size(); ++i)
    if (instrs[i].kind == OpKind::QuantizedConv)
      if (auto pool = maxPoolAfter(ctx, i)) plan[i].maxPool = pool;
  return plan;
}

}  // namespace ember::npu_backend
