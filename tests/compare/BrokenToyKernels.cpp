// The toy example's kernels (examples/oot-backend/ToyKernels.cpp, compiled
// here unchanged) with one deliberate bug for tests/compare: the fast f32 Sub
// computes its last element from the operands of the element before it, an
// off-by-one that `ember compare` must pin on the Sub node.
#define runFastKernel runShippedFastKernel
#include "ToyKernels.cpp"
#undef runFastKernel

namespace toy {

void runFastKernel(OpKind kind, const ember::Attributes& attrs, std::span<const ember::ConstTensorRef> inputs,
                   std::span<const ember::TensorRef> outputs) {
  runShippedFastKernel(kind, attrs, inputs, outputs);
  const int64_t n = outputs[0].numElements();
  if (kind != OpKind::Sub || n < 2) return;
  // Same operand strides as the shipped kernel: 0 for a single-element operand.
  const int64_t sa = inputs[0].numElements() == n ? 1 : 0, sb = inputs[1].numElements() == n ? 1 : 0;
  const float *a = inputs[0].as<float>(), *b = inputs[1].as<float>();
  outputs[0].as<float>()[n - 1] = a[(n - 2) * sa] - b[(n - 2) * sb];
}

}  // namespace toy
