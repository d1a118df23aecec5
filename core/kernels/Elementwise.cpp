// Elementwise kernels: binary ops with numpy broadcasting, Select, unary math,
// Clip and Cast.
#include <algorithm>
#include <cmath>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// out[i] = f(a[ia], b[ib]) with a and b broadcast to out's dims.
template <typename T, typename R, typename F>
void binaryLoop(const ConstTensorRef& a, const ConstTensorRef& b, const TensorRef& out, F f) {
  const T* pa = a.as<T>();
  const T* pb = b.as<T>();
  R* po = out.as<R>();
  const Dims& dims = out.type.dims;
  if (a.type.dims == dims && b.type.dims == dims) {
    for (int64_t i = 0, n = out.numElements(); i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  std::array<Dims, 2> strides = {broadcastStrides(a.type.dims, dims), broadcastStrides(b.type.dims, dims)};
  forEachOffset(dims, strides,
                [&](int64_t i, const std::array<int64_t, 2>& off) { po[i] = f(pa[off[0]], pb[off[1]]); });
}

template <typename T>
T propagatingMax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? b : a;
}
template <typename T>
T propagatingMin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return b < a ? b : a;
}

/// x^y in wrapping integer arithmetic (square and multiply); a negative
/// exponent gives 1 / x^|y| truncated toward zero: 0 unless x is 1 or -1.
template <typename T>
T integerPow(T x, T y) {
  if (y < 0) return x == 1 ? T(1) : x == -1 ? T((y & 1) ? -1 : 1) : T(0);
  T result = 1;
  for (T base = x; y > 0; y >>= 1) {
    if (y & 1) result = wrapMul<T>(result, base);
    base = wrapMul<T>(base, base);
  }
  return result;
}

/// Arithmetic that keeps the element kind: float math for float, wrapping
/// math for integers.
template <typename T>
bool runArithmetic(OpKind kind, const ConstTensorRef& a, const ConstTensorRef& b, const TensorRef& out) {
  constexpr bool isFloat = std::is_floating_point_v<T>;
  switch (kind) {
    case OpKind::Add:
      if constexpr (isFloat)
        binaryLoop<T, T>(a, b, out, [](T x, T y) { return x + y; });
      else
        binaryLoop<T, T>(a, b, out, wrapAdd<T>);
      return true;
    case OpKind::Sub:
      if constexpr (isFloat)
        binaryLoop<T, T>(a, b, out, [](T x, T y) { return x - y; });
      else
        binaryLoop<T, T>(a, b, out, wrapSub<T>);
      return true;
    case OpKind::Mul:
      if constexpr (isFloat)
        binaryLoop<T, T>(a, b, out, [](T x, T y) { return x * y; });
      else
        binaryLoop<T, T>(a, b, out, wrapMul<T>);
      return true;
    case OpKind::Div:
      if constexpr (isFloat)
        binaryLoop<T, T>(a, b, out, [](T x, T y) { return x / y; });
      else
        binaryLoop<T, T>(a, b, out, safeDiv<T>);
      return true;
    case OpKind::Pow:
      if constexpr (isFloat)
        binaryLoop<T, T>(a, b, out, [](T x, T y) { return std::pow(x, y); });
      else
        binaryLoop<T, T>(a, b, out, integerPow<T>);
      return true;
    case OpKind::Max:
      binaryLoop<T, T>(a, b, out, propagatingMax<T>);
      return true;
    case OpKind::Min:
      binaryLoop<T, T>(a, b, out, propagatingMin<T>);
      return true;
    case OpKind::Equal:
      binaryLoop<T, uint8_t>(a, b, out, [](T x, T y) -> uint8_t { return x == y; });
      return true;
    case OpKind::Less:
      binaryLoop<T, uint8_t>(a, b, out, [](T x, T y) -> uint8_t { return x < y; });
      return true;
    case OpKind::LessEqual:
      binaryLoop<T, uint8_t>(a, b, out, [](T x, T y) -> uint8_t { return x <= y; });
      return true;
    case OpKind::Greater:
      binaryLoop<T, uint8_t>(a, b, out, [](T x, T y) -> uint8_t { return x > y; });
      return true;
    case OpKind::GreaterEqual:
      binaryLoop<T, uint8_t>(a, b, out, [](T x, T y) -> uint8_t { return x >= y; });
      return true;
    default:
      return false;
  }
}

/// Logic on bool bytes; any non-zero byte counts as true.
bool runLogic(OpKind kind, const ConstTensorRef& a, const ConstTensorRef& b, const TensorRef& out) {
  using B = uint8_t;
  switch (kind) {
    case OpKind::And:
      binaryLoop<B, B>(a, b, out, [](B x, B y) -> B { return x && y; });
      return true;
    case OpKind::Or:
      binaryLoop<B, B>(a, b, out, [](B x, B y) -> B { return x || y; });
      return true;
    case OpKind::Xor:
      binaryLoop<B, B>(a, b, out, [](B x, B y) -> B { return (x != 0) != (y != 0); });
      return true;
    case OpKind::Equal:
      binaryLoop<B, B>(a, b, out, [](B x, B y) -> B { return (x != 0) == (y != 0); });
      return true;
    default:
      return false;
  }
}

/// Select moves whole elements, so it only needs the element size.
void runSelect(Inputs in, const TensorRef& out) {
  const Dims& dims = out.type.dims;
  std::array<Dims, 3> strides = {broadcastStrides(in[0].type.dims, dims),
                                 broadcastStrides(in[1].type.dims, dims),
                                 broadcastStrides(in[2].type.dims, dims)};
  visitBySize(out.type.kind, [&]<typename W>() {
    const uint8_t* cond = in[0].as<uint8_t>();
    const W* lhs = in[1].as<W>();
    const W* rhs = in[2].as<W>();
    W* po = out.as<W>();
    forEachOffset(dims, strides, [&](int64_t i, const std::array<int64_t, 3>& off) {
      po[i] = cond[off[0]] ? lhs[off[1]] : rhs[off[2]];
    });
  });
}

template <typename T, typename F>
void unaryLoop(const ConstTensorRef& in, const TensorRef& out, F f) {
  const T* pi = in.as<T>();
  T* po = out.as<T>();
  for (int64_t i = 0, n = out.numElements(); i < n; ++i) po[i] = f(pi[i]);
}

template <typename T>
bool runUnaryInteger(OpKind kind, const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  switch (kind) {
    case OpKind::Neg:
      unaryLoop<T>(in, out, [](T x) { return wrapSub<T>(0, x); });
      return true;
    case OpKind::Abs:
      unaryLoop<T>(in, out, [](T x) { return x < 0 ? wrapSub<T>(0, x) : x; });
      return true;
    case OpKind::Sign:
      unaryLoop<T>(in, out, [](T x) { return T((x > 0) - (x < 0)); });
      return true;
    case OpKind::Relu:
      unaryLoop<T>(in, out, [](T x) { return x < 0 ? T(0) : x; });
      return true;
    case OpKind::Clip: {
      const ClipAttrs clip = ClipAttrs::from(attrs);
      T lo = saturatingCast<T>(clip.min), hi = saturatingCast<T>(clip.max);
      unaryLoop<T>(in, out, [lo, hi](T x) {
        T t = x < lo ? lo : x;
        return t > hi ? hi : t;
      });
      return true;
    }
    default:
      return false;
  }
}

/// Float math in the kind's own precision: F is float for f32 and double for
/// f64 (an f64 kernel never rounds through f32).
template <typename F>
bool runUnaryFloat(OpKind kind, const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  switch (kind) {
    case OpKind::Neg:
      unaryLoop<F>(in, out, [](F x) { return -x; });
      return true;
    case OpKind::Abs:
      unaryLoop<F>(in, out, [](F x) { return std::fabs(x); });
      return true;
    case OpKind::Exp:
      unaryLoop<F>(in, out, [](F x) { return std::exp(x); });
      return true;
    case OpKind::Log:
      unaryLoop<F>(in, out, [](F x) { return std::log(x); });
      return true;
    case OpKind::Sqrt:
      unaryLoop<F>(in, out, [](F x) { return std::sqrt(x); });
      return true;
    case OpKind::Reciprocal:
      unaryLoop<F>(in, out, [](F x) { return F(1) / x; });
      return true;
    case OpKind::Sin:
      unaryLoop<F>(in, out, [](F x) { return std::sin(x); });
      return true;
    case OpKind::Cos:
      unaryLoop<F>(in, out, [](F x) { return std::cos(x); });
      return true;
    case OpKind::Erf:
      unaryLoop<F>(in, out, [](F x) { return std::erf(x); });
      return true;
    case OpKind::Floor:
      unaryLoop<F>(in, out, [](F x) { return std::floor(x); });
      return true;
    case OpKind::Ceil:
      unaryLoop<F>(in, out, [](F x) { return std::ceil(x); });
      return true;
    // Sign keeps NaN and signed zero, as numpy does.
    case OpKind::Sign:
      unaryLoop<F>(in, out, [](F x) { return x > 0 ? F(1) : (x < 0 ? F(-1) : x); });
      return true;
    case OpKind::Tanh:
      unaryLoop<F>(in, out, [](F x) { return std::tanh(x); });
      return true;
    case OpKind::Sigmoid:
      unaryLoop<F>(in, out, [](F x) { return F(1) / (F(1) + std::exp(-x)); });
      return true;
    case OpKind::Relu:
      unaryLoop<F>(in, out, [](F x) { return x < 0 ? F(0) : x; });
      return true;
    case OpKind::Round:  // the default rounding mode: halves to even
      unaryLoop<F>(in, out, [](F x) { return std::nearbyint(x); });
      return true;
    case OpKind::Asin:
      unaryLoop<F>(in, out, [](F x) { return std::asin(x); });
      return true;
    case OpKind::Acos:
      unaryLoop<F>(in, out, [](F x) { return std::acos(x); });
      return true;
    case OpKind::Atan:
      unaryLoop<F>(in, out, [](F x) { return std::atan(x); });
      return true;
    case OpKind::Asinh:
      unaryLoop<F>(in, out, [](F x) { return std::asinh(x); });
      return true;
    case OpKind::Acosh:
      unaryLoop<F>(in, out, [](F x) { return std::acosh(x); });
      return true;
    case OpKind::Atanh:
      unaryLoop<F>(in, out, [](F x) { return std::atanh(x); });
      return true;
    case OpKind::Clip: {
      const ClipAttrs clip = ClipAttrs::from(attrs);
      F lo = F(clip.min), hi = F(clip.max);
      unaryLoop<F>(in, out, [lo, hi](F x) {
        F t = x < lo ? lo : x;  // min(max(x, lo), hi); NaN stays NaN
        return t > hi ? hi : t;
      });
      return true;
    }
    default:
      return false;
  }
}

/// Mod: fmod 1 keeps the dividend's sign (C), fmod 0 the divisor's (Python).
template <typename T>
void runMod(bool fmod, const ConstTensorRef& a, const ConstTensorRef& b, const TensorRef& out) {
  if constexpr (std::is_floating_point_v<T>) {
    binaryLoop<T, T>(a, b, out, [](T x, T y) { return std::fmod(x, y); });
  } else {
    binaryLoop<T, T>(a, b, out, [fmod](T x, T y) -> T {
      if (y == 0 || y == -1) return 0;  // also avoids MIN % -1, which overflows
      T r = x % y;
      if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = wrapAdd<T>(r, y);
      return r;
    });
  }
}

// ---- Cast ---------------------------------------------------------------------
// Integers and bools travel as int64 (exact), floats as double.

struct Scalar {
  bool isFloat;
  double f;
  int64_t i;
};

Scalar loadScalar(ElemKind kind, const void* data, int64_t idx) {
  switch (kind) {
    case ElemKind::F32:
      return {true, double(static_cast<const float*>(data)[idx]), 0};
    case ElemKind::F64:
      return {true, static_cast<const double*>(data)[idx], 0};
    case ElemKind::F16:
      return {true, double(halfToFloat(static_cast<const uint16_t*>(data)[idx])), 0};
    case ElemKind::BF16:
      return {true, double(bfloat16ToFloat(static_cast<const uint16_t*>(data)[idx])), 0};
    case ElemKind::I32:
      return {false, 0, static_cast<const int32_t*>(data)[idx]};
    case ElemKind::I64:
      return {false, 0, static_cast<const int64_t*>(data)[idx]};
    case ElemKind::Bool:
      return {false, 0, static_cast<const uint8_t*>(data)[idx] != 0};
    default:
      assert(false && "kernelSupports excludes this kind");
      return {false, 0, 0};
  }
}

void storeScalar(ElemKind kind, void* data, int64_t idx, const Scalar& s) {
  switch (kind) {
    case ElemKind::F32:
      static_cast<float*>(data)[idx] = s.isFloat ? float(s.f) : float(s.i);
      break;
    case ElemKind::F64:
      static_cast<double*>(data)[idx] = s.isFloat ? s.f : double(s.i);
      break;
    case ElemKind::F16:
      static_cast<uint16_t*>(data)[idx] = doubleToHalf(s.isFloat ? s.f : double(s.i));
      break;
    case ElemKind::BF16:
      static_cast<uint16_t*>(data)[idx] = doubleToBFloat16(s.isFloat ? s.f : double(s.i));
      break;
    // int64 -> int32 wraps (numpy's astype); float -> int saturates.
    case ElemKind::I32:
      static_cast<int32_t*>(data)[idx] =
          s.isFloat ? saturatingCast<int32_t>(s.f) : int32_t(uint32_t(uint64_t(s.i)));
      break;
    case ElemKind::I64:
      static_cast<int64_t*>(data)[idx] = s.isFloat ? saturatingCast<int64_t>(s.f) : s.i;
      break;
    case ElemKind::Bool:
      static_cast<uint8_t*>(data)[idx] = s.isFloat ? s.f != 0 : s.i != 0;
      break;
    default:
      assert(false && "kernelSupports excludes this kind");
  }
}

void runCast(const ConstTensorRef& in, const TensorRef& out) {
  // Element by element in order, so that an output aliasing a same-size input is safe.
  for (int64_t i = 0, n = out.numElements(); i < n; ++i)
    storeScalar(out.type.kind, out.data, i, loadScalar(in.type.kind, in.data, i));
}

}  // namespace

Error runElementwise(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  const TensorRef& result = out[0];
  ElemKind inKind = in[0].type.kind;
  bool done = false;
  switch (kind) {
    case OpKind::Select:
      runSelect(in, result);
      return Error::success();
    case OpKind::Cast:
      runCast(in[0], result);
      return Error::success();
    case OpKind::Not:
      unaryLoop<uint8_t>(in[0], result, [](uint8_t x) -> uint8_t { return x == 0; });
      return Error::success();
    case OpKind::IsNaN:
      done = visitFloat(inKind, [&]<typename T>() {
        const T* pi = in[0].as<T>();
        uint8_t* po = result.as<uint8_t>();
        for (int64_t i = 0, n = result.numElements(); i < n; ++i) po[i] = std::isnan(pi[i]);
      });
      break;
    case OpKind::Mod: {
      const bool fmod = ModAttrs::from(attrs).fmod != 0;
      done = visitNumeric(inKind, [&]<typename T>() { runMod<T>(fmod, in[0], in[1], result); });
      break;
    }
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
      done = runLogic(kind, in[0], in[1], result);
      break;
    default:
      if (in.size() == 2) {
        if (inKind == ElemKind::Bool) {
          done = runLogic(kind, in[0], in[1], result);
        } else {
          visitNumeric(inKind, [&]<typename T>() { done = runArithmetic<T>(kind, in[0], in[1], result); });
        }
      } else if (isFloat(inKind)) {
        visitFloat(inKind, [&]<typename T>() { done = runUnaryFloat<T>(kind, attrs, in[0], result); });
      } else {
        visitNumeric(inKind, [&]<typename T>() {
          if constexpr (std::is_integral_v<T>) done = runUnaryInteger<T>(kind, attrs, in[0], result);
        });
      }
  }
  if (!done) return makeError(opName(kind), ": no reference kernel for ", in[0].type.str());
  return Error::success();
}

}  // namespace ember::kernels
