// The reference backend: interprets the planned instruction IR with the
// reference kernels. It is the oracle, so it favours clarity over speed.
#include <cstring>
#include <memory>
#include <vector>

#include "ember/Backend.h"
#include "ember/Kernels.h"
#include "ember/Plugin.h"

namespace ember {
namespace {

/// Memory of one region, 64-byte aligned (every planned offset is aligned).
class Arena {
 public:
  explicit Arena(uint64_t bytes) : storage_(Type(ElemKind::Int8Q, {int64_t(bytes)})) {}
  std::byte* base() { return static_cast<std::byte*>(storage_.data()); }

 private:
  Tensor storage_;
};

class ReferenceFunction final : public CompiledFunction {
 public:
  explicit ReferenceFunction(const IRFunction& ir)
      : ir_(ir), constants_(ir.plan().constantBytes), io_(ir.plan().ioBytes), activations_(ir.plan().activationBytes) {
    for (ValueId v = 0; v < ir_.numValues(); ++v) {
      const IRValue& value = ir_.value(v);
      if (value.kind == ValueKind::Constant)
        std::memcpy(constants_.base() + value.offset, value.payload->data(), value.type.sizeInBytes());
    }
  }

  Error execute(ExecutionContext& context) override {
    for (ValueId v : ir_.inputs()) {
      const IRValue& value = ir_.value(v);
      const Tensor* t = context.input(value.name);
      if (!t) return makeError("missing model input '", value.name, "'");
      if (t->type().kind != value.type.kind || t->type().dims != value.type.dims)
        return makeError("input '", value.name, "': expected ", value.type.str(), ", got ", t->type().str());
      std::memcpy(io_.base() + value.offset, t->data(), value.type.sizeInBytes());
    }
    const auto& instrs = ir_.instructions();
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instruction& inst = instrs[i];
      if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) continue;
      if (inst.kind == OpKind::Copy) {
        std::memmove(address(inst.operands[0].value), address(inst.operands[1].value),
                     ir_.value(inst.operands[0].value).type.sizeInBytes());
        continue;
      }
      std::vector<TensorRef> outs;
      std::vector<ConstTensorRef> ins;
      for (const Operand& op : inst.operands) {
        TensorRef ref{ir_.value(op.value).type, address(op.value)};
        if (op.access == Access::In)
          ins.push_back(ref);
        else
          outs.push_back(ref);
      }
      if (Error e = runKernel(inst.kind, inst.attrs, ins, outs))
        return e.withContext("instruction " + std::to_string(i) + " (" + std::string(opName(inst.kind)) + " '" +
                             inst.name + "')");
    }
    for (ValueId v : ir_.outputs()) {
      const IRValue& value = ir_.value(v);
      Tensor out(value.type);
      std::memcpy(out.data(), io_.base() + value.offset, value.type.sizeInBytes());
      context.setOutput(value.name, std::move(out));
    }
    return Error::success();
  }

 private:
  std::byte* address(ValueId id) {
    auto [root, offset] = ir_.resolve(id);
    const IRValue& value = ir_.value(root);
    switch (ir_.regionOf(root)) {
      case Region::Constants: return constants_.base() + value.offset + offset;
      case Region::IO: return io_.base() + value.offset + offset;
      case Region::Activations: return activations_.base() + value.offset + offset;
    }
    return nullptr;
  }

  IRFunction ir_;
  Arena constants_, io_, activations_;
};

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }

  bool supports(const NodeInfo& info) const override {
    if (opInfo(info.kind).category != OpCategory::Primitive) return false;
    return kernelSupports(info.kind, info.inputTypes, info.resultTypes, info.attributes);
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    for (const Instruction& inst : ir.instructions()) {
      if (opInfo(inst.kind).category != OpCategory::Primitive) continue;
      std::vector<Type> ins, outs;
      for (const Operand& op : inst.operands) (op.access == Access::In ? ins : outs).push_back(ir.value(op.value).type);
      if (!kernelSupports(inst.kind, ins, outs, inst.attrs))
        return makeError("reference: no kernel for instruction '", inst.name, "' (", opName(inst.kind), ")");
    }
    return std::unique_ptr<CompiledFunction>(new ReferenceFunction(ir));
  }
};

}  // namespace
}  // namespace ember

extern "C" const EmberBackendPlugin* ember_backend_plugin_reference() {
  static const EmberBackendPlugin plugin{EMBER_PLUGIN_ABI_VERSION, "reference",
                                         "portable interpreter of every primitive; the correctness oracle",
                                         []() -> ember::Backend* { return new ember::ReferenceBackend(); }};
  return &plugin;
}
