// A compiled function of the cpu backend: copies inputs into the I/O region,
// calls the native entry, copies outputs out.
#include "CpuFunction.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "AotBundle.h"
#include "Arena.h"
#include "StepCodec.h"

namespace ember::cpu {
namespace {

class CpuFunction final : public CompiledFunction {
 public:
  CpuFunction(const IRFunction& ir, std::shared_ptr<Program> program, int threads, std::string aotHeader)
      : program_(std::move(program)),
        aotHeader_(std::move(aotHeader)),
        ioBytes_(ir.plan().ioBytes),
        activationBytes_(ir.plan().activationBytes),
        constantBytes_(ir.plan().constantBytes),
        pool_(threads),
        constants_(ir.plan().constantBytes),
        io_(ir.plan().ioBytes),
        activations_(ir.plan().activationBytes),
        packed_(program_->packedBytes) {
    for (ValueId v = 0; v < ir.numValues(); ++v) {
      const IRValue& value = ir.value(v);
      if (value.kind == ValueKind::Constant)
        std::memcpy(constants_.data() + value.offset, value.payload->data(), value.type.sizeInBytes());
      if (value.kind == ValueKind::Input) inputs_.push_back({value.name, value.type, value.offset});
      if (value.kind == ValueKind::Output) outputs_.push_back({value.name, value.type, value.offset});
    }
    regions_[kConstants] = constants_.data();
    regions_[kIO] = io_.data();
    regions_[kActivations] = activations_.data();
    regions_[kPacked] = packed_.data();
    pack();
  }

  Error execute(ExecutionContext& context) override {
    for (const Port& in : inputs_) {
      const Tensor* t = context.input(in.name);
      if (!t) return makeError("missing model input '", in.name, "'");
      if (t->type().kind != in.type.kind || t->type().dims != in.type.dims)
        return makeError("input '", in.name, "': expected ", in.type.str(), ", got ", t->type().str());
      std::memcpy(io_.data() + in.offset, t->data(), in.type.sizeInBytes());
    }
    RunContext run;
    run.pool = &pool_;
    run.arch = program_->arch;
    program_->code->entry()(regions_, &run);
    if (run.error) return run.error;
    for (const Port& out : outputs_) {
      Tensor t(out.type);
      std::memcpy(t.data(), io_.data() + out.offset, out.type.sizeInBytes());
      context.setOutput(out.name, std::move(t));
    }
    return Error::success();
  }

  /// The AOT bundle: the object at `path`, the header at the `header`
  /// option's path (default: `path` with the extension .h).
  Error writeArtifact(const std::string& path) const override {
    AotModule m;
    m.symbol = aotSymbolFromPath(path);
    m.ops = program_->ops;
    for (JitOp& op : m.ops) {
      if (op.kind != JitOp::Kind::Kernel) continue;
      EMBER_ASSIGN_OR_RETURN(op.blob, encodeStep(*static_cast<const Step*>(op.step)));
      op.step = nullptr;
    }
    m.constants = constants_.data();
    m.constantBytes = constantBytes_;
    m.packed = packed_.data();
    m.packedBytes = program_->packedBytes;
    m.ioBytes = ioBytes_;
    m.activationBytes = activationBytes_;
    for (const Port& p : inputs_) m.inputs.push_back({p.name, p.type, p.offset});
    for (const Port& p : outputs_) m.outputs.push_back({p.name, p.type, p.offset});
    m.format = kStepFormat;
    m.mr = program_->arch.mr;
    m.nr = program_->arch.nr;
    m.avx512 = program_->arch.avx512 ? 1 : 0;
    std::string header = aotHeader_;
    if (header.empty()) header = std::filesystem::path(path).replace_extension(".h").string();
    return writeAotBundle(m, path, header);
  }

 private:
  struct Port {
    std::string name;
    Type type;
    uint64_t offset;
  };

  void pack() {
    for (const PackEntry& p : program_->packing) {
      const float* src = reinterpret_cast<const float*>(regions_[p.src.region] + p.src.offset);
      float* dst = reinterpret_cast<float*>(packed_.data() + p.dst);
      if (p.kind == PackEntry::Kind::Int8Depthwise) {
        packInt8Depthwise(reinterpret_cast<const int8_t*>(src),
                          reinterpret_cast<const int32_t*>(regions_[p.bias.region] + p.bias.offset),
                          reinterpret_cast<const float*>(regions_[p.scales.region] + p.scales.offset),
                          p.inScale, p.outScale, p.taps, p.channels, packed_.data() + p.dst);
        continue;
      }
      if (p.kind == PackEntry::Kind::Int8Conv) {
        const auto* filter = reinterpret_cast<const int8_t*>(src);
        std::vector<int8_t> rows;  // a MatMul's rhs [K, N] as filter rows [N, K]
        if (!p.transposed) {
          rows.resize(size_t(p.k * p.n));
          for (int64_t kk = 0; kk < p.k; ++kk)
            for (int64_t j = 0; j < p.n; ++j) rows[size_t(j * p.k + kk)] = filter[kk * p.n + j];
          filter = rows.data();
        }
        packInt8Conv(filter, reinterpret_cast<const int32_t*>(regions_[p.bias.region] + p.bias.offset),
                     reinterpret_cast<const float*>(regions_[p.scales.region] + p.scales.offset), p.inScale,
                     p.outScale, p.zu, p.k, p.n, packed_.data() + p.dst);
        continue;
      }
      if (p.kind == PackEntry::Kind::Winograd) {
        packWinogradFilter(program_->arch, src, p.k, p.n, dst);
        continue;
      }
      if (p.kind == PackEntry::Kind::Depthwise) {
        // [C, KH, KW, 1] -> [KH, KW, C]
        for (int64_t ch = 0; ch < p.channels; ++ch)
          for (int64_t t = 0; t < p.taps; ++t) dst[t * p.channels + ch] = src[ch * p.taps + t];
        continue;
      }
      for (int64_t g = 0; g < p.groups; ++g) {
        // Conv filters are B^T ([N, K] rows); MatMul weights are B ([K, N]).
        const float* b = src + g * p.n * p.k;
        packB(program_->arch, b, p.transposed ? p.k : p.n, p.transposed, p.k, p.n, dst + g * p.groupFloats);
      }
    }
  }

  std::shared_ptr<Program> program_;
  std::string aotHeader_;
  uint64_t ioBytes_, activationBytes_, constantBytes_;
  ThreadPool pool_;
  Arena constants_, io_, activations_, packed_;
  uint8_t* regions_[kNumRegions];
  std::vector<Port> inputs_, outputs_;
};

}  // namespace

std::unique_ptr<CompiledFunction> makeCpuFunction(const IRFunction& ir, std::shared_ptr<Program> program,
                                                  int threads, std::string aotHeader) {
  return std::make_unique<CpuFunction>(ir, std::move(program), threads, std::move(aotHeader));
}

}  // namespace ember::cpu
