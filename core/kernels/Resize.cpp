// Resize (ONNX semantics): nearest and separable linear and cubic
// interpolation on any number of axes; tf_crop_and_resize samples a box.
//
// Every output coordinate maps to an input coordinate by the coordinate
// transformation mode; like ONNX's reference implementation, the input is
// extended by its edge values, i.e. the coordinate is clamped to [0, L-1].
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// Input coordinate of output index x on an axis resized from `in` to `out`
/// elements with scale `scale` (out / in unless given). align_corners spans
/// the output length, as the spec's length_resized, PyTorch and ONNX Runtime
/// do (onnx 1.12's reference uses the unrounded in * scale instead). The
/// arithmetic is float's, as ONNX Runtime's: in double, a nearest coordinate
/// that lands on a rounding boundary (x / 0.4f) can pick the neighbouring pixel.
double originalCoordinate(ResizeCoordinateTransformationMode mode, int64_t x, int64_t in, int64_t out,
                          float scale) {
  using enum ResizeCoordinateTransformationMode;
  const float xr = float(x);
  if (mode == HalfPixel) return (xr + 0.5f) / scale - 0.5f;
  if (mode == PytorchHalfPixel) return out > 1 ? (xr + 0.5f) / scale - 0.5f : 0.0f;
  if (mode == AlignCorners) return out == 1 ? 0.0f : xr * float(in - 1) / float(out - 1);
  if (mode == Asymmetric) return xr / scale;
  assert(mode == TfHalfPixelForNn);
  return (xr + 0.5f) / scale;
}

int64_t roundNearest(ResizeNearestMode mode, double x) {
  if (mode == ResizeNearestMode::Floor) return int64_t(std::floor(x));
  if (mode == ResizeNearestMode::Ceil) return int64_t(std::ceil(x));
  double fl = std::floor(x);
  double frac = x - fl;
  if (frac == 0.5) return int64_t(mode == ResizeNearestMode::RoundPreferCeil ? fl + 1 : fl);
  return int64_t(frac < 0.5 ? fl : fl + 1);
}

/// One axis of a separable resize: out[o] = sum_k weight[o][k] * in[index[o][k]]
/// over `width` taps per output (2 linear, 4 cubic).
struct Taps {
  size_t width = 2;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;  ///< per output: takes the extrapolation value
};

/// ONNX's cubic convolution weights for the 4 taps around a coordinate with
/// fractional part `r`, coefficient `a`.
std::array<double, 4> cubicWeights(double r, double a) {
  auto outer = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  auto inner = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };        // |x| <= 1
  return {outer(r + 1), inner(r), inner(1 - r), outer(2 - r)};
}

struct AxisMapping {
  ResizeCoordinateTransformationMode transform{};
  ResizeNearestMode nearestMode{};
  const std::vector<double>* scales = nullptr;
  /// tf_crop_and_resize: [starts..., ends...] in normalised input coordinates.
  const std::vector<double>* roi = nullptr;

  bool cropping() const { return roi != nullptr; }

  /// tf_crop_and_resize's input coordinate of output index x on `axis`.
  double cropCoordinate(size_t axis, int64_t x, int64_t in, int64_t out) const {
    const float start = float((*roi)[axis]), end = float((*roi)[axis + roi->size() / 2]);
    if (out == 1) return 0.5f * (start + end) * float(in - 1);
    return start * float(in - 1) + float(x) * (end - start) * float(in - 1) / float(out - 1);
  }
  /// Whether output index x maps outside the input (tf_crop_and_resize:
  /// such outputs take the extrapolation value).
  bool outside(size_t axis, int64_t x, int64_t in, int64_t out) const {
    if (!cropping()) return false;
    const double c = cropCoordinate(axis, x, in, out);
    return !(c >= 0 && c <= double(in - 1));
  }

  /// The input coordinate, not clamped (cubic taps see past the edges).
  double rawCoordinate(size_t axis, int64_t x, int64_t in, int64_t out) const {
    if (cropping()) {
      const double c = cropCoordinate(axis, x, in, out);
      return std::isfinite(c) ? std::clamp(c, -double(in) - 4, 2 * double(in) + 4) : 0;
    }
    const float scale = scales ? float((*scales)[axis]) : float(out) / float(in);
    // An axis that keeps its size at scale 1 is left alone (tf_half_pixel_for_nn
    // would otherwise shift it by half a pixel), as ONNX Runtime does.
    if (in == out && scale == 1) return double(x);
    double c = originalCoordinate(transform, x, in, out, scale);
    // Keep huge or NaN coordinates (absurd scales) away from the integer casts.
    if (!std::isfinite(c)) return 0;
    return std::clamp(c, -double(in) - 4, 2 * double(in) + 4);
  }
  /// The input coordinate clamped to [0, in - 1] (edge extension).
  double coordinate(size_t axis, int64_t x, int64_t in, int64_t out) const {
    double c = rawCoordinate(axis, x, in, out);
    if (!(c > 0)) return 0;
    return std::min(c, double(in - 1));
  }
};

void resizeNearest(const AxisMapping& map, const ConstTensorRef& in, const TensorRef& out,
                   float extrapolation) {
  const Dims& inDims = in.type.dims;
  const Dims& outDims = out.type.dims;
  size_t rank = inDims.size();
  Dims inStrides = in.type.strides();
  // Per axis, the input offset of each output index (-1: outside, extrapolated).
  std::vector<std::vector<int64_t>> offsets(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < outDims[d]; ++o) {
      int64_t i = roundNearest(map.nearestMode, map.coordinate(d, o, inDims[d], outDims[d]));
      const bool outside = map.outside(d, o, inDims[d], outDims[d]);
      offsets[d].push_back(outside ? -1 : std::clamp<int64_t>(i, 0, inDims[d] - 1) * inStrides[d]);
    }
  visitBySize(in.type.kind, [&]<typename W>() {
    const W* pi = in.as<W>();
    W* po = out.as<W>();
    // The extrapolation value's bits as a word of the element size (only f32 crops: type rule).
    W fill{};
    if constexpr (sizeof(W) == sizeof(float)) std::memcpy(&fill, &extrapolation, sizeof(W));
    forEachIndex(outDims, [&](int64_t i, const std::array<int64_t, kMaxRank>& index) {
      int64_t offset = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t axisOffset = offsets[d][size_t(index[d])];
        outside = outside || axisOffset < 0;
        offset += axisOffset;
      }
      po[i] = outside ? fill : pi[offset];
    });
  });
}

/// The taps of one axis. Linear: the two neighbours of the clamped
/// coordinate. Cubic: the four around the raw coordinate, indices clamped to
/// the edge; with exclude_outside, taps outside the input get weight 0 and
/// the rest are renormalised.
Taps axisTaps(const AxisMapping& map, size_t d, int64_t inSize, int64_t outSize, bool cubic, double a,
              bool excludeOutside) {
  Taps taps;
  taps.width = cubic ? 4 : 2;
  for (int64_t o = 0; o < outSize; ++o) {
    taps.outside.push_back(map.outside(d, o, inSize, outSize));
    if (!cubic) {
      double c = map.coordinate(d, o, inSize, outSize);
      int64_t i0 = int64_t(std::floor(c));
      double w = c - double(i0);
      taps.index.insert(taps.index.end(), {i0, std::min(i0 + 1, inSize - 1)});
      taps.weight.insert(taps.weight.end(), {1 - w, w});
      continue;
    }
    double c = map.rawCoordinate(d, o, inSize, outSize);
    int64_t base = int64_t(std::floor(c));
    std::array<double, 4> w = cubicWeights(c - double(base), a);
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t i = base - 1 + k;
      if (excludeOutside && (i < 0 || i >= inSize)) w[size_t(k)] = 0;
      sum += w[size_t(k)];
    }
    for (int k = 0; k < 4; ++k) {
      taps.index.push_back(std::clamp<int64_t>(base - 1 + k, 0, inSize - 1));
      taps.weight.push_back(excludeOutside && sum != 0 ? w[size_t(k)] / sum : w[size_t(k)]);
    }
  }
  return taps;
}

/// Separable: one 1-D pass per axis whose size or mapping changes, innermost
/// axis first (as ONNX's reference recursion does).
template <typename T>
void resizeSeparable(const AxisMapping& map, bool cubic, double a, bool excludeOutside, T extrapolation,
                     const ConstTensorRef& in, const TensorRef& out) {
  Dims dims = in.type.dims;
  const Dims& outDims = out.type.dims;
  std::vector<T> current(in.as<T>(), in.as<T>() + in.numElements());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t inSize = dims[d], outSize = outDims[d];
    if (outSize == 0 || inSize == 0) {
      current.clear();
      dims[d] = outSize;
      continue;
    }
    Taps taps = axisTaps(map, d, inSize, outSize, cubic, a, excludeOutside);
    // An axis that maps every output onto its own input with weight 1 is skipped.
    bool identity = inSize == outSize;
    for (int64_t o = 0; o < outSize && identity; ++o) {
      identity = !taps.outside[size_t(o)];
      for (size_t k = 0; k < taps.width; ++k) {
        double w = taps.weight[size_t(o) * taps.width + k];
        identity = identity && (w == 0 || (w == 1 && taps.index[size_t(o) * taps.width + k] == o));
      }
    }
    if (identity) continue;
    int64_t outer = product(dims, 0, d), inner = product(dims, d + 1);
    std::vector<T> next(size_t(outer * outSize * inner));
    for (int64_t p = 0; p < outer; ++p)
      for (int64_t o = 0; o < outSize; ++o) {
        T* dst = next.data() + (p * outSize + o) * inner;
        if (taps.outside[size_t(o)]) {
          std::fill(dst, dst + inner, extrapolation);
          continue;
        }
        if (taps.width == 2) {
          // Linear keeps its formula in T (f32: bit-identical to earlier results).
          const T* x0 = current.data() + (p * inSize + taps.index[size_t(o) * 2]) * inner;
          const T* x1 = current.data() + (p * inSize + taps.index[size_t(o) * 2 + 1]) * inner;
          T w = T(taps.weight[size_t(o) * 2 + 1]);
          for (int64_t k = 0; k < inner; ++k) dst[k] = (T(1) - w) * x0[k] + w * x1[k];
          continue;
        }
        for (int64_t k = 0; k < inner; ++k) {
          double sum = 0;
          for (size_t t = 0; t < taps.width; ++t)
            sum += taps.weight[size_t(o) * taps.width + t] *
                   double(current[size_t((p * inSize + taps.index[size_t(o) * taps.width + t]) * inner + k)]);
          dst[k] = T(sum);
        }
      }
    current = std::move(next);
    dims[d] = outSize;
  }
  std::copy(current.begin(), current.end(), out.as<T>());
}

}  // namespace

Error runResize(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  if (kind == OpKind::GridSample) return gridSample(attrs, in, out);
  if (kind == OpKind::RoiAlign) return roiAlign(attrs, in, out);
  const ResizeAttrs attr = ResizeAttrs::from(attrs);
  AxisMapping map;
  map.transform = attr.coordinateTransformationMode;
  map.nearestMode = attr.nearestMode;
  if (attr.scales) map.scales = &*attr.scales;
  if (map.transform == ResizeCoordinateTransformationMode::TfCropAndResize) map.roi = &attr.roi.value();
  const double extrapolationValue = attr.extrapolationValue.value_or(0.0);
  if (out[0].numElements() == 0) return Error::success();
  if (attr.mode == ResizeMode::Nearest) {
    resizeNearest(map, in[0], out[0], float(extrapolationValue));
  } else {
    const bool cubic = attr.mode == ResizeMode::Cubic;
    const double a = attr.cubicCoeffA.value_or(-0.75);
    const bool excludeOutside = attr.excludeOutside.value_or(0) != 0;
    const bool done = visitFloat(in[0].type.kind, [&]<typename T>() {
      resizeSeparable<T>(map, cubic, a, excludeOutside, T(extrapolationValue), in[0], out[0]);
    });
    if (!done)
      return makeError("Resize: ", toString(attr.mode), " mode needs f32 or f64, got ", in[0].type.str());
  }
  return Error::success();
}

}  // namespace ember::kernels
