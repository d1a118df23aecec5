// "toy": an out-of-tree Ember backend for a toy accelerator. It implements
// the lowered primitive set (it asks for every high-level node to be
// lowered, the default) plus one vendor op, a fused Conv+bias+ReLU
// (ToyVendorOps.cpp), has no int8 unit (quantized ops are unsupported),
// and runs the planned instruction IR on the host: its own vectorised kernels
// where they apply (ToyKernels.cpp), Ember's reference kernels elsewhere.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ToyKernels.h"
#include "ToyVendorOps.h"
#include "ember/Backend.h"
#include "ember/Kernels.h"
#include "ember/Plugin.h"

namespace toy {
namespace {

using namespace ember;

/// One region of the memory plan: constants, inputs/outputs, activations.
/// Tensor storage is zeroed and 64-byte aligned, as planned offsets assume.
class Region {
 public:
  explicit Region(uint64_t bytes) : storage_(Type(ElemKind::UInt8Q, {int64_t(bytes)})) {}
  std::byte* base() { return static_cast<std::byte*>(storage_.data()); }

 private:
  Tensor storage_;
};

/// One instruction, resolved at compile time: operand types and which kernel runs it.
struct Step {
  const Instruction* inst;
  std::vector<Type> inTypes, outTypes;
  bool fast = false;
};

/// Which kernel runs a step: the toy's own ("toy", "fused") or Ember's ("reference").
std::string kernelOf(const Step& step) {
  if (step.inst->kind == OpKind::VendorOp) return "fused";
  if (step.inst->kind == OpKind::Copy) return "copy";
  return step.fast ? "toy" : "reference";
}

class ToyFunction final : public CompiledFunction {
 public:
  explicit ToyFunction(const IRFunction& ir)
      : ir_(ir),
        constants_(ir_.plan().constantBytes),
        io_(ir_.plan().ioBytes),
        activations_(ir_.plan().activationBytes) {
    // Constants are copied in once, when the function is compiled ("loaded").
    for (ValueId v = 0; v < ir_.numValues(); ++v) {
      const IRValue& value = ir_.value(v);
      if (value.kind == ValueKind::Constant)
        std::memcpy(constants_.base() + value.offset, value.payload->data(), value.type.sizeInBytes());
    }
    for (const Instruction& inst : ir_.instructions()) {
      if (inst.kind == OpKind::AllocActivation || inst.kind == OpKind::DeallocActivation) continue;
      Step step{&inst, {}, {}, false};
      for (const Operand& op : inst.operands)
        (op.access == Access::In ? step.inTypes : step.outTypes).push_back(ir_.value(op.value).type);
      step.fast = hasFastKernel(inst.kind, step.inTypes, step.outTypes);
      steps_.push_back(std::move(step));
    }
    declareReport();
  }

  Error execute(ExecutionContext& context) override {
    for (ValueId v : ir_.inputs()) {
      const IRValue& value = ir_.value(v);
      const Tensor* t = context.input(value.name);
      if (!t) return makeError("toy: missing model input '", value.name, "'");
      if (t->type().kind != value.type.kind || t->type().dims != value.type.dims)
        return makeError("toy: input '", value.name, "': expected ", value.type.str(), ", got ",
                         t->type().str());
      std::memcpy(io_.base() + value.offset, t->data(), value.type.sizeInBytes());
    }
    uint64_t fastInstructions = 0;
    for (const Step& step : steps_) {
      const Instruction& inst = *step.inst;
      if (inst.kind == OpKind::Copy) {
        std::memmove(address(inst.operands[0].value), address(inst.operands[1].value),
                     step.outTypes[0].sizeInBytes());
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
      if (inst.kind == OpKind::VendorOp) {
        runConvBiasRelu(inst.attrs, ins, outs[0]);  // compile() accepted only toy.ConvBiasRelu
      } else if (step.fast) {
        runFastKernel(inst.kind, inst.attrs, ins, outs);
        ++fastInstructions;
      } else if (Error e = runKernel(inst.kind, inst.attrs, ins, outs)) {
        return e.withContext("toy: instruction '" + inst.name + "' (" + std::string(opName(inst.kind)) + ")");
      }
    }
    for (ValueId v : ir_.outputs()) {
      const IRValue& value = ir_.value(v);
      Tensor out(value.type);
      std::memcpy(out.data(), io_.base() + value.offset, value.type.sizeInBytes());
      context.setOutput(value.name, std::move(out));
    }
    report_.measured = true;
    report_.setCounter("fast_instructions", fastInstructions);
    return Error::success();
  }

  const DeviceReport* deviceReport() const override { return &report_; }

 private:
  /// The toy's report: one counter (instructions its vectorised kernels ran) and one
  /// column (which kernel runs each instruction, decided at compile). The
  /// tools print and write them like any backend's (ember/DeviceReport.h).
  void declareReport() {
    report_.device = "toy";
    report_.setCounter("fast_instructions", uint64_t(0), "instructions");
    report_.columns = {{"kernel", "kernel", "", ReportKind::Text, /*measured=*/false, 0}};
    for (const Step& step : steps_) {
      LayerReport layer;
      layer.name = step.inst->name;
      layer.op = std::string(opName(step.inst->kind));
      layer.values["kernel"] = kernelOf(step);
      report_.layers.push_back(std::move(layer));
    }
  }

  /// The host address of a value: its region's base plus its planned offset
  /// (views resolve to the value they window, plus their byte offset).
  std::byte* address(ValueId id) {
    auto [root, offset] = ir_.resolve(id);
    uint64_t at = ir_.value(root).offset + offset;
    switch (ir_.regionOf(root)) {
      case ember::Region::Constants:
        return constants_.base() + at;
      case ember::Region::IO:
        return io_.base() + at;
      case ember::Region::Activations:
        return activations_.base() + at;
    }
    return nullptr;
  }

  IRFunction ir_;  // a copy: the compiled function outlives the compiler's IR
  Region constants_, io_, activations_;
  std::vector<Step> steps_;
  DeviceReport report_;
};

bool isQuantizedType(const Type& t) { return isQuantized(t.kind); }

class ToyBackend final : public Backend {
 public:
  std::string name() const override { return "toy"; }

  // Primitives only (so every high-level node is lowered), no quantized
  // types (the toy has no int8 unit), and only what a kernel exists for.
  bool supports(const NodeInfo& info) const override {
    if (info.kind == OpKind::VendorOp) return isConvBiasRelu(info);  // the toy's own vendor op
    if (opInfo(info.kind).category != OpCategory::Primitive) return false;
    for (const Type& t : info.inputTypes)
      if (isQuantizedType(t)) return false;
    for (const Type& t : info.resultTypes)
      if (isQuantizedType(t)) return false;
    return hasFastKernel(info.kind, info.inputTypes, info.resultTypes) ||
           kernelSupports(info.kind, info.inputTypes, info.resultTypes);
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    // Lowering only leaves what supports() accepted; check anyway, so that a
    // bad pipeline is an error naming the instruction rather than a crash.
    for (const Instruction& inst : ir.instructions()) {
      if (opInfo(inst.kind).category != OpCategory::Primitive) continue;
      NodeInfo info{inst.kind, {}, {}, {}, inst.attrs};
      for (const Operand& op : inst.operands)
        (op.access == Access::In ? info.inputTypes : info.resultTypes).push_back(ir.value(op.value).type);
      if (!supports(info))
        return makeError("toy: cannot run instruction '", inst.name, "' (", opName(inst.kind), ")");
    }
    return std::unique_ptr<CompiledFunction>(new ToyFunction(ir));
  }
};

}  // namespace
}  // namespace toy

EMBER_DEFINE_BACKEND_PLUGIN_WITH_VENDOR_OPS(
    "toy", "toy accelerator: lowered primitives, fused Conv+bias+ReLU, no int8", toy::ToyBackend,
    toy::vendorOps)
