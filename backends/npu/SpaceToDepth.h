// A stride-2 conv over few channels (ResNet's 7x7/3-channel stem) run as a
// stride-1 conv over 2x2 blocks of pixels (compiler.dense_stem;
// docs/npu/compiler.md, "The stem as 2x2 blocks"). A block's 4·C channels are
// (dy, dx, c); the kernel becomes ceil((K + e)/2) blocks, e = the padding's
// parity, with zero taps where the block kernel overhangs the real one. One
// kernel row of the block conv is then 4·C·KB contiguous bytes instead of
// K·C, so the gemms' reduction fills the array's rows: the 7x7x3 stem has 4
// k-steps of 48 per output row instead of 7 of 21.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "Tiling.h"

namespace ember::npu_backend {

/// The block geometry of `g`, or nullopt when `g` is not a stride-2 conv whose
/// blocks take fewer gemms per output row on an array of `rows` rows.
inline std::optional<ConvGeometry> spaceToDepthGeometry(const ConvGeometry& g, int64_t rows) {
  if (g.sh != 2 || g.sw != 2 || g.dh != 1 || g.dw != 1 || g.group != 1 || g.n < 1 || g.h % 2 || g.w % 2)
    return std::nullopt;
  const int64_t ey = g.pt % 2, ex = g.pl % 2;
  ConvGeometry b = g;
  b.h = g.h / 2, b.w = g.w / 2, b.c = 4 * g.c;
  b.kh = (g.kh + ey + 1) / 2, b.kw = (g.kw + ex + 1) / 2;
  b.sh = b.sw = 1;
  b.pt = (g.pt + ey) / 2, b.pl = (g.pl + ex) / 2;
  b.pb = g.oh + b.kh - 1 - b.pt - b.h, b.pr = g.ow + b.kw - 1 - b.pl - b.w;
  if (b.pb < 0 || b.pr < 0) return std::nullopt;
  const auto ceilDivide = [](int64_t a, int64_t d) { return (a + d - 1) / d; };
  // Gemms per output row (one per k-step of each kernel row).
  if (b.kh * ceilDivide(b.kw * b.c, rows) >= g.kh * ceilDivide(g.kw * g.c, rows)) return std::nullopt;
  return b;
}

/// The block conv's filter(o, by, bx, (dy, dx, c)) from the original's
/// filter(o, ky, kx, c) over `g` (the original geometry).
inline std::function<int32_t(int64_t, int64_t, int64_t, int64_t)> spaceToDepthFilter(
    const ConvGeometry& g, const std::function<int32_t(int64_t, int64_t, int64_t, int64_t)>& filter) {
  const int64_t ey = g.pt % 2, ex = g.pl % 2, c = g.c, kh = g.kh, kw = g.kw;
  return [=](int64_t o, int64_t by, int64_t bx, int64_t channel) -> int32_t {
    const int64_t dy = channel / (2 * c), dx = channel / c % 2;
    const int64_t ky = 2 * by + dy - ey, kx = 2 * bx + dx - ex;
    if (ky < 0 || ky >= kh || kx < 0 || kx >= kw) return 0;
    return filter(o, ky, kx, channel % c);
  };
}

}  // namespace ember::npu_backend
