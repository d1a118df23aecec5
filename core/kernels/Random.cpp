// The Random primitive: uniform, normal and Bernoulli values from a
// std::mt19937_64 seeded with the bits of the f32 `seed` attribute. The
// engine's output sequence is fixed by the C++ standard and the transforms
// below are Ember's own (the standard distributions are implementation
// defined), so a seed gives the same bytes on every platform and run.

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

uint64_t seedBits(double seed) {
  const float f = float(seed);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// Uniform in [0, 1): the top 53 bits of one draw.
double unitInterval(std::mt19937_64& engine) { return double(engine() >> 11) * 0x1.0p-53; }

double elementAt(const ConstTensorRef& t, int64_t i) {
  return t.type.kind == ElemKind::F64 ? t.as<double>()[i] : double(t.as<float>()[i]);
}

/// Rounds to T; a uniform value that rounds up to `high` steps just below it.
template <typename T>
void store(const TensorRef& out, const std::vector<double>& values, bool belowHigh, double high) {
  T* data = out.as<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    T v = T(values[i]);
    if constexpr (std::is_floating_point_v<T>) {
      if (belowHigh && double(v) >= high) v = std::nextafter(T(high), -std::numeric_limits<T>::infinity());
    }
    data[i] = v;
  }
}

}  // namespace

Error randomValues(const Attributes& attrs, Inputs in, Outputs out) {
  const RandomAttrs a = RandomAttrs::from(attrs);
  const double low = a.low, high = a.high, mean = a.mean, scale = a.scale;
  std::mt19937_64 engine(seedBits(a.seed));
  std::vector<double> values(size_t(out[0].numElements()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (a.distribution == RandomDistribution::Uniform) {
      values[i] = low + (high - low) * unitInterval(engine);
    } else if (a.distribution == RandomDistribution::Normal) {
      // Box-Muller, one value per pair of draws; 1 - u keeps the log finite.
      const double radius = std::sqrt(-2.0 * std::log(1.0 - unitInterval(engine)));
      values[i] = mean + scale * radius * std::cos(2.0 * M_PI * unitInterval(engine));
    } else {
      // p = 0 never and p = 1 always succeed, since the draw is in [0, 1).
      values[i] = unitInterval(engine) < elementAt(in[0], int64_t(i)) ? 1.0 : 0.0;
    }
  }
  const bool belowHigh = a.distribution == RandomDistribution::Uniform && high > low;
  switch (out[0].type.kind) {
    case ElemKind::F32:
      store<float>(out[0], values, belowHigh, high);
      break;
    case ElemKind::F64:
      store<double>(out[0], values, belowHigh, high);
      break;
    case ElemKind::I32:
      store<int32_t>(out[0], values, false, high);
      break;
    case ElemKind::I64:
      store<int64_t>(out[0], values, false, high);
      break;
    case ElemKind::Bool:
      store<uint8_t>(out[0], values, false, high);
      break;
    default:
      return makeError("Random: no kernel for output ", out[0].type.str());
  }
  return Error::success();
}

}  // namespace ember::kernels
