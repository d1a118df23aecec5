// The sweep spec (docs/codesign.md): models, a base NPU config and parameter
// axes, expanded into points (one config x one model each) with deterministic
// ids and validated per-point config YAML.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Config.h"

namespace ember::codesign {

struct SweepModel {
  std::string name;
  std::string path;               ///< resolved against the spec's folder
  std::string calibrate;          ///< optional: [NAME=]FILE.npy for `ember quantize` (default: random data)
  std::string profile;            ///< optional: an existing quantization profile
  std::vector<std::string> dims;  ///< NAME=VALUE, passed as --dim
  /// An NPU program (.s or bundle) run with `ember sim` instead of an ONNX model.
  bool isProgram() const;
};

/// One value of an axis: the config keys it sets ("dram.bandwidth_bytes_per_cycle" -> "32").
struct AxisValue {
  std::string label;
  std::vector<std::pair<std::string, std::string>> settings;
};

struct Axis {
  std::string name;
  std::vector<AxisValue> values;
};

/// A multi-chip sweep (docs/codesign.md): the spec's `system:` block or
/// `base_system:` file, whose chips all take each point's NPU config, and the
/// `ember multichip` options of every point unless an axis sets them.
struct SweepSystem {
  std::string origin;  ///< the spec, or the base_system file
  std::string yaml;    ///< the system with its chips' configs set to the point's config.yaml
  std::string split = "pipeline";
  int64_t batch = 1;
};

struct SweepSpec {
  std::string path;  ///< the spec file
  std::string name;
  std::string backend = "npu";
  std::string baseConfigPath;  ///< empty: the built-in npu-16x16 defaults
  std::string baseConfigText;
  bool quantize = true;        ///< compile models to int8 (needed by the npu backend)
  bool quantizeGiven = false;  ///< the spec says `quantize:` (else it follows the backend)
  double timeoutSeconds = 1800;
  int64_t seed = 0;
  /// The latency the Pareto front minimises (with energy): a kLatencyObjectives entry.
  std::string objective = "latency_us";
  std::vector<SweepModel> models;
  std::vector<Axis> axes;
  std::optional<SweepSystem> system;  ///< set: every point runs `ember multichip`
  bool isMultichip() const { return system.has_value(); }
};

/// The `objective:` values: the NPU's latency, or the NPU's plus the host
/// partitions' and the host-link transfers' (results.csv's columns).
inline constexpr const char* kLatencyObjectives[] = {"latency_us", "end_to_end_latency_us"};

/// An objective the sweep can use (`context` starts the one-line error): one
/// of kLatencyObjectives, and only latency_us in a multi-chip sweep.
Error checkObjective(const std::string& objective, const std::string& context, bool multichip);

/// What `ember multichip` runs a point of a multi-chip sweep on.
struct PointSystem {
  std::string yaml;  ///< the point's system.yaml (its chips read config.yaml beside it)
  std::string split;
  int64_t batch = 1;
  int64_t chips = 1;
  std::optional<double> linkBandwidthGBps;  ///< the interconnect's, when it gives one
};

struct SweepPoint {
  size_t index = 0;                ///< position in the expansion (the Slurm array index)
  std::string id;                  ///< <model>-<hash of model, backend and effective config>
  size_t model = 0;                ///< index into SweepSpec::models
  std::vector<size_t> axisValues;  ///< per axis, the chosen value
  std::string label;               ///< "16x16, scratchpad.size_kib=256, ..."
  std::string configYaml;          ///< the effective config (base + overrides)
  npu::NpuConfig config;
  std::optional<PointSystem> system;  ///< set in a multi-chip sweep
};

/// Reads a spec. `variables` (from --var NAME=VALUE) override the spec's
/// `variables:` map; "${NAME}" in paths is replaced by its value.
Expected<SweepSpec> loadSweepSpec(const std::string& path,
                                  const std::map<std::string, std::string>& variables);

/// The same from the spec's text; `path` names it in errors and anchors its
/// relative paths (the sweep_spec fuzz target reads no file).
Expected<SweepSpec> parseSweepSpec(const std::string& text, const std::string& path,
                                   const std::map<std::string, std::string>& variables);

/// Every config combination (the first axis varies slowest) times every model.
/// Each point's config is validated with npu::parseConfig: a bad axis key or
/// value is an error naming the axis and the key. In a multi-chip sweep the
/// keys `system.<key>`, `split` and `batch` set the point's system and run
/// (the system itself is checked by the multichip reader, in `ember sweep`).
Expected<std::vector<SweepPoint>> expandSweep(const SweepSpec& spec);

/// 64-bit FNV-1a, for point ids.
uint64_t fnv1a(std::string_view text);

}  // namespace ember::codesign
