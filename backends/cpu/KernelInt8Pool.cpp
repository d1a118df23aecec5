// int8 pooling on 8-bit codes, NHWC (KernelInt8.h): MaxPool compares codes
// (padding taps skipped; a window with no tap inside the input gives the
// lowest code), QuantizedAvgPool sums (q - zero) in int32 over the window's
// in-bounds taps and requantizes once with quant::averageMultiplier(count),
// the count as in the reference (count_include_pad clips the window to the
// padded input). Channels are the inner, vectorised loop.
#include <algorithm>
#include <limits>
#include <vector>

#include "KernelInt8.h"
#include "ThreadPool.h"
#include "ember/QuantMath.h"

namespace ember::cpu {
namespace {

template <typename Code>
void maxRow(const Int8PoolCall& call, int64_t row) {
  const int64_t c = call.c, img = row / call.oh, oy = row % call.oh;
  const auto* input = reinterpret_cast<const Code*>(call.input);
  auto* output = reinterpret_cast<Code*>(call.output);
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    Code* result = output + ((img * call.oh + oy) * call.ow + ox) * c;
    std::fill(result, result + c, std::numeric_limits<Code>::lowest());
    for (int64_t ky = 0; ky < call.kh; ++ky) {
      const int64_t iy = oy * call.sh - call.pt + ky * call.dh;
      if (iy < 0 || iy >= call.h) continue;
      for (int64_t kx = 0; kx < call.kw; ++kx) {
        const int64_t ix = ox * call.sw - call.pl + kx * call.dw;
        if (ix < 0 || ix >= call.w) continue;
        const Code* pixel = input + ((img * call.h + iy) * call.w + ix) * c;
        for (int64_t ch = 0; ch < c; ++ch) result[ch] = std::max(result[ch], pixel[ch]);
      }
    }
  }
}

template <typename Code>
void averageRow(const Int8PoolCall& call, int64_t row, std::vector<int32_t>& sum) {
  const int64_t c = call.c, img = row / call.oh, oy = row % call.oh;
  const auto* input = reinterpret_cast<const Code*>(call.input);
  const int64_t y0 = oy * call.sh - call.pt, y1 = std::min(y0 + call.kh, call.h + call.pb);
  const int64_t iy0 = std::max<int64_t>(y0, 0), iy1 = std::min(y1, call.h);
  for (int64_t ox = 0; ox < call.ow; ++ox) {
    const int64_t x0 = ox * call.sw - call.pl, x1 = std::min(x0 + call.kw, call.w + call.pr);
    const int64_t ix0 = std::max<int64_t>(x0, 0), ix1 = std::min(x1, call.w);
    const int64_t count = call.countIncludePad
                              ? (y1 - y0) * (x1 - x0)
                              : std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
    int32_t* s = sum.data();
    std::fill(s, s + c, 0);
    for (int64_t iy = iy0; iy < iy1; ++iy)
      for (int64_t ix = ix0; ix < ix1; ++ix) {
        const Code* pixel = input + ((img * call.h + iy) * call.w + ix) * c;
        for (int64_t ch = 0; ch < c; ++ch) s[ch] += int32_t(pixel[ch]);
      }
    // sum (q - zero) over the in-bounds taps, in int32 like the reference.
    const int64_t inside = std::max<int64_t>(iy1 - iy0, 0) * std::max<int64_t>(ix1 - ix0, 0);
    const int32_t zeroSum = int32_t(inside) * call.inputZero;
    uint8_t* out = call.output + ((img * call.oh + oy) * call.ow + ox) * c;
    if (count <= 0) {
      std::fill(out, out + c, uint8_t(std::clamp(call.outputZero, call.lo, call.hi)));
      continue;
    }
    const quant::FixedPointMultiplier m = quant::averageMultiplier(call.inScale, call.outScale, count);
    for (int64_t ch = 0; ch < c; ++ch)
      out[ch] = uint8_t(quant::requantize(s[ch] - zeroSum, m, call.outputZero, call.lo, call.hi));
  }
}

}  // namespace

void int8Pool(const Int8PoolCall& call, ThreadPool& pool) {
  pool.parallelFor(call.n * call.oh, [&](int64_t row, int) {
    if (!call.average) {
      if (call.inputSigned)
        maxRow<int8_t>(call, row);
      else
        maxRow<uint8_t>(call, row);
      return;
    }
    thread_local std::vector<int32_t> sum;
    sum.resize(size_t(call.c));
    if (call.inputSigned)
      averageRow<int8_t>(call, row, sum);
    else
      averageRow<uint8_t>(call, row, sum);
  });
}

}  // namespace ember::cpu
