// "acme": an accelerator that runs f32 primitives except Relu, on a device of
// its own that loads nothing but acme functions (so a partition given to it
// by mistake, or the runtime's chain of partitions, is an error).
#include <cstring>
#include <map>

#include "ember/Kernels.h"
#include "ember/Plugin.h"

namespace {

using namespace ember;

class AcmeFunction final : public CompiledFunction {
 public:
  explicit AcmeFunction(const IRFunction& ir)
      : ir_(ir),
        regions_{std::vector<std::byte>(ir_.plan().constantBytes), std::vector<std::byte>(ir_.plan().ioBytes),
                 std::vector<std::byte>(ir_.plan().activationBytes)} {
    for (ValueId v = 0; v < ir_.numValues(); ++v)
      if (ir_.value(v).kind == ValueKind::Constant)
        std::memcpy(address(v), ir_.value(v).payload->data(), ir_.value(v).type.sizeInBytes());
  }

  Error execute(ExecutionContext& context) override {
    for (ValueId v : ir_.inputs()) {
      const Tensor* t = context.input(ir_.value(v).name);
      if (!t || t->type() != ir_.value(v).type) return makeError("acme: bad input '", ir_.value(v).name, "'");
      std::memcpy(address(v), t->data(), t->type().sizeInBytes());
    }
    for (const Instruction& inst : ir_.instructions()) {
      if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) continue;
      std::vector<TensorRef> outs;
      std::vector<ConstTensorRef> ins;
      for (const Operand& op : inst.operands) {
        TensorRef ref{ir_.value(op.value).type, address(op.value)};
        if (op.access == Access::In)
          ins.push_back(ref);
        else
          outs.push_back(ref);
      }
      if (inst.kind == OpKind::Copy)
        std::memmove(outs[0].data, ins[0].data, outs[0].type.sizeInBytes());
      else if (Error e = runKernel(inst.kind, inst.attrs, ins, outs))
        return e.withContext("acme: instruction '" + inst.name + "'");
    }
    for (ValueId v : ir_.outputs()) {
      Tensor out(ir_.value(v).type);
      std::memcpy(out.data(), address(v), out.type().sizeInBytes());
      context.setOutput(ir_.value(v).name, std::move(out));
    }
    return Error::success();
  }

 private:
  std::byte* address(ValueId id) {
    auto [root, offset] = ir_.resolve(id);
    return regions_[size_t(ir_.regionOf(root))].data() + ir_.value(root).offset + offset;
  }

  IRFunction ir_;
  std::vector<std::byte> regions_[3];  // indexed by Region
};

class AcmeDevice final : public Device {
 public:
  Error load(const std::string& id, std::shared_ptr<CompiledFunction> function) override {
    auto acme = std::dynamic_pointer_cast<AcmeFunction>(function);
    if (!acme) return makeError("acme: '", id, "' is not an acme function");
    loaded_[id] = std::move(acme);
    return Error::success();
  }
  Error run(const std::string& id, ExecutionContext& context) override {
    auto it = loaded_.find(id);
    if (it == loaded_.end()) return makeError("acme: '", id, "' is not loaded");
    return it->second->execute(context);
  }
  Error unload(const std::string& id) override {
    return loaded_.erase(id) ? Error::success() : makeError("acme: '", id, "' is not loaded");
  }
  uint64_t memoryLimitBytes() const override { return 1 << 20; }

 private:
  std::map<std::string, std::shared_ptr<AcmeFunction>> loaded_;
};

class AcmeBackend final : public Backend {
 public:
  std::string name() const override { return "acme"; }
  bool supports(const NodeInfo& info) const override {
    if (info.kind == OpKind::Relu || opInfo(info.kind).category != OpCategory::Primitive) return false;
    for (const Type& t : info.inputTypes)
      if (t.kind != ElemKind::F32) return false;
    return kernelSupports(info.kind, info.inputTypes, info.resultTypes);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return std::unique_ptr<CompiledFunction>(new AcmeFunction(ir));
  }
  std::unique_ptr<Device> createDevice() const override { return std::make_unique<AcmeDevice>(); }
};

}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN("acme", "test accelerator without Relu (tests/sdk/fallback_app)", AcmeBackend)
