// The "fused" test backend (FusedBackend.h): it keeps Gemm and Softmax as IR
// instructions and checks in compile() that no other high-level op reached it.
#include "FusedBackend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ember/Kernels.h"
#include "tests/support/PlannedIRFunction.h"

namespace fused {

using namespace ember;

KernelCounts& kernelCounts() {
  static KernelCounts counts;
  return counts;
}

namespace {

bool keepsHighLevel(OpKind kind) { return kind == OpKind::Gemm || kind == OpKind::Softmax; }

bool allF32(const std::vector<Type>& types) {
  return std::all_of(types.begin(), types.end(), [](const Type& t) { return t.kind == ElemKind::F32; });
}

/// Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N] numpy-style.
void gemmKernel(const Attributes& attrs, ConstTensorRef a, ConstTensorRef b, ConstTensorRef c, TensorRef y) {
  const bool transA = attrs.getInt("trans_a") != 0, transB = attrs.getInt("trans_b") != 0;
  const double alpha = attrs.getFloat("alpha"), beta = attrs.getFloat("beta");
  const int64_t m = y.type.dims[0], n = y.type.dims[1];
  const int64_t k = transA ? a.type.dims[0] : a.type.dims[1];
  const int64_t aCols = a.type.dims[1], bCols = b.type.dims[1];
  // C's dims right-aligned to [rows, cols]; a size-1 dim repeats.
  const Dims& cd = c.type.dims;
  const int64_t cRows = cd.size() == 2 ? cd[0] : 1, cCols = cd.empty() ? 1 : cd.back();
  const float *pa = a.as<float>(), *pb = b.as<float>(), *pc = c.as<float>();
  float* py = y.as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        float av = transA ? pa[p * aCols + i] : pa[i * aCols + p];
        float bv = transB ? pb[j * bCols + p] : pb[p * bCols + j];
        sum += double(av) * double(bv);
      }
      double cv = pc[(cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j)];
      py[i * n + j] = float(alpha * sum + beta * cv);
    }
  ++kernelCounts().gemm;
}

/// Softmax along one axis, in one pass per row (max, sum of exp, scale).
void softmaxKernel(const Attributes& attrs, ConstTensorRef x, TensorRef y) {
  const Dims& dims = x.type.dims;
  int64_t axis = attrs.getInt("axis");
  if (axis < 0) axis += int64_t(dims.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t len = dims[size_t(axis)];
  const float* px = x.as<float>();
  float* py = y.as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      float max = px[base];
      for (int64_t i = 1; i < len; ++i) max = std::max(max, px[base + i * inner]);
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += std::exp(double(px[base + i * inner]) - max);
      for (int64_t i = 0; i < len; ++i)
        py[base + i * inner] = float(std::exp(double(px[base + i * inner]) - max) / sum);
    }
  ++kernelCounts().softmax;
}

/// Host memory for the three regions of the plan.
class FusedFunction final : public test::PlannedIRFunction {
 public:
  explicit FusedFunction(const IRFunction& ir) : PlannedIRFunction(ir, "fused") {}

 private:
  bool runOwnKernel(const Instruction& inst, const std::vector<ConstTensorRef>& ins,
                    const std::vector<TensorRef>& outs) override {
    if (inst.kind == OpKind::Gemm) {
      gemmKernel(inst.attrs, ins[0], ins[1], ins[2], outs[0]);
      return true;
    }
    if (inst.kind == OpKind::Softmax) {
      softmaxKernel(inst.attrs, ins[0], outs[0]);
      return true;
    }
    return false;
  }
};

class FusedBackend final : public Backend {
 public:
  std::string name() const override { return "fused"; }

  bool shouldLower(const Node& node) const override {
    if (!keepsHighLevel(node.kind())) return true;
    NodeInfo info = NodeInfo::of(node);
    return !(allF32(info.inputTypes) && allF32(info.resultTypes));
  }

  // `refuse=OP` makes supports() refuse one op kind, so that a test can
  // partition a model between this backend and a fallback.
  Error setOption(const std::string& key, const std::string& value) override {
    if (key != "refuse") return makeError("fused: unknown backend option '", key, "' (known: refuse)");
    auto kind = opKindFromName(value);
    if (!kind) return makeError("fused: refuse: unknown op '", value, "'");
    refused_ = *kind;
    return Error::success();
  }
  std::vector<BackendOption> options() const override {
    return {{"refuse", "OP: supports() refuses this op kind (to test partitioning)"}};
  }

  bool supports(const NodeInfo& info) const override {
    if (refused_ && info.kind == *refused_) return false;
    if (keepsHighLevel(info.kind)) return allF32(info.inputTypes) && allF32(info.resultTypes);
    if (opInfo(info.kind).category != OpCategory::Primitive) return false;
    return kernelSupports(info.kind, info.inputTypes, info.resultTypes);
  }

  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    for (const Instruction& inst : ir.instructions())
      if (opInfo(inst.kind).category == OpCategory::HighLevel && !keepsHighLevel(inst.kind))
        return makeError("fused: instruction '", inst.name, "' (", opName(inst.kind),
                         ") is high-level but was not kept");
    return std::unique_ptr<CompiledFunction>(new FusedFunction(ir));
  }

 private:
  std::optional<OpKind> refused_;
};

}  // namespace

std::unique_ptr<Backend> createFusedBackend() { return std::make_unique<FusedBackend>(); }

}  // namespace fused
