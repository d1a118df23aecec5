// The modelled host time (ember/HostModel.h).
#include "ember/HostModel.h"

#include <algorithm>

#include "ember/IR.h"

namespace ember {
namespace {

/// Multiply-accumulates of one instruction: convolutions and matrix products
/// count output elements x reduction length; everything else counts none.
double instructionMacs(const IRFunction& ir, const Instruction& instr) {
  const std::string_view op = opName(instr.kind);
  if (instr.operands.size() < 3) return 0;
  const Type& out = ir.value(instr.operands[0].value).type;
  const Type& lhs = ir.value(instr.operands[1].value).type;
  const Type& rhs = ir.value(instr.operands[2].value).type;
  if (op.find("Conv") != std::string_view::npos && rhs.rank() >= 1 && rhs.dims[0] > 0) {
    const int64_t reduction = rhs.numElements() / rhs.dims[0];  // exact: the filter of one output channel
    return double(out.numElements()) * double(reduction);
  }
  if ((op.find("MatMul") != std::string_view::npos || op == "Gemm") && lhs.rank() >= 1)
    return double(out.numElements()) * double(lhs.dims.back());
  return 0;
}

}  // namespace

double modelledHostSeconds(const CompiledModel& model, const std::string& targetBackend, double macsPerSecond,
                           double memoryBytesPerSecond) {
  double seconds = 0;
  for (const auto& [backend, ir] : model.partitionIRs) {
    if (backend == targetBackend || !ir) continue;
    for (const Instruction& instr : ir->instructions()) {
      if (opInfo(instr.kind).category == OpCategory::IROnly) continue;
      double bytes = 0;
      for (const Operand& operand : instr.operands)
        bytes += double(ir->value(operand.value).type.sizeInBytes());
      const double macs = instructionMacs(*ir, instr);
      seconds += std::max(macsPerSecond > 0 ? macs / macsPerSecond : 0.0,
                          memoryBytesPerSecond > 0 ? bytes / memoryBytesPerSecond : 0.0);
    }
  }
  return seconds;
}

double hostLinkMicroseconds(uint64_t transfers, uint64_t bytes, double linkBytesPerSecond,
                            double perTransferUs) {
  return double(transfers) * perTransferUs +
         (linkBytesPerSecond > 0 ? double(bytes) / linkBytesPerSecond * 1e6 : 0.0);
}

}  // namespace ember
