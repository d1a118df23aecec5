// Reductions: ReduceSum/Max/Min/Prod over sorted axes, ArgMax/ArgMin, TopK.
#include <algorithm>
#include <numeric>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// Accumulates every input element into the output element it reduces to:
/// the output is addressed with the input's strides, zeroed on reduced axes.
template <typename T, typename Combine>
void reduce(const ConstTensorRef& in, const TensorRef& out, const std::vector<int64_t>& axes, T identity,
            Combine combine) {
  const Dims& dims = in.type.dims;
  Dims keptDims = dims;
  for (int64_t a : axes) keptDims[size_t(a)] = 1;
  std::array<Dims, 1> strides = {broadcastStrides(keptDims, dims)};
  const T* pi = in.as<T>();
  T* po = out.as<T>();
  std::fill(po, po + out.numElements(), identity);
  forEachOffset(dims, strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    po[off[0]] = combine(po[off[0]], pi[i]);
  });
}

template <typename T>
void runReduce(OpKind kind, const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  // ReduceSum, ReduceMax, ReduceMin and ReduceProd share one attribute struct.
  const std::vector<int64_t> axes = ReduceSumAttrs::from(attrs).axes;
  constexpr bool isFloat = std::is_floating_point_v<T>;
  constexpr T kMax = isFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  constexpr T kMin = isFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  // NaN propagates through max and min, as in numpy.
  auto nanAware = [](T acc, T v, bool takeV) {
    if constexpr (isFloat)
      if (std::isnan(v)) return v;
    return takeV ? v : acc;
  };
  switch (kind) {
    case OpKind::ReduceSum:
      if constexpr (isFloat)
        reduce<T>(in, out, axes, T(0), [](T a, T v) { return a + v; });
      else
        reduce<T>(in, out, axes, T(0), wrapAdd<T>);
      break;
    case OpKind::ReduceProd:
      if constexpr (isFloat)
        reduce<T>(in, out, axes, T(1), [](T a, T v) { return a * v; });
      else
        reduce<T>(in, out, axes, T(1), wrapMul<T>);
      break;
    case OpKind::ReduceMax:
      reduce<T>(in, out, axes, kMin, [&](T a, T v) { return nanAware(a, v, v > a); });
      break;
    case OpKind::ReduceMin:
      reduce<T>(in, out, axes, kMax, [&](T a, T v) { return nanAware(a, v, v < a); });
      break;
    default:
      assert(false && "not a reduction");
  }
}

/// Splits `dims` around `axis` into outer x axis x inner.
struct AxisSplit {
  int64_t outer, extent, inner;
};
AxisSplit splitAt(const Dims& dims, size_t axis) {
  return {product(dims, 0, axis), dims[axis], product(dims, axis + 1)};
}

/// ArgMax/ArgMin: the first (or last) extreme along the axis. NaN counts as
/// the extreme, as numpy's argmax does.
template <typename T>
void argReduce(bool isMax, const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const ArgMaxAttrs a = ArgMaxAttrs::from(attrs);  // ArgMinAttrs is the same struct
  size_t axis = normalizeAxis(a.axis, in.type.rank());
  bool selectLast = a.selectLastIndex != 0;
  AxisSplit s = splitAt(in.type.dims, axis);
  const T* pi = in.as<T>();
  int64_t* po = out.as<int64_t>();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const T* line = pi + o * s.extent * s.inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < s.extent; ++k) {
        T v = line[k * s.inner], b = line[best * s.inner];
        bool better = isMax ? v > b : v < b;
        bool tie = v == b;
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(b)) continue;  // the first NaN wins
          if (std::isnan(v)) better = true;
        }
        if (better || (tie && selectLast)) best = k;
      }
      po[o * s.inner + i] = best;
    }
}

/// A total order for sorting: NaN above every number.
template <typename T>
bool lessTotal(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <typename T>
void topK(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& values,
          const TensorRef& indices) {
  const TopKAttrs a = TopKAttrs::from(attrs);
  size_t axis = normalizeAxis(a.axis, in.type.rank());
  bool largest = a.largest != 0;
  int64_t k = a.k;
  AxisSplit s = splitAt(in.type.dims, axis);
  const T* pi = in.as<T>();
  T* pv = values.as<T>();
  int64_t* px = indices.as<int64_t>();
  std::vector<int64_t> order(size_t(s.extent));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const T* line = pi + o * s.extent * s.inner + i;
      std::iota(order.begin(), order.end(), 0);
      // Stable: equal values keep the lower index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? lessTotal(line[b * s.inner], line[a * s.inner])
                       : lessTotal(line[a * s.inner], line[b * s.inner]);
      });
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * s.inner + i;
        pv[dst] = line[order[size_t(j)] * s.inner];
        px[dst] = order[size_t(j)];
      }
    }
}

}  // namespace

Error runReduction(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  bool done = visitNumeric(in[0].type.kind, [&]<typename T>() {
    switch (kind) {
      case OpKind::ArgMax:
        argReduce<T>(true, attrs, in[0], out[0]);
        break;
      case OpKind::ArgMin:
        argReduce<T>(false, attrs, in[0], out[0]);
        break;
      case OpKind::TopK:
        topK<T>(attrs, in[0], out[0], out[1]);
        break;
      default:
        runReduce<T>(kind, attrs, in[0], out[0]);
    }
  });
  if (!done) return makeError(opName(kind), ": no reference kernel for ", in[0].type.str());
  return Error::success();
}

}  // namespace ember::kernels
