// GridSample on NHWC with PyTorch's grid_sample semantics (which ONNX's
// GridSample follows): normalised grid coordinates are unnormalised per
// align_corners, padded by padding_mode, then sampled bilinearly, by the
// nearest pixel or bicubically; taps outside the input read 0.
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

enum class Padding { Zeros, Border, Reflection };

double unnormalize(double coord, int64_t size, bool alignCorners) {
  return alignCorners ? (coord + 1) / 2 * double(size - 1) : ((coord + 1) * double(size) - 1) / 2;
}

double clipCoordinate(double c, int64_t size) { return std::min(double(size - 1), std::max(c, 0.0)); }

/// Reflects c into [twiceLow / 2, twiceHigh / 2].
double reflect(double c, int64_t twiceLow, int64_t twiceHigh) {
  if (twiceLow == twiceHigh) return 0;
  const double low = double(twiceLow) / 2, span = double(twiceHigh - twiceLow) / 2;
  c = std::fabs(c - low);
  const double extra = std::fmod(c, span);
  const int64_t flips = int64_t(std::floor(c / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

/// Applies the padding mode to an unnormalised coordinate.
double padCoordinate(double c, int64_t size, Padding padding, bool alignCorners) {
  if (padding == Padding::Border) return clipCoordinate(c, size);
  if (padding == Padding::Reflection) {
    c = alignCorners ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    return clipCoordinate(c, size);
  }
  return c;
}

/// T is the element type (float or double); the arithmetic is double.
template <typename T>
struct Sampler {
  const T* image;  ///< one batch: [H, W, C]
  int64_t h, w, c;
  Padding padding;
  bool alignCorners;

  /// Adds weight * pixel (y, x) to out[0..c), when the pixel is inside.
  void accumulate(int64_t y, int64_t x, double weight, double* out) const {
    if (y < 0 || y >= h || x < 0 || x >= w || weight == 0) return;
    const T* p = image + (y * w + x) * c;
    for (int64_t k = 0; k < c; ++k) out[k] += weight * double(p[k]);
  }
};

std::array<double, 4> cubicWeights(double t) {
  constexpr double a = -0.75;
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

template <typename T>
void sampleOne(const Sampler<T>& s, GridSampleMode mode, double gx, double gy, double* out) {
  if (mode == GridSampleMode::Bicubic) {
    // The 4x4 taps around the unpadded coordinate; each tap index is padded.
    const double x = unnormalize(gx, s.w, s.alignCorners), y = unnormalize(gy, s.h, s.alignCorners);
    const double x0 = std::floor(x), y0 = std::floor(y);
    const std::array<double, 4> wx = cubicWeights(x - x0), wy = cubicWeights(y - y0);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        double tx = x0 - 1 + j, ty = y0 - 1 + i;
        if (s.padding != Padding::Zeros) {
          tx = padCoordinate(tx, s.w, s.padding, s.alignCorners);
          ty = padCoordinate(ty, s.h, s.padding, s.alignCorners);
        }
        s.accumulate(int64_t(ty), int64_t(tx), wy[size_t(i)] * wx[size_t(j)], out);
      }
    return;
  }
  const double x = padCoordinate(unnormalize(gx, s.w, s.alignCorners), s.w, s.padding, s.alignCorners);
  const double y = padCoordinate(unnormalize(gy, s.h, s.alignCorners), s.h, s.padding, s.alignCorners);
  if (mode == GridSampleMode::Nearest) {
    s.accumulate(int64_t(std::nearbyint(y)), int64_t(std::nearbyint(x)), 1, out);
    return;
  }
  const double x0 = std::floor(x), y0 = std::floor(y);
  const double fx = x - x0, fy = y - y0;
  const int64_t ix = int64_t(x0), iy = int64_t(y0);
  s.accumulate(iy, ix, (1 - fx) * (1 - fy), out);
  s.accumulate(iy, ix + 1, fx * (1 - fy), out);
  s.accumulate(iy + 1, ix, (1 - fx) * fy, out);
  s.accumulate(iy + 1, ix + 1, fx * fy, out);
}

}  // namespace

Error gridSample(const Attributes& attrs, Inputs in, Outputs out) {
  const ConstTensorRef& input = in[0];
  const ConstTensorRef& grid = in[1];
  const Dims& x = input.type.dims;
  const Dims& g = grid.type.dims;
  const GridSampleAttrs a = GridSampleAttrs::from(attrs);
  const GridSampleMode mode = a.mode;
  const Padding padding = a.paddingMode == GridSamplePaddingMode::Border       ? Padding::Border
                          : a.paddingMode == GridSamplePaddingMode::Reflection ? Padding::Reflection
                                                                               : Padding::Zeros;
  const bool alignCorners = a.alignCorners != 0;
  const int64_t n = x[0], h = x[1], w = x[2], c = x[3], oh = g[1], ow = g[2];
  std::vector<double> acc(static_cast<size_t>(c), 0.0);
  const bool done = visitFloat(input.type.kind, [&]<typename T>() {
    for (int64_t b = 0; b < n; ++b) {
      const Sampler<T> s{input.as<T>() + b * h * w * c, h, w, c, padding, alignCorners};
      for (int64_t p = 0; p < oh * ow; ++p) {
        // Non-finite grid values sample nothing (their taps cannot be indexed).
        const T* xy = grid.as<T>() + (b * oh * ow + p) * 2;
        std::fill(acc.begin(), acc.end(), 0.0);
        if (std::isfinite(xy[0]) && std::isfinite(xy[1]) && std::fabs(xy[0]) < T(1e6) &&
            std::fabs(xy[1]) < T(1e6))
          sampleOne(s, mode, double(xy[0]), double(xy[1]), acc.data());
        T* dst = out[0].as<T>() + (b * oh * ow + p) * c;
        for (int64_t k = 0; k < c; ++k) dst[k] = T(acc[size_t(k)]);
      }
    }
  });
  if (!done) return makeError("GridSample: no reference kernel for ", input.type.str());
  return Error::success();
}

}  // namespace ember::kernels
