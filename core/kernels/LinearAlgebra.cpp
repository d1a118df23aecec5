// MatMul (batch-broadcast), Conv and ConvTranspose on NHWC.
//
// Loop orders keep the innermost loop contiguous and free of a reduction
// dependency (output channels / output columns), so that the compiler can
// vectorise it without reassociating floating-point sums: the results are the
// same sums, in the same order, on every machine.
#include <cmath>
#include <utility>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

/// c[M,N] = a[M,K] * b[K,N], loop order i-k-j.
template <typename T>
void gemm(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      T av = a[i * k + p];
      const T* brow = b + p * n;
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n; ++j) row[j] = wrapAdd(row[j], wrapMul(av, brow[j]));
      }
    }
  }
}

template <typename T>
void matMul(const ConstTensorRef& lhs, const ConstTensorRef& rhs, const TensorRef& out) {
  const Dims& a = lhs.type.dims;
  const Dims& b = rhs.type.dims;
  const Dims& o = out.type.dims;
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Dims outBatch(o.begin(), o.end() - 2);
  std::array<Dims, 2> strides = {broadcastStrides(Dims(a.begin(), a.end() - 2), outBatch),
                                 broadcastStrides(Dims(b.begin(), b.end() - 2), outBatch)};
  const T* pa = lhs.as<T>();
  const T* pb = rhs.as<T>();
  T* pc = out.as<T>();
  // Batch strides count whole matrices.
  forEachOffset(outBatch, strides, [&](int64_t batch, const std::array<int64_t, 2>& off) {
    gemm(pa + off[0] * m * k, pb + off[1] * k * n, pc + batch * m * n, m, k, n);
  });
}

struct ConvGeometry {
  int64_t n, h, w, c;      // input
  int64_t oh, ow, o;       // output
  int64_t kh, kw;          // kernel
  int64_t sh, sw, pt, pl;  // strides, top/left pads
  int64_t dh, dw;          // dilations
  int64_t group;
};

/// ConvAttrs or ConvTransposeAttrs.
template <class ConvLikeAttrs>
ConvGeometry convGeometry(const ConvLikeAttrs& a, const Dims& input, const Dims& filter, const Dims& output) {
  return ConvGeometry{input[0],  input[1],       input[2],       input[3],     output[1],    output[2],
                      output[3], filter[1],      filter[2],      a.strides[0], a.strides[1], a.pads[0],
                      a.pads[1], a.dilations[0], a.dilations[1], a.group};
}

/// Conv: out[n,oh,ow,o] = bias[o] + sum_{kh,kw,c} in[n, oh*sh-pt+kh*dh, ow*sw-pl+kw*dw, g*Cg+c] *
/// f[o,kh,kw,c].
template <typename T>
void conv(const Attributes& attrs, Inputs in, const TensorRef& out) {
  ConvGeometry g = convGeometry(ConvAttrs::from(attrs), in[0].type.dims, in[1].type.dims, out.type.dims);
  const T* input = in[0].as<T>();
  const T* filter = in[1].as<T>();
  const T* bias = in[2].as<T>();
  T* output = out.as<T>();
  int64_t cg = g.c / g.group, og = g.o / g.group;

  // Repack the filter [O,KH,KW,Cg] as [G,KH,KW,Cg,Og] so that the innermost
  // loop runs over a group's output channels, contiguous in filter and output.
  std::vector<T> packed(size_t(g.o * g.kh * g.kw * cg));
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t y = 0; y < g.kh; ++y)
      for (int64_t x = 0; x < g.kw; ++x)
        for (int64_t c = 0; c < cg; ++c)
          packed[size_t((((o / og * g.kh + y) * g.kw + x) * cg + c) * og + o % og)] =
              filter[((o * g.kh + y) * g.kw + x) * cg + c];

  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        T* acc = output + ((n * g.oh + oy) * g.ow + ox) * g.o;
        for (int64_t o = 0; o < g.o; ++o) acc[o] = bias[o];
        for (int64_t y = 0; y < g.kh; ++y) {
          int64_t iy = oy * g.sh - g.pt + y * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t x = 0; x < g.kw; ++x) {
            int64_t ix = ox * g.sw - g.pl + x * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            const T* pixel = input + ((n * g.h + iy) * g.w + ix) * g.c;
            for (int64_t grp = 0; grp < g.group; ++grp) {
              const T* taps = packed.data() + ((grp * g.kh + y) * g.kw + x) * cg * og;
              T* accGroup = acc + grp * og;
              const T* pixelGroup = pixel + grp * cg;
              for (int64_t c = 0; c < cg; ++c) {
                T v = pixelGroup[c];
                const T* tap = taps + c * og;
                for (int64_t o = 0; o < og; ++o) accGroup[o] += v * tap[o];
              }
            }
          }
        }
      }
}

/// ConvTranspose scatters each input pixel: out[n, iy*sh-pt+kh*dh, ix*sw-pl+kw*dw, g*Og+o]
/// += in[n,iy,ix,c] * f[c,kh,kw,o] for c in group g; the filter is [C,KH,KW,Og].
template <typename T>
void convTranspose(const Attributes& attrs, Inputs in, const TensorRef& out) {
  ConvGeometry g =
      convGeometry(ConvTransposeAttrs::from(attrs), in[0].type.dims, in[1].type.dims, out.type.dims);
  const T* input = in[0].as<T>();
  const T* filter = in[1].as<T>();
  const T* bias = in[2].as<T>();
  T* output = out.as<T>();
  int64_t cg = g.c / g.group, og = g.o / g.group;

  for (int64_t p = 0, pixels = g.n * g.oh * g.ow; p < pixels; ++p)
    for (int64_t o = 0; o < g.o; ++o) output[p * g.o + o] = bias[o];

  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t iy = 0; iy < g.h; ++iy)
      for (int64_t ix = 0; ix < g.w; ++ix) {
        const T* pixel = input + ((n * g.h + iy) * g.w + ix) * g.c;
        for (int64_t y = 0; y < g.kh; ++y) {
          int64_t oy = iy * g.sh - g.pt + y * g.dh;
          if (oy < 0 || oy >= g.oh) continue;
          for (int64_t x = 0; x < g.kw; ++x) {
            int64_t ox = ix * g.sw - g.pl + x * g.dw;
            if (ox < 0 || ox >= g.ow) continue;
            T* acc = output + ((n * g.oh + oy) * g.ow + ox) * g.o;
            for (int64_t c = 0; c < g.c; ++c) {
              T v = pixel[c];
              const T* tap = filter + ((c * g.kh + y) * g.kw + x) * og;
              T* accGroup = acc + (c / cg) * og;
              for (int64_t o = 0; o < og; ++o) accGroup[o] += v * tap[o];
            }
          }
        }
      }
}

}  // namespace

/// Determinant of each trailing M x M matrix: Gaussian elimination with
/// partial pivoting in double.
template <typename T>
void determinants(const ConstTensorRef& in, const TensorRef& out) {
  const Dims& dims = in.type.dims;
  const int64_t m = dims.back();
  const int64_t count = out.numElements();
  std::vector<double> a(size_t(m * m));
  for (int64_t k = 0; k < count; ++k) {
    const T* src = in.as<T>() + k * m * m;
    for (int64_t i = 0; i < m * m; ++i) a[size_t(i)] = double(src[i]);
    double det = 1;
    for (int64_t col = 0; col < m && det != 0; ++col) {
      int64_t pivot = col;
      for (int64_t row = col + 1; row < m; ++row)
        if (std::fabs(a[size_t(row * m + col)]) > std::fabs(a[size_t(pivot * m + col)])) pivot = row;
      if (a[size_t(pivot * m + col)] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[size_t(pivot * m + j)], a[size_t(col * m + j)]);
        det = -det;
      }
      const double p = a[size_t(col * m + col)];
      det *= p;
      for (int64_t row = col + 1; row < m; ++row) {
        const double factor = a[size_t(row * m + col)] / p;
        for (int64_t j = col; j < m; ++j) a[size_t(row * m + j)] -= factor * a[size_t(col * m + j)];
      }
    }
    out.as<T>()[k] = T(det);
  }
}

Error runLinearAlgebra(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::MatMul: {
      bool done = visitNumeric(in[0].type.kind, [&]<typename T>() { matMul<T>(in[0], in[1], out[0]); });
      if (!done) return makeError("MatMul: no reference kernel for ", in[0].type.str());
      return Error::success();
    }
    case OpKind::Conv:
      visitFloat(in[0].type.kind, [&]<typename T>() { conv<T>(attrs, in, out[0]); });
      return Error::success();
    case OpKind::ConvTranspose:
      visitFloat(in[0].type.kind, [&]<typename T>() { convTranspose<T>(attrs, in, out[0]); });
      return Error::success();
    case OpKind::Det:
      visitFloat(in[0].type.kind, [&]<typename T>() { determinants<T>(in[0], out[0]); });
      return Error::success();
    default:
      return makeError(opName(kind), ": not a linear-algebra kernel");
  }
}

}  // namespace ember::kernels
