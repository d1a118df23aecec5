// Fast paths of the toy backend: f32 elementwise ops over same-shape operands
// (or a scalar operand) and 2-D f32 MatMul, written so that the compiler
// vectorises the inner loops.
#include "ToyKernels.h"

#include <algorithm>
#include <cstdint>

namespace toy {
namespace {

using ember::ElemKind;
using ember::OpKind;

bool isBinary(OpKind kind) {
  switch (kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Max:
    case OpKind::Min:
      return true;
    default:
      return false;
  }
}

bool isUnary(OpKind kind) { return kind == OpKind::Relu || kind == OpKind::Neg || kind == OpKind::Abs; }

/// out[i] = op(a[i or 0], b[i or 0]): the stride of a scalar operand is 0.
template <typename Op>
void binaryLoop(float* out, const float* a, int64_t aStride, const float* b, int64_t bStride, int64_t n,
                Op op) {
  if (aStride && bStride) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (bStride) {
    const float x = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(x, b[i]);
  } else if (aStride) {
    const float y = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], y);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[0], b[0]);
  }
}

template <typename Op>
void unaryLoop(float* out, const float* in, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
}

/// C[M,N] = A[M,K] * B[K,N], i-k-j order: the inner loop streams rows of B and C.
void matmul(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  std::fill(c, c + m * n, 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const float x = a[i * k + p];
      const float* bRow = b + p * n;
      float* cRow = c + i * n;
      for (int64_t j = 0; j < n; ++j) cRow[j] += x * bRow[j];
    }
}

bool allF32(std::span<const ember::Type> types) {
  return std::all_of(types.begin(), types.end(),
                     [](const ember::Type& t) { return t.kind == ElemKind::F32; });
}

}  // namespace

bool hasFastKernel(OpKind kind, std::span<const ember::Type> inputs, std::span<const ember::Type> outputs) {
  if (!allF32(inputs) || !allF32(outputs) || outputs.size() != 1) return false;
  const ember::Type& out = outputs[0];
  if (isBinary(kind) && inputs.size() == 2) {
    // Same shape as the result, or a single element: no general broadcasting.
    for (const ember::Type& in : inputs)
      if (in.dims != out.dims && in.numElements() != 1) return false;
    return true;
  }
  if (isUnary(kind)) return inputs.size() == 1;
  if (kind == OpKind::MatMul) return inputs.size() == 2 && inputs[0].rank() == 2 && inputs[1].rank() == 2;
  return false;
}

void runFastKernel(OpKind kind, const ember::Attributes& /*attrs*/,
                   std::span<const ember::ConstTensorRef> inputs, std::span<const ember::TensorRef> outputs) {
  float* out = outputs[0].as<float>();
  const int64_t n = outputs[0].numElements();
  if (kind == OpKind::MatMul) {
    const ember::Dims& a = inputs[0].type.dims;
    matmul(out, inputs[0].as<float>(), inputs[1].as<float>(), a[0], a[1], inputs[1].type.dims[1]);
    return;
  }
  if (inputs.size() == 1) {
    const float* in = inputs[0].as<float>();
    switch (kind) {
      case OpKind::Relu:
        unaryLoop(out, in, n, [](float x) { return x > 0 ? x : 0.0f; });
        break;
      case OpKind::Neg:
        unaryLoop(out, in, n, [](float x) { return -x; });
        break;
      case OpKind::Abs:
        unaryLoop(out, in, n, [](float x) { return x < 0 ? -x : x; });
        break;
      default:
        break;
    }
    return;
  }
  const float *a = inputs[0].as<float>(), *b = inputs[1].as<float>();
  const int64_t sa = inputs[0].numElements() == n ? 1 : 0, sb = inputs[1].numElements() == n ? 1 : 0;
  switch (kind) {
    case OpKind::Add:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x + y; });
      break;
    case OpKind::Sub:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x - y; });
      break;
    case OpKind::Mul:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x * y; });
      break;
    case OpKind::Div:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x / y; });
      break;
    case OpKind::Max:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x > y ? x : y; });
      break;
    case OpKind::Min:
      binaryLoop(out, a, sa, b, sb, n, [](float x, float y) { return x < y ? x : y; });
      break;
    default:
      break;
  }
}

}  // namespace toy
