// Any elementwise op of one int8 tensor to an int8 tensor (QuantizedGelu and
// every other DataParallel unary op the reference kernels run on i8q) as the
// NPU's lut: an int8 input has 256 values, so the op is exactly the table of
// its results, computed here by the reference kernel itself. The NPU's result
// is the reference's by construction, whatever arithmetic the op uses.
// docs/npu/compiler.md, "Transformers".
#include <array>
#include <span>

#include "LowerTransformer.h"
#include "Lowering.h"
#include "ember/Kernels.h"

namespace ember::npu_backend {
namespace {

bool claimable(OpKind kind, const std::vector<Type>& in, const std::vector<Type>& out,
               const Attributes& attrs) {
  if (!opInfo(kind).has(DataParallel) || opInfo(kind).has(View)) return false;
  if (in.size() != 1 || out.size() != 1 || !isI8(in[0]) || !isI8(out[0]) || in[0].dims != out[0].dims)
    return false;
  return kernelSupports(kind, in, out, attrs);
}

/// table[q + 128] = the op's result on the code q, from the reference kernel.
Expected<std::array<int8_t, 256>> tableOf(OpKind kind, const Attributes& attrs, const Type& in,
                                          const Type& out) {
  std::array<int8_t, 256> codes{}, table{};
  for (int i = 0; i < 256; ++i) codes[size_t(i)] = int8_t(i - 128);
  const ConstTensorRef input(in.withDims({256}), codes.data());
  const TensorRef output{out.withDims({256}), table.data()};
  if (Error e = runKernel(kind, attrs, std::span<const ConstTensorRef>(&input, 1),
                          std::span<const TensorRef>(&output, 1)))
    return e;
  return table;
}

}  // namespace

bool unaryTableSupported(const NodeInfo& info) {
  return claimable(info.kind, info.inputTypes, info.resultTypes, info.attributes);
}

bool isUnaryTableOp(const CompileContext& ctx, const Instruction& inst) {
  if (inst.operands.size() != 2) return false;  // one result, one input
  return claimable(inst.kind, {ctx.ir().value(inst.operands[1].value).type},
                   {ctx.ir().value(inst.operands[0].value).type}, inst.attrs);
}

Expected<LayerInfo> lowerUnaryAsLookup(CompileContext& ctx, const Instruction& inst) {
  const Type &out = operandValue(ctx, inst, 0).type, &in = operandValue(ctx, inst, 1).type;
  auto table = tableOf(inst.kind, inst.attrs, in, out);
  if (!table)
    return makeError("layer '", inst.name, "' (", opName(inst.kind),
                     "): its lookup table: ", table.error().message());
  const uint64_t tableDram = ctx.addWeights(table->data(), table->size());
  auto layer = lowerLookupWithTable(ctx, inst, tableDram);
  if (layer) layer->tiles += " (" + std::string(opName(inst.kind)) + " as a 256-entry lut)";
  return layer;
}

}  // namespace ember::npu_backend
