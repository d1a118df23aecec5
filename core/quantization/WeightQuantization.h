// The int8 weight quantizer's inner step, apart so that a test holds it to
// quant::quantizeValue.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ember::quant {

/// quant::quantizeValue(x, scale, 0, -127, 127), exactly, without its libm
/// round: the weights of a whole network go through it. The quotient is
/// clamped first (|q| > 200 saturates either way; NaN gives 0, as there), so
/// the truncation is defined and round-half-away-from-zero is the truncation
/// corrected by the exact remainder.
inline int8_t quantizeWeight(float x, float scale) {
  double q = double(x) / double(scale);
  q = q == q ? q : 0.0;
  q = q > 200.0 ? 200.0 : q < -200.0 ? -200.0 : q;
  int32_t r = int32_t(q);
  const double remainder = q - double(r);
  r += int32_t(remainder >= 0.5) - int32_t(remainder <= -0.5);
  return int8_t(std::clamp(r, -127, 127));
}

}  // namespace ember::quant
