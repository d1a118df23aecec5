// RoiAlign (ONNX opset 16, NHWC): bilinear samples averaged (or maxed) per
// output bin of each region of interest, in float arithmetic and sample order
// as ONNX Runtime computes them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// The four corners and weights of one bilinear sample; `valid` false when
/// the point lies more than one pixel outside the input (it contributes 0).
struct Sample {
  bool valid = false;
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  float w00 = 0, w01 = 0, w10 = 0, w11 = 0;
};

Sample bilinearSample(float y, float x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0f || y > float(height) || x < -1.0f || x > float(width)) return s;
  s.valid = true;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  s.y0 = int64_t(y);
  s.x0 = int64_t(x);
  if (s.y0 >= height - 1) {
    s.y0 = s.y1 = height - 1;
    y = float(s.y0);
  } else {
    s.y1 = s.y0 + 1;
  }
  if (s.x0 >= width - 1) {
    s.x0 = s.x1 = width - 1;
    x = float(s.x0);
  } else {
    s.x1 = s.x0 + 1;
  }
  const float ly = y - float(s.y0), lx = x - float(s.x0), hy = 1.0f - ly, hx = 1.0f - lx;
  s.w00 = hy * hx;
  s.w01 = hy * lx;
  s.w10 = ly * hx;
  s.w11 = ly * lx;
  return s;
}

int64_t batchIndex(const ConstTensorRef& t, int64_t i) {
  return t.type.kind == ElemKind::I64 ? t.as<int64_t>()[i] : int64_t(t.as<int32_t>()[i]);
}

/// Where one roi's bins start, their size, and the sampling grid per bin.
struct RoiGrid {
  float startH = 0, startW = 0, binH = 0, binW = 0;
  int64_t gridH = 0, gridW = 0;
  float count = 1;  ///< samples per bin, at least 1
};

RoiGrid roiGrid(const float* roi, float scale, bool halfPixel, int64_t outH, int64_t outW,
                int64_t samplingRatio) {
  const float offset = halfPixel ? 0.5f : 0.0f;
  RoiGrid g;
  g.startW = roi[0] * scale - offset;
  g.startH = roi[1] * scale - offset;
  const float endW = roi[2] * scale - offset, endH = roi[3] * scale - offset;
  float roiW = endW - g.startW, roiH = endH - g.startH;
  if (!halfPixel) {  // output_half_pixel: a roi is at least one pixel
    roiW = std::max(roiW, 1.0f);
    roiH = std::max(roiH, 1.0f);
  }
  g.binH = roiH / float(outH);
  g.binW = roiW / float(outW);
  // Grids are bounded so that a huge roi cannot make the loop unbounded.
  g.gridH = samplingRatio > 0 ? samplingRatio
                              : std::clamp<int64_t>(int64_t(std::ceil(roiH / float(outH))), 0, 1 << 16);
  g.gridW = samplingRatio > 0 ? samplingRatio
                              : std::clamp<int64_t>(int64_t(std::ceil(roiW / float(outW))), 0, 1 << 16);
  g.count = float(std::max<int64_t>(g.gridH * g.gridW, 1));
  return g;
}

/// The input plane [height, width, channels] of one image.
struct Plane {
  const float* data;
  int64_t height, width, channels;
};

/// Output bin (ph, pw) of a roi into dst [channels]: the average (or the
/// largest weighted corner) of its bilinear samples; `acc` is scratch.
void alignBin(const Plane& plane, const RoiGrid& g, int64_t ph, int64_t pw, bool maxMode,
              std::vector<float>& acc, float* dst) {
  const int64_t width = plane.width, channels = plane.channels;
  std::fill(acc.begin(), acc.end(), maxMode ? -std::numeric_limits<float>::infinity() : 0.0f);
  bool any = false;
  for (int64_t iy = 0; iy < g.gridH; ++iy) {
    const float sy = g.startH + float(ph) * g.binH + (float(iy) + 0.5f) * g.binH / float(g.gridH);
    for (int64_t ix = 0; ix < g.gridW; ++ix) {
      const float sx = g.startW + float(pw) * g.binW + (float(ix) + 0.5f) * g.binW / float(g.gridW);
      const Sample s = bilinearSample(sy, sx, plane.height, width);
      const float* p00 = plane.data + (s.y0 * width + s.x0) * channels;
      const float* p01 = plane.data + (s.y0 * width + s.x1) * channels;
      const float* p10 = plane.data + (s.y1 * width + s.x0) * channels;
      const float* p11 = plane.data + (s.y1 * width + s.x1) * channels;
      for (int64_t c = 0; c < channels; ++c) {
        if (!s.valid) {  // contributes 0 to the sum, or 0 as a candidate maximum
          if (maxMode) acc[size_t(c)] = std::max(acc[size_t(c)], 0.0f);
          continue;
        }
        if (maxMode)
          acc[size_t(c)] =
              std::max({acc[size_t(c)], s.w00 * p00[c], s.w01 * p01[c], s.w10 * p10[c], s.w11 * p11[c]});
        else
          acc[size_t(c)] += s.w00 * p00[c] + s.w01 * p01[c] + s.w10 * p10[c] + s.w11 * p11[c];
      }
      any = true;
    }
  }
  for (int64_t c = 0; c < channels; ++c)
    dst[c] = !any ? 0.0f : maxMode ? acc[size_t(c)] : acc[size_t(c)] / g.count;
}

}  // namespace

Error roiAlign(const Attributes& attrs, Inputs in, Outputs out) {
  const Dims& xd = in[0].type.dims;  // [N, H, W, C]
  const int64_t batches = xd[0], height = xd[1], width = xd[2], channels = xd[3];
  const int64_t rois = in[1].type.dims[0];
  const RoiAlignAttrs a = RoiAlignAttrs::from(attrs);
  const int64_t outH = a.outputHeight, outW = a.outputWidth;
  const float scale = float(a.spatialScale);
  const bool halfPixel = a.coordinateTransformationMode == RoiAlignCoordinateTransformationMode::HalfPixel;
  const bool maxMode = a.mode == RoiAlignMode::Max;
  const float* x = in[0].as<float>();
  const float* box = in[1].as<float>();
  float* y = out[0].as<float>();
  std::vector<float> acc(static_cast<size_t>(channels));
  for (int64_t r = 0; r < rois; ++r) {
    const int64_t b = batchIndex(in[2], r);
    if (b < 0 || b >= batches)
      return makeError("RoiAlign: batch index ", b, " of roi ", r, " is out of range [0, ", batches, ")");
    const RoiGrid g = roiGrid(box + r * 4, scale, halfPixel, outH, outW, a.samplingRatio);
    const Plane plane{x + b * height * width * channels, height, width, channels};
    for (int64_t ph = 0; ph < outH; ++ph)
      for (int64_t pw = 0; pw < outW; ++pw)
        alignBin(plane, g, ph, pw, maxMode, acc, y + ((r * outH + ph) * outW + pw) * channels);
  }
  return Error::success();
}

}  // namespace ember::kernels
