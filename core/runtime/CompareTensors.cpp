// Tensor differences for `ember compare`: max absolute and relative error,
// the worst element, and a type mismatch instead of a comparison when kind,
// shape or quantization differ.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/Compare.h"

namespace ember {

std::string TensorDiff::coordinates(int64_t flatIndex, const Dims& dims) {
  if (flatIndex < 0) return "-";
  std::vector<int64_t> coords(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] > 0) {
      coords[d] = flatIndex % dims[d];
      flatIndex /= dims[d];
    }
  }
  std::string out = "[";
  for (size_t d = 0; d < coords.size(); ++d) out += (d ? ", " : "") + std::to_string(coords[d]);
  return out + "]";
}

TensorDiff diffTensors(const Tensor& got, const Tensor& expected, const Tolerance& tolerance) {
  TensorDiff diff;
  if (got.type() != expected.type()) {
    diff.typeMismatch = got.type().str() + " vs " + expected.type().str();
    diff.withinTolerance = false;
    return diff;
  }
  const int64_t n = expected.type().numElements();
  for (int64_t i = 0; i < n; ++i) {
    double e = expected.elementAsDouble(i);
    if (!std::isnan(e)) diff.maxMagnitude = std::max(diff.maxMagnitude, std::fabs(e));
  }
  // Quantized values are compared as raw integers, so relative tolerance
  // only makes sense for floats.
  const ElemKind kind = expected.type().kind;
  double rtol = isFloat(kind) ? tolerance.rtol : 0.0;
  // Half-precision results carry 11 (f16) or 8 (bf16) significant bits, as
  // in the conformance kit.
  if (kind == ElemKind::F16) rtol = std::max(rtol, 1e-3);
  if (kind == ElemKind::BF16) rtol = std::max(rtol, 8e-3);
  const double bound = tolerance.atol + rtol * diff.maxMagnitude;
  for (int64_t i = 0; i < n; ++i) {
    double e = expected.elementAsDouble(i), g = got.elementAsDouble(i);
    double error;
    if (std::isnan(e) || std::isnan(g))
      error = std::isnan(e) && std::isnan(g) ? 0.0 : std::numeric_limits<double>::infinity();
    else if (e == g)  // also equal infinities
      error = 0.0;
    else
      error = std::fabs(g - e);
    if (error > bound) ++diff.numBeyondTolerance;
    if (error > diff.maxAbsError || (diff.worstIndex < 0 && error > 0)) {
      diff.maxAbsError = error;
      diff.worstIndex = i;
      diff.expectedAtWorst = e;
      diff.gotAtWorst = g;
    }
  }
  if (diff.maxAbsError > 0)
    diff.maxRelError = diff.maxMagnitude > 0 ? diff.maxAbsError / diff.maxMagnitude
                                             : std::numeric_limits<double>::infinity();
  diff.withinTolerance = diff.numBeyondTolerance == 0;
  return diff;
}

}  // namespace ember
