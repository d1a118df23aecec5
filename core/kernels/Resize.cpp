// Resize (ONNX semantics): nearest and separable linear interpolation on any
// number of axes.
//
// Every output coordinate maps to an input coordinate by the coordinate
// transformation mode; like ONNX's reference implementation, the input is
// extended by its edge values, i.e. the coordinate is clamped to [0, L-1].
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "KernelUtil.h"

namespace ember::kernels {
namespace {

/// Input coordinate of output index x on an axis resized from `in` to `out`
/// elements with scale `scale` (out / in unless given). As in ONNX's
/// reference, align_corners spans the unrounded resized length in * scale
/// when scales are given.
double originalCoordinate(const std::string& mode, int64_t x, int64_t in, int64_t out, double scale,
                          double resizedLength) {
  double xr = double(x);
  if (mode == "half_pixel") return (xr + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resizedLength == 1 ? 0.0 : xr * double(in - 1) / (resizedLength - 1);
  if (mode == "asymmetric") return xr / scale;
  assert(mode == "tf_half_pixel_for_nn");
  return (xr + 0.5) / scale;
}

int64_t roundNearest(const std::string& mode, double x) {
  if (mode == "floor") return int64_t(std::floor(x));
  if (mode == "ceil") return int64_t(std::ceil(x));
  double fl = std::floor(x);
  double frac = x - fl;
  if (frac == 0.5) return int64_t(mode == "round_prefer_ceil" ? fl + 1 : fl);
  return int64_t(frac < 0.5 ? fl : fl + 1);
}

/// One axis of a linear resize: out[o] = (1 - w[o]) * in[i0[o]] + w[o] * in[i1[o]].
struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
};

struct AxisMapping {
  std::string transform, nearestMode;
  const std::vector<double>* scales = nullptr;

  double coordinate(size_t axis, int64_t x, int64_t in, int64_t out) const {
    double scale = scales ? (*scales)[axis] : double(out) / double(in);
    double resizedLength = scales ? double(in) * scale : double(out);
    double c = originalCoordinate(transform, x, in, out, scale, resizedLength);
    // Keep huge or NaN coordinates (absurd scales) away from the integer casts.
    if (!(c > 0)) return 0;
    return std::min(c, double(in - 1));
  }
};

void resizeNearest(const AxisMapping& map, const ConstTensorRef& in, const TensorRef& out) {
  const Dims& inDims = in.type.dims;
  const Dims& outDims = out.type.dims;
  size_t rank = inDims.size();
  Dims inStrides = in.type.strides();
  // Per axis, the input offset of each output index.
  std::vector<std::vector<int64_t>> offsets(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < outDims[d]; ++o) {
      int64_t i = roundNearest(map.nearestMode, map.coordinate(d, o, inDims[d], outDims[d]));
      offsets[d].push_back(std::clamp<int64_t>(i, 0, inDims[d] - 1) * inStrides[d]);
    }
  visitBySize(in.type.kind, [&]<typename W>() {
    const W* pi = in.as<W>();
    W* po = out.as<W>();
    std::array<int64_t, kMaxRank> index{};
    for (int64_t i = 0, n = out.numElements(); i < n; ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) offset += offsets[d][size_t(index[d])];
      po[i] = pi[offset];
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < outDims[d]) break;
        index[d] = 0;
      }
    }
  });
}

/// Separable: one 1-D pass per axis whose size or mapping changes, innermost
/// axis first (as ONNX's reference recursion does).
void resizeLinear(const AxisMapping& map, const ConstTensorRef& in, const TensorRef& out) {
  Dims dims = in.type.dims;
  const Dims& outDims = out.type.dims;
  std::vector<float> current(in.as<float>(), in.as<float>() + in.numElements());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t inSize = dims[d], outSize = outDims[d];
    if (outSize == 0 || inSize == 0) {
      current.clear();
      dims[d] = outSize;
      continue;
    }
    LinearTaps taps;
    bool identity = inSize == outSize;
    for (int64_t o = 0; o < outSize; ++o) {
      double c = map.coordinate(d, o, inSize, outSize);
      int64_t i0 = int64_t(std::floor(c));
      taps.i0.push_back(i0);
      taps.i1.push_back(std::min(i0 + 1, inSize - 1));
      taps.w.push_back(float(c - double(i0)));
      identity = identity && i0 == o && taps.w.back() == 0;
    }
    if (identity) continue;
    int64_t outer = product(dims, 0, d), inner = product(dims, d + 1);
    std::vector<float> next(size_t(outer * outSize * inner));
    for (int64_t p = 0; p < outer; ++p)
      for (int64_t o = 0; o < outSize; ++o) {
        const float* a = current.data() + (p * inSize + taps.i0[size_t(o)]) * inner;
        const float* b = current.data() + (p * inSize + taps.i1[size_t(o)]) * inner;
        float w = taps.w[size_t(o)];
        float* dst = next.data() + (p * outSize + o) * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] = (1.0f - w) * a[k] + w * b[k];
      }
    current = std::move(next);
    dims[d] = outSize;
  }
  std::copy(current.begin(), current.end(), out.as<float>());
}

}  // namespace

Error runResize(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  AxisMapping map;
  map.transform = attrs.getString("coordinate_transformation_mode");
  map.nearestMode = attrs.getString("nearest_mode");
  std::vector<double> scales;
  if (attrs.has("scales")) {
    scales = attrs.getFloats("scales");
    map.scales = &scales;
  }
  if (out[0].numElements() == 0) return Error::success();
  if (attrs.getString("mode") == "nearest") {
    resizeNearest(map, in[0], out[0]);
  } else {
    if (in[0].type.kind != ElemKind::F32)
      return makeError("Resize: linear mode needs f32, got ", in[0].type.str());
    resizeLinear(map, in[0], out[0]);
  }
  return Error::success();
}

}  // namespace ember::kernels
