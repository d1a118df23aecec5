// Post-training int8 quantization (docs/quantization.md): calibration
// profiles, calibration on the reference backend, and the conversion of a
// graph to the quantized primitives of Ops.def. The integer arithmetic itself
// is ember/QuantMath.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace ember {

/// How real ranges become (scale, offset).
enum class QuantSchema {
  Asymmetric,       ///< activations: offset in the kind's range, [min, max] covers 0
  Symmetric,        ///< offset 0, scale = max(|min|, |max|) / 127
  SymmetricPower2,  ///< symmetric with the scale rounded up to a power of two
};
/// How a tensor's range is chosen from what calibration observed.
enum class CalibrationMethod { MinMax, Percentile, KL };

std::string_view schemaName(QuantSchema schema);
Expected<QuantSchema> parseSchema(std::string_view name);
std::string_view calibrationName(CalibrationMethod method);
Expected<CalibrationMethod> parseCalibration(std::string_view name);

/// The quantization of one activation tensor.
struct TensorQuantization {
  float min = 0, max = 0;  ///< calibrated real range (informational)
  ElemKind kind = ElemKind::Int8Q;
  float scale = 1;
  int32_t offset = 0;
};

/// A calibration profile: the quantization of every f32 tensor of the graph
/// (at the stage after the graph optimizer), keyed by tensor name (the node
/// name; "name:N" for result N > 0), and the hash of that graph.
struct QuantizationProfile {
  std::string model;      ///< informational
  std::string graphHash;  ///< graphHash() of the calibrated graph
  QuantSchema schema = QuantSchema::Asymmetric;
  CalibrationMethod calibration = CalibrationMethod::MinMax;
  bool perChannel = false;  ///< per-output-channel weight scales
  std::map<std::string, TensorQuantization> tensors;

  /// YAML text (docs/quantization.md, "Profile format").
  std::string toYaml() const;
  /// Parses YAML; errors name `origin` and the offending key or tensor.
  static Expected<QuantizationProfile> parse(const std::string& text, const std::string& origin);
  static Expected<QuantizationProfile> load(const std::string& path);
};

/// Stable hash (16 hex digits) of a function's structure, types, attributes
/// and constant payloads.
std::string graphHash(const Function& function);
/// The profile key of a value: its node's name, with ":N" for result N > 0.
std::string tensorName(NodeValue value);

/// (scale, offset) of a real range under a schema for an 8-bit kind. Ranges
/// are widened to include 0; an empty range gets scale 1.
TensorQuantization chooseQuantization(float min, float max, QuantSchema schema,
                                      ElemKind kind = ElemKind::Int8Q);

struct CalibrationOptions {
  QuantSchema schema = QuantSchema::Asymmetric;
  CalibrationMethod method = CalibrationMethod::MinMax;
  bool perChannel = false;
  double percentile = 99.99;  ///< for CalibrationMethod::Percentile
  int64_t bins = 2048;        ///< histogram bins (percentile, kl)
};

/// One calibration sample: a value for every model input.
using CalibrationSample = std::map<std::string, Tensor>;

/// Runs `function` (already through the graph optimizer; it is consumed:
/// every f32 tensor becomes an extra output and it is compiled) on
/// `backend` for every sample, records per-tensor ranges and histograms,
/// and returns the profile. `hash` is graphHash() of the function before.
Expected<QuantizationProfile> calibrate(Function& function, std::unique_ptr<Backend> backend,
                                        const std::vector<CalibrationSample>& samples,
                                        const CalibrationOptions& options);

/// What conversion did: nodes that stayed float, with the reason.
struct QuantizationReport {
  struct FloatNode {
    std::string name, op, reason;
  };
  std::vector<FloatNode> floatNodes;
  size_t quantizedNodes = 0;
};

/// Converts `function` (at the graph stage the profile was calibrated on) to
/// the quantized primitives wherever `backend.supports()` accepts them; the
/// rest stays float between Quantize and Dequantize, and model outputs stay
/// f32. Fails on a hash mismatch or a tensor missing from the profile.
Error quantizeFunction(Function& function, const QuantizationProfile& profile, const Backend& backend,
                       QuantizationReport* report = nullptr);

}  // namespace ember
