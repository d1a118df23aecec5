// The planned IR run over the reference kernels inside three byte regions
// (constants, I/O, activations) laid out as the memory planner placed them: the
// CompiledFunction of the test backends (tests/device, tests/contract). Header
// only, so that a backend plugin (a shared library) and a test executable can
// both use it without a library of their own.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "ember/Backend.h"
#include "ember/IR.h"
#include "ember/Kernels.h"

namespace ember::test {

class PlannedIRFunction : public CompiledFunction {
 public:
  /// `backend` names the backend in error messages ("board: bad input 'x'").
  PlannedIRFunction(const IRFunction& ir, std::string backend)
      : ir_(ir),
        backend_(std::move(backend)),
        constants_(ir_.plan().constantBytes),
        io_(ir_.plan().ioBytes),
        activations_(ir_.plan().activationBytes) {
    for (ValueId v = 0; v < ir_.numValues(); ++v)
      if (ir_.value(v).kind == ValueKind::Constant)
        std::memcpy(address(v), ir_.value(v).payload->data(), ir_.value(v).type.sizeInBytes());
  }

  Error execute(ExecutionContext& context) override {
    for (ValueId v : ir_.inputs()) {
      const Tensor* t = context.input(ir_.value(v).name);
      if (!t || t->type() != ir_.value(v).type)
        return makeError(backend_, ": bad input '", ir_.value(v).name, "'");
      std::memcpy(address(v), t->data(), t->type().sizeInBytes());
    }
    for (const Instruction& inst : ir_.instructions())
      if (Error e = runInstruction(inst)) return e;
    for (ValueId v : ir_.outputs()) {
      Tensor out(ir_.value(v).type);
      std::memcpy(out.data(), address(v), out.type().sizeInBytes());
      context.setOutput(ir_.value(v).name, std::move(out));
    }
    return Error::success();
  }

 protected:
  /// Runs an instruction the reference kernels do not: returns true when it did.
  /// A backend with kernels of its own overrides this.
  virtual bool runOwnKernel(const Instruction& inst, const std::vector<ConstTensorRef>& ins,
                            const std::vector<TensorRef>& outs) {
    return false;
  }

 private:
  Error runInstruction(const Instruction& inst) {
    if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation)
      return Error::success();
    std::vector<TensorRef> outs;
    std::vector<ConstTensorRef> ins;
    for (const Operand& op : inst.operands) {
      TensorRef ref{ir_.value(op.value).type, address(op.value)};
      if (op.access == Access::In)
        ins.push_back(ref);
      else
        outs.push_back(ref);
    }
    if (inst.kind == OpKind::Copy) {
      std::memmove(outs[0].data, ins[0].data, outs[0].type.sizeInBytes());
      return Error::success();
    }
    if (runOwnKernel(inst, ins, outs)) return Error::success();
    if (Error e = runKernel(inst.kind, inst.attrs, ins, outs))
      return e.withContext(backend_ + ": instruction '" + inst.name + "'");
    return Error::success();
  }

  std::byte* address(ValueId id) {
    auto [root, offset] = ir_.resolve(id);
    uint64_t at = ir_.value(root).offset + offset;
    switch (ir_.regionOf(root)) {
      case Region::Constants:
        return constants_.data() + at;
      case Region::IO:
        return io_.data() + at;
      case Region::Activations:
        return activations_.data() + at;
    }
    return nullptr;
  }

  IRFunction ir_;  // a copy: the compiled function outlives the compiler's IR
  std::string backend_;
  std::vector<std::byte> constants_, io_, activations_;
};

}  // namespace ember::test
