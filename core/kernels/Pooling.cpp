// MaxPool and AvgPool over NHWC windows (ONNX semantics, see Ops.def).
#include <algorithm>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
};

/// AvgPool has no dilations: pass {1, 1}.
PoolGeometry poolGeometry(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                          const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                          const Dims& input, const Dims& output) {
  return PoolGeometry{input[0],  input[1],  input[2],     input[3],    output[1], output[2],
                      kernel[0], kernel[1], strides[0],   strides[1],  pads[0],   pads[1],
                      pads[2],   pads[3],   dilations[0], dilations[1]};
}

/// A window tap outside the input is skipped; a window with no tap inside the
/// input (possible only with pads >= kernel) yields the lowest value.
template <typename T>
void maxPool(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const MaxPoolAttrs a = MaxPoolAttrs::from(attrs);
  PoolGeometry g = poolGeometry(a.kernel, a.strides, a.pads, a.dilations, in.type.dims, out.type.dims);
  const T* input = in.as<T>();
  T* output = out.as<T>();
  constexpr T kLowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                             : std::numeric_limits<T>::lowest();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        T* result = output + ((n * g.oh + oy) * g.ow + ox) * g.c;
        std::fill(result, result + g.c, kLowest);
        for (int64_t y = 0; y < g.kh; ++y) {
          int64_t iy = oy * g.sh - g.pt + y * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t x = 0; x < g.kw; ++x) {
            int64_t ix = ox * g.sw - g.pl + x * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            const T* pixel = input + ((n * g.h + iy) * g.w + ix) * g.c;
            for (int64_t c = 0; c < g.c; ++c) result[c] = pixel[c] > result[c] ? pixel[c] : result[c];
          }
        }
      }
}

/// The divisor is the number of window elements inside the input, or with
/// count_include_pad the window clipped to the padded input (the ceil_mode
/// overhang beyond the end padding never counts).
template <typename T>
void avgPool(const Attributes& attrs, const ConstTensorRef& in, const TensorRef& out) {
  const AvgPoolAttrs a = AvgPoolAttrs::from(attrs);
  PoolGeometry g = poolGeometry(a.kernel, a.strides, a.pads, {1, 1}, in.type.dims, out.type.dims);
  bool countIncludePad = a.countIncludePad != 0;
  const T* input = in.as<T>();
  T* output = out.as<T>();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t y0 = oy * g.sh - g.pt, x0 = ox * g.sw - g.pl;
        int64_t y1 = std::min(y0 + g.kh, g.h + g.pb), x1 = std::min(x0 + g.kw, g.w + g.pr);
        int64_t iy0 = std::max<int64_t>(y0, 0), ix0 = std::max<int64_t>(x0, 0);
        int64_t iy1 = std::min(y1, g.h), ix1 = std::min(x1, g.w);
        int64_t count = countIncludePad ? (y1 - y0) * (x1 - x0)
                                        : std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
        T* result = output + ((n * g.oh + oy) * g.ow + ox) * g.c;
        std::fill(result, result + g.c, T(0));
        for (int64_t iy = iy0; iy < iy1; ++iy)
          for (int64_t ix = ix0; ix < ix1; ++ix) {
            const T* pixel = input + ((n * g.h + iy) * g.w + ix) * g.c;
            for (int64_t c = 0; c < g.c; ++c) result[c] += pixel[c];
          }
        // An all-padding window averages nothing: 0 rather than 0/0.
        for (int64_t c = 0; c < g.c; ++c) result[c] = count > 0 ? result[c] / T(count) : T(0);
      }
}

}  // namespace

Error runPooling(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  if (kind == OpKind::AvgPool) {
    if (!visitFloat(in[0].type.kind, [&]<typename T>() { avgPool<T>(attrs, in[0], out[0]); }))
      return makeError("AvgPool: no reference kernel for ", in[0].type.str());
    return Error::success();
  }
  switch (in[0].type.kind) {
    case ElemKind::F32:
      maxPool<float>(attrs, in[0], out[0]);
      break;
    case ElemKind::F64:
      maxPool<double>(attrs, in[0], out[0]);
      break;
    case ElemKind::I32:
      maxPool<int32_t>(attrs, in[0], out[0]);
      break;
    case ElemKind::I64:
      maxPool<int64_t>(attrs, in[0], out[0]);
      break;
    // Quantized max is the max of the raw values (scale > 0).
    case ElemKind::Int8Q:
      maxPool<int8_t>(attrs, in[0], out[0]);
      break;
    case ElemKind::UInt8Q:
      maxPool<uint8_t>(attrs, in[0], out[0]);
      break;
    default:
      return makeError("MaxPool: no reference kernel for ", in[0].type.str());
  }
  return Error::success();
}

}  // namespace ember::kernels
