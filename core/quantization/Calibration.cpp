// Calibration: runs the f32 graph with every f32 tensor exposed as an extra
// output, records per-tensor ranges (and histograms for percentile and KL),
// and turns them into a profile.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

constexpr const char* kOutputPrefix = "calibration:";

struct TensorStats {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  std::vector<double> histogram;  ///< over [min, max] (percentile) or [0, max|x|] (kl)
  double width = 0;

  bool seen() const { return min <= max; }
  float absMax() const { return std::max(std::fabs(min), std::fabs(max)); }
};

void updateRange(TensorStats& stats, const Tensor& t) {
  const float* x = t.as<float>();
  for (int64_t i = 0; i < t.type().numElements(); ++i) {
    if (!std::isfinite(x[i])) continue;  // NaN/inf would make the range useless
    stats.min = std::min(stats.min, x[i]);
    stats.max = std::max(stats.max, x[i]);
  }
}

void updateHistogram(TensorStats& stats, const Tensor& t, CalibrationMethod method) {
  const float* x = t.as<float>();
  const auto bins = int64_t(stats.histogram.size());
  const double base = method == CalibrationMethod::KL ? 0.0 : double(stats.min);
  for (int64_t i = 0; i < t.type().numElements(); ++i) {
    if (!std::isfinite(x[i])) continue;
    double v = method == CalibrationMethod::KL ? std::fabs(double(x[i])) : double(x[i]);
    auto bin = stats.width > 0 ? int64_t((v - base) / stats.width) : 0;
    stats.histogram[size_t(std::clamp<int64_t>(bin, 0, bins - 1))] += 1;
  }
}

/// [lo, hi] holding all but (100 - percentile)% of the values at each end.
std::pair<float, float> percentileRange(const TensorStats& s, double percentile) {
  double total = 0;
  for (double c : s.histogram) total += c;
  const double tail = total * (100.0 - percentile) / 100.0;
  size_t lo = 0, hi = s.histogram.size() - 1;
  for (double cum = 0; lo < s.histogram.size(); ++lo) {
    cum += s.histogram[lo];
    if (cum > tail) break;
  }
  for (double cum = 0; hi > 0; --hi) {
    cum += s.histogram[hi];
    if (cum > tail) break;
  }
  float a = float(double(s.min) + double(lo) * s.width), b = float(double(s.min) + double(hi + 1) * s.width);
  return {std::max(s.min, a), std::min(s.max, std::max(a, b))};
}

/// TensorRT-style entropy calibration on the |x| histogram: the clipping
/// threshold whose 128-level quantization of the clipped distribution has the
/// smallest KL divergence from it.
float klThreshold(const TensorStats& s) {
  const auto& h = s.histogram;
  const size_t bins = h.size(), levels = 128;
  if (bins <= levels) return s.absMax();
  double bestKl = std::numeric_limits<double>::infinity();
  size_t best = bins;
  std::vector<double> p, q;
  for (size_t i = levels; i <= bins; ++i) {
    p.assign(h.begin(), h.begin() + ptrdiff_t(i));
    for (size_t j = i; j < bins; ++j) p[i - 1] += h[j];  // outliers clip into the last bin
    // Quantize the first i bins of h into `levels` groups; each group's mass
    // is spread evenly over the bins where p is non-zero.
    q.assign(i, 0.0);
    for (size_t g = 0; g < levels; ++g) {
      size_t begin = g * i / levels, end = (g + 1) * i / levels;
      double mass = 0;
      size_t nonZero = 0;
      for (size_t j = begin; j < end; ++j) {
        mass += h[j];
        nonZero += p[j] > 0;
      }
      for (size_t j = begin; j < end; ++j)
        if (p[j] > 0) q[j] = mass / double(nonZero);
    }
    double pSum = 0, qSum = 0;
    for (size_t j = 0; j < i; ++j) {
      pSum += p[j];
      qSum += q[j];
    }
    if (pSum <= 0 || qSum <= 0) continue;
    double kl = 0;
    for (size_t j = 0; j < i; ++j) {
      if (p[j] <= 0) continue;
      double pj = p[j] / pSum, qj = q[j] / qSum;
      kl += pj * std::log(pj / std::max(qj, 1e-12));  // smoothing: an empty q bin is a large cost
    }
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return float(double(best) * s.width);
}

/// The f32 tensors calibration observes, in order; inputs are read from the
/// sample, the others are made outputs of `function`.
struct ObservedTensors {
  std::vector<std::string> names;
  std::vector<bool> isInput;
};

ObservedTensors observeF32Tensors(Function& function) {
  ObservedTensors observed;
  for (const Node* in : function.inputs())
    if (in->resultType().kind == ElemKind::F32) {
      observed.names.push_back(in->name());
      observed.isInput.push_back(true);
    }
  for (Node* node : function.topologicalOrder()) {
    if (node->info().category == OpCategory::Storage) continue;
    for (unsigned r = 0; r < node->numResults(); ++r) {
      if (node->resultType(r).kind != ElemKind::F32) continue;
      NodeValue value(node, r);
      observed.names.push_back(tensorName(value));
      observed.isInput.push_back(false);
      function.addOutput(kOutputPrefix + observed.names.back(), value);
    }
  }
  return observed;
}

/// Runs each sample on the loaded `device` and hands every observed tensor
/// i to visit(i, tensor).
template <typename Visit>
Error visitSamples(const CompiledModel& model, Device& device, const std::vector<CalibrationSample>& samples,
                   const ObservedTensors& observed, Visit& visit) {
  const std::vector<std::string>& names = observed.names;
  for (size_t s = 0; s < samples.size(); ++s) {
    ExecutionContext context;
    for (const auto& [name, tensor] : samples[s]) context.setInput(name, tensor);
    EMBER_RETURN_IF_ERROR(checkInputs(model, context).withContext("calibration sample " + std::to_string(s)));
    EMBER_RETURN_IF_ERROR(
        device.run("calibration", context).withContext("calibration sample " + std::to_string(s)));
    for (size_t i = 0; i < names.size(); ++i) {
      const Tensor* t =
          observed.isInput[i] ? context.input(names[i]) : context.output(kOutputPrefix + names[i]);
      if (!t) return makeError("calibration: the backend produced no value for tensor '", names[i], "'");
      visit(i, *t);
    }
  }
  return Error::success();
}

/// Empty histograms over each tensor's observed range (or its absolute
/// maximum, for KL).
void prepareHistograms(std::vector<TensorStats>& stats, const CalibrationOptions& options) {
  for (TensorStats& s : stats) {
    s.histogram.assign(size_t(std::max<int64_t>(options.bins, 16)), 0.0);
    double span =
        options.method == CalibrationMethod::KL ? double(s.absMax()) : double(s.max) - double(s.min);
    s.width = s.seen() && span > 0 ? span / double(s.histogram.size()) : 0;
  }
}

/// The quantization of a tensor from its statistics: the range the method
/// chooses, then the schema's scale and offset.
TensorQuantization quantizationOf(const TensorStats& s, const CalibrationOptions& options) {
  float lo = s.seen() ? s.min : 0, hi = s.seen() ? s.max : 0;
  if (s.seen() && s.width > 0) {
    if (options.method == CalibrationMethod::Percentile) {
      std::tie(lo, hi) = percentileRange(s, options.percentile);
    } else if (options.method == CalibrationMethod::KL) {
      float t = klThreshold(s);
      lo = std::max(s.min, -t);
      hi = std::min(s.max, t);
    }
  }
  TensorQuantization q = chooseQuantization(lo, hi, options.schema);
  q.min = lo;
  q.max = hi;
  return q;
}

}  // namespace

Expected<QuantizationProfile> calibrate(Function& function, std::unique_ptr<Backend> backend,
                                        const std::vector<CalibrationSample>& samples,
                                        const CalibrationOptions& options) {
  if (samples.empty()) return makeError("calibration needs at least one sample");
  QuantizationProfile profile;
  profile.graphHash = graphHash(function);
  profile.schema = options.schema;
  profile.calibration = options.method;
  profile.perChannel = options.perChannel;

  // Every f32 tensor: inputs are read from the sample, the rest become outputs.
  const ObservedTensors observed = observeF32Tensors(function);
  const std::vector<std::string>& names = observed.names;
  CompileOptions compileOptions;
  compileOptions.optimizeGraph = false;  // the caller ran the graph optimizer
  auto model = compileFunction(function, std::move(backend), compileOptions);
  if (!model) return model.error().withContext("calibration");
  std::unique_ptr<Device> device = model->createDevice();
  EMBER_RETURN_IF_ERROR(device->load("calibration", model->function));

  std::vector<TensorStats> stats(names.size());
  auto forEachSample = [&](auto&& visit) -> Error {
    return visitSamples(*model, *device, samples, observed, visit);
  };
  EMBER_RETURN_IF_ERROR(forEachSample([&](size_t i, const Tensor& t) { updateRange(stats[i], t); }));

  if (options.method != CalibrationMethod::MinMax) {
    prepareHistograms(stats, options);
    EMBER_RETURN_IF_ERROR(
        forEachSample([&](size_t i, const Tensor& t) { updateHistogram(stats[i], t, options.method); }));
  }
  (void)device->unload("calibration");

  for (size_t i = 0; i < names.size(); ++i) profile.tensors[names[i]] = quantizationOf(stats[i], options);
  return profile;
}

}  // namespace ember
