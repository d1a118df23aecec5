#include "SweepSpec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "Json.h"
#include "ember/TextEscape.h"

namespace ember::codesign {
namespace {

namespace fs = std::filesystem;

std::string where(const std::string& path, const YAML::Node& node) {
  return path + ":" + std::to_string(node.Mark().line + 1);
}

Expected<std::string> expandVariables(const std::string& text, const std::map<std::string, std::string>& vars,
                                      const std::string& context) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "${") != 0) {
      out += text[i];
      continue;
    }
    size_t close = text.find('}', i);
    if (close == std::string::npos) return makeError(context, ": unterminated '${' in '", text, "'");
    std::string name = text.substr(i + 2, close - i - 2);
    auto it = vars.find(name);
    if (it == vars.end())
      return makeError(context, ": unknown variable '", name,
                       "' (define it under 'variables:' or pass --var ", name, "=VALUE)");
    out += it->second;
    i = close;
  }
  return out;
}

std::string resolvePath(const std::string& specDir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(specDir) / path).lexically_normal().string();
}

Expected<std::string> scalar(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (!node.IsScalar()) return makeError(where(origin, node), ": key '", key, "': expected a scalar");
  return node.Scalar();
}

/// Sets "a.b" in a YAML map, creating "a" when needed.
void setDotted(YAML::Node root, const std::string& key, const std::string& value) {
  size_t dot = key.find('.');
  if (dot == std::string::npos) {
    root[key] = value;
    return;
  }
  YAML::Node child = root[key.substr(0, dot)];
  if (!child.IsMap()) child = YAML::Node(YAML::NodeType::Map);
  setDotted(child, key.substr(dot + 1), value);
  root[key.substr(0, dot)] = child;
}

/// Each point's system.yaml names the point's NPU config beside it.
constexpr const char* kPointConfigFile = "config.yaml";

/// What an axis key sets: the point's NPU config, its system, or an `ember multichip` option.
enum class KeyKind { Npu, System, Split, Batch };

KeyKind keyKind(const std::string& key) {
  if (key == "split") return KeyKind::Split;
  if (key == "batch") return KeyKind::Batch;
  return key.starts_with("system.") ? KeyKind::System : KeyKind::Npu;
}

/// The system keys (docs/multichip.md) an axis may set, after "system.".
bool isSystemKey(const std::string& key) {
  static const char* const kKeys[] = {"name",
                                      "chips",
                                      "interconnect.topology",
                                      "interconnect.bandwidth_gb_per_s",
                                      "interconnect.latency_ns",
                                      "dram.kind",
                                      "dram.size_mib",
                                      "dram.bandwidth_gb_per_s",
                                      "host.timed",
                                      "host.macs_per_s",
                                      "host.gbps",
                                      "host.link_gb_per_s",
                                      "host.link_latency_us"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

/// An axis key that is not an NPU config key must belong to a multi-chip sweep.
Error checkAxisKey(const std::string& key, const YAML::Node& node, const std::string& origin,
                   const SweepSpec& spec, const std::string& axis) {
  const KeyKind kind = keyKind(key);
  if (kind == KeyKind::Npu) return Error::success();
  if (!spec.isMultichip())
    return makeError(where(origin, node), ": axis '", axis, "': key '", key,
                     "' needs a multi-chip system ('system:' or 'base_system:', docs/codesign.md)");
  if (kind == KeyKind::System && !isSystemKey(key.substr(7)))
    return makeError(
        where(origin, node), ": axis '", axis, "': unknown system key '", key,
        "' (system.chips, system.interconnect.topology, system.interconnect.bandwidth_gb_per_s, "
        "system.interconnect.latency_ns, system.dram.kind, system.dram.size_mib, "
        "system.dram.bandwidth_gb_per_s, system.host.timed, system.host.macs_per_s, "
        "system.host.gbps, system.host.link_gb_per_s, system.host.link_latency_us, system.name)");
  return Error::success();
}

Error checkSplit(const std::string& split, const std::string& context) {
  if (split == "pipeline" || split == "data") return Error::success();
  return makeError(context, ": 'split' is pipeline or data, not '", split, "'");
}

Expected<int64_t> parseCount(const std::string& text, const std::string& context, const std::string& key,
                             int64_t max) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > max)
    return makeError(context, ": '", key, "' is an integer from 1 to ", max, ", not '", text, "'");
  return int64_t(value);
}

constexpr int64_t kMaxBatch = 1 << 20;
constexpr int64_t kMaxChips = 1024;

Error parseAxes(const YAML::Node& node, const std::string& origin, SweepSpec& spec) {
  if (!node.IsMap())
    return makeError(where(origin, node), ": key 'axes': expected a map of axis name to values");
  for (const auto& entry : node) {
    Axis axis;
    axis.name = entry.first.Scalar();
    const YAML::Node& values = entry.second;
    if (!values.IsSequence() || values.size() == 0)
      return makeError(where(origin, values), ": axis '", axis.name,
                       "': expected a non-empty list of values");
    for (const YAML::Node& v : values) {
      AxisValue value;
      if (v.IsScalar()) {
        // A config key swept over scalar values.
        EMBER_RETURN_IF_ERROR(checkAxisKey(axis.name, v, origin, spec, axis.name));
        value.settings.emplace_back(axis.name, v.Scalar());
        value.label = axis.name + "=" + v.Scalar();
      } else if (v.IsMap()) {
        // A named axis whose values set several keys together (e.g. an array size).
        for (const auto& setting : v) {
          std::string key = setting.first.Scalar();
          if (key == "label") {
            value.label = setting.second.Scalar();
            continue;
          }
          EMBER_ASSIGN_OR_RETURN(std::string text, scalar(setting.second, origin, key));
          EMBER_RETURN_IF_ERROR(checkAxisKey(key, setting.first, origin, spec, axis.name));
          value.settings.emplace_back(key, text);
        }
        if (value.label.empty())
          for (const auto& [k, text] : value.settings) {
            if (!value.label.empty()) value.label += ' ';
            value.label += k;
            value.label += '=';
            value.label += text;
          }
      } else {
        return makeError(where(origin, v), ": axis '", axis.name,
                         "': a value is a scalar or a map of config keys");
      }
      axis.values.push_back(std::move(value));
    }
    spec.axes.push_back(std::move(axis));
  }
  return Error::success();
}

}  // namespace

Error checkObjective(const std::string& objective, const std::string& context, bool multichip) {
  std::string allowed;
  for (const char* name : kLatencyObjectives) allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  if (std::find(std::begin(kLatencyObjectives), std::end(kLatencyObjectives), objective) ==
      std::end(kLatencyObjectives))
    return makeError(context, ": '", objective, "' is not one of ", allowed);
  // A multi-chip sweep has no Pareto front; its latency_us is already the system's, end to end.
  if (multichip && objective != kLatencyObjectives[0])
    return makeError(context,
                     ": a multi-chip sweep has no Pareto front and its latency_us is already the "
                     "system's end to end: only latency_us");
  return Error::success();
}

bool SweepModel::isProgram() const { return !path.ends_with(".onnx"); }

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

Expected<SweepSpec> loadSweepSpec(const std::string& path,
                                  const std::map<std::string, std::string>& overrides) {
  EMBER_ASSIGN_OR_RETURN(std::string text, readTextFile(path));
  return parseSweepSpec(text, path, overrides);
}

namespace {
Expected<SweepSpec> parseSweepSpecImpl(const std::string& text, const std::string& path,
                                       const std::map<std::string, std::string>& overrides);
}  // namespace

Expected<SweepSpec> parseSweepSpec(const std::string& text, const std::string& path,
                                   const std::map<std::string, std::string>& overrides) {
  // yaml-cpp's messages quote the offending character, a newline included.
  Expected<SweepSpec> spec = parseSweepSpecImpl(text, path, overrides);
  if (!spec) return oneLineError(spec.error());
  return spec;
}

namespace {

/// Where the spec is and its variables: resolves the spec's path values.
struct SpecContext {
  const std::string& path;
  std::string specDir;
  std::map<std::string, std::string> vars;

  /// The scalar at `node`, its ${variables} expanded, relative to the spec's directory.
  Expected<std::string> pathAt(const YAML::Node& node, const std::string& key) const {
    EMBER_ASSIGN_OR_RETURN(std::string raw, scalar(node, path, key));
    EMBER_ASSIGN_OR_RETURN(std::string expanded, expandVariables(raw, vars, where(path, node)));
    return resolvePath(specDir, expanded);
  }
};

/// The spec's 'variables:', then the --var overrides over them.
Error readVariables(const YAML::Node& root, const std::map<std::string, std::string>& overrides,
                    SpecContext& context) {
  if (const YAML::Node v = root["variables"]) {
    if (!v.IsMap()) return makeError(where(context.path, v), ": key 'variables': expected a map");
    for (const auto& entry : v) context.vars[entry.first.Scalar()] = entry.second.Scalar();
  }
  for (const auto& [k, value] : overrides) context.vars[k] = value;
  return Error::success();
}

Error checkTopLevelKeys(const YAML::Node& root, const std::string& path) {
  static const char* const kKeys[] = {
      "name",   "variables", "backend", "base_config", "quantize", "timeout_seconds", "seed",
      "models", "axes",      "system",  "base_system", "split",    "batch",           "objective"};
  for (const auto& entry : root) {
    std::string key = entry.first.Scalar();
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      return makeError(where(path, entry.first), ": unknown key '", key, "' (see docs/codesign.md)");
  }
  return Error::success();
}

/// name, backend, quantize, timeout_seconds and seed.
Error readSettings(const YAML::Node& root, const std::string& path, SweepSpec& spec) {
  try {
    if (root["name"]) spec.name = root["name"].as<std::string>();
    if (root["backend"]) spec.backend = root["backend"].as<std::string>();
    spec.quantize = spec.backend == "npu";
    if (root["quantize"]) {
      spec.quantize = root["quantize"].as<bool>();
      spec.quantizeGiven = true;
    }
    if (root["timeout_seconds"]) spec.timeoutSeconds = root["timeout_seconds"].as<double>();
    if (root["seed"]) spec.seed = root["seed"].as<int64_t>();
  } catch (const YAML::Exception& e) {
    return makeError(path, ":", e.mark.line + 1, ": ", e.msg);
  }
  if (spec.timeoutSeconds <= 0) return makeError(path, ": key 'timeout_seconds': must be positive");
  return Error::success();
}

/// base_config: read and checked as an NPU config, its text kept for the points.
Error readBaseConfig(const YAML::Node& root, const SpecContext& context, SweepSpec& spec) {
  const YAML::Node base = root["base_config"];
  if (!base) return Error::success();
  const std::string& path = context.path;
  EMBER_ASSIGN_OR_RETURN(spec.baseConfigPath, context.pathAt(base, "base_config"));
  Expected<std::string> baseText = readTextFile(spec.baseConfigPath);
  if (!baseText) return baseText.error().withContext(path + ": base_config");
  spec.baseConfigText = baseText.take();
  Expected<npu::NpuConfig> parsed = npu::parseConfig(spec.baseConfigText, spec.baseConfigPath);
  if (!parsed) return parsed.error().withContext(path + ": base_config");
  return Error::success();
}

/// Points every chip of a system at the point's config.yaml (`chips: N` becomes
/// {count: N}); an inline system may not give its chips configs of their own.
Error setChipConfigs(YAML::Node system, const std::string& origin, bool inlineSystem) {
  const YAML::Node given = system["chips"];
  YAML::Node chips(YAML::NodeType::Map);
  if (!given) {
    chips["count"] = 1;
  } else if (given.IsScalar()) {
    chips["count"] = given.Scalar();
  } else if (given.IsMap() || given.IsSequence()) {
    chips = given;
  } else {
    return makeError(where(origin, given), ": system: 'chips' is a count, {count: N} or a list of chips");
  }
  std::vector<YAML::Node> each;
  if (chips.IsMap()) each.push_back(chips);
  for (size_t i = 0; chips.IsSequence() && i < chips.size(); ++i) {
    if (!chips[i].IsMap()) return makeError(where(origin, chips[i]), ": system: a chip is a map {name: ...}");
    each.push_back(chips[i]);
  }
  for (YAML::Node chip : each) {
    const YAML::Node config = static_cast<const YAML::Node&>(chip)["config"];
    if (inlineSystem && config)
      return makeError(where(origin, config),
                       ": system: chips: 'config': every chip takes the point's NPU config (base_config and "
                       "the axes)");
    chip["config"] = kPointConfigFile;
  }
  system["chips"] = chips;
  return Error::success();
}

/// `split:` and `batch:`, the `ember multichip` options of every point unless an axis sets them.
Error readRunOptions(const YAML::Node& root, const std::string& path, SweepSystem& system) {
  if (const YAML::Node split = root["split"]) {
    EMBER_ASSIGN_OR_RETURN(system.split, scalar(split, path, "split"));
    EMBER_RETURN_IF_ERROR(checkSplit(system.split, where(path, split)));
  }
  if (const YAML::Node batch = root["batch"]) {
    EMBER_ASSIGN_OR_RETURN(std::string text, scalar(batch, path, "batch"));
    EMBER_ASSIGN_OR_RETURN(system.batch, parseCount(text, where(path, batch), "batch", kMaxBatch));
  }
  return Error::success();
}

/// system: (inline) or base_system: (a file), with every chip taking the point's NPU config.
Error readSystem(const YAML::Node& root, const SpecContext& context, SweepSpec& spec) {
  const std::string& path = context.path;
  const YAML::Node inlineSystem = root["system"], baseSystem = root["base_system"];
  if (!inlineSystem && !baseSystem) {
    for (const char* key : {"split", "batch"})
      if (root[key])
        return makeError(where(path, root[key]), ": key '", key,
                         "' needs a multi-chip system ('system:' or 'base_system:')");
    return Error::success();
  }
  if (inlineSystem && baseSystem)
    return makeError(where(path, baseSystem), ": give 'system:' or 'base_system:', not both");
  SweepSystem system;
  YAML::Node node;
  if (inlineSystem) {
    system.origin = path;
    node = YAML::Clone(inlineSystem);
  } else {
    EMBER_ASSIGN_OR_RETURN(system.origin, context.pathAt(baseSystem, "base_system"));
    Expected<std::string> text = readTextFile(system.origin);
    if (!text) return text.error().withContext(path + ": base_system");
    EMBER_RETURN_IF_ERROR(checkYamlText(*text, system.origin));
    try {
      node = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      return makeError(system.origin, ":", e.mark.line + 1, ": ", e.msg);
    }
  }
  if (!node.IsMap())
    return makeError(where(path, inlineSystem ? inlineSystem : baseSystem), ": key '",
                     inlineSystem ? "system" : "base_system",
                     "': expected a multi-chip system (docs/multichip.md)");
  EMBER_RETURN_IF_ERROR(setChipConfigs(node, system.origin, bool(inlineSystem)));
  EMBER_RETURN_IF_ERROR(readRunOptions(root, path, system));
  if (spec.backend != "npu")
    return makeError(path, ": key 'backend': a multi-chip sweep runs `ember multichip` on NPUs, not '",
                     spec.backend, "'");
  for (const SweepModel& model : spec.models)
    if (model.isProgram())
      return makeError(path, ": model '", model.name,
                       "': a multi-chip sweep splits ONNX models, not NPU programs");
  YAML::Emitter emitter;
  emitter << node;
  system.yaml = std::string(emitter.c_str()) + "\n";
  spec.system = std::move(system);
  return Error::success();
}

/// objective: the latency of the Pareto front, checked once the spec knows whether it is multi-chip.
Error readObjective(const YAML::Node& root, const std::string& path, SweepSpec& spec) {
  const YAML::Node objective = root["objective"];
  if (!objective) return Error::success();
  EMBER_ASSIGN_OR_RETURN(spec.objective, scalar(objective, path, "objective"));
  return checkObjective(spec.objective, where(path, objective) + ": key 'objective'", spec.isMultichip());
}

/// One key of a model given as a map.
Error readModelKey(const std::string& key, const YAML::Node& value, const YAML::Node& keyNode,
                   const SpecContext& context, SweepModel& model) {
  const std::string& path = context.path;
  if (key == "path") {
    EMBER_ASSIGN_OR_RETURN(model.path, context.pathAt(value, key));
  } else if (key == "name") {
    EMBER_ASSIGN_OR_RETURN(model.name, scalar(value, path, key));
  } else if (key == "profile") {
    EMBER_ASSIGN_OR_RETURN(model.profile, context.pathAt(value, key));
  } else if (key == "calibrate") {
    // [NAME=]FILE.npy: only the file part is a path.
    EMBER_ASSIGN_OR_RETURN(std::string raw, scalar(value, path, key));
    size_t eq = raw.find('=');
    std::string prefix = eq == std::string::npos ? "" : raw.substr(0, eq + 1);
    EMBER_ASSIGN_OR_RETURN(std::string file,
                           expandVariables(raw.substr(prefix.size()), context.vars, where(path, value)));
    model.calibrate = prefix + resolvePath(context.specDir, file);
  } else if (key == "dims") {
    if (!value.IsSequence())
      return makeError(where(path, value), ": key 'dims': expected a list of NAME=VALUE");
    for (const YAML::Node& d : value) model.dims.push_back(d.Scalar());
  } else {
    return makeError(where(path, keyNode), ": unknown model key '", key,
                     "' (path, name, calibrate, profile, dims)");
  }
  return Error::success();
}

/// models: each a path or a map of model keys, names unique.
Error readModels(const YAML::Node& root, const SpecContext& context, SweepSpec& spec) {
  const std::string& path = context.path;
  const YAML::Node models = root["models"];
  if (!models || !models.IsSequence() || models.size() == 0)
    return makeError(path, ": key 'models': expected a non-empty list");
  for (const YAML::Node& m : models) {
    SweepModel model;
    if (m.IsScalar()) {
      EMBER_ASSIGN_OR_RETURN(model.path, context.pathAt(m, "models"));
    } else if (m.IsMap()) {
      for (const auto& entry : m)
        EMBER_RETURN_IF_ERROR(readModelKey(entry.first.Scalar(), entry.second, entry.first, context, model));
    } else {
      return makeError(where(path, m), ": a model is a path or a map with 'path'");
    }
    if (model.path.empty()) return makeError(where(path, m), ": model without 'path'");
    if (model.name.empty()) model.name = fs::path(model.path).stem().string();
    for (const SweepModel& other : spec.models)
      if (other.name == model.name)
        return makeError(where(path, m), ": two models named '", model.name, "' (give one a 'name')");
    spec.models.push_back(std::move(model));
  }
  return Error::success();
}

Expected<SweepSpec> parseSweepSpecImpl(const std::string& text, const std::string& path,
                                       const std::map<std::string, std::string>& overrides) {
  EMBER_RETURN_IF_ERROR(checkYamlText(text, path));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return makeError(path, ":", e.mark.line + 1, ": ", e.msg);
  }
  if (!root.IsMap()) return makeError(path, ": a sweep spec is a YAML map (docs/codesign.md)");

  SweepSpec spec;
  spec.path = path;
  spec.name = fs::path(path).stem().string();
  SpecContext context{path, fs::path(path).parent_path().string(), {}};
  EMBER_RETURN_IF_ERROR(readVariables(root, overrides, context));
  EMBER_RETURN_IF_ERROR(checkTopLevelKeys(root, path));
  EMBER_RETURN_IF_ERROR(readSettings(root, path, spec));
  EMBER_RETURN_IF_ERROR(readBaseConfig(root, context, spec));
  EMBER_RETURN_IF_ERROR(readModels(root, context, spec));
  EMBER_RETURN_IF_ERROR(readSystem(root, context, spec));
  EMBER_RETURN_IF_ERROR(readObjective(root, path, spec));
  if (const YAML::Node axes = root["axes"]) EMBER_RETURN_IF_ERROR(parseAxes(axes, path, spec));
  return spec;
}

}  // namespace

namespace {

/// What one combination of axis values sets: the NPU config, the system and
/// the `ember multichip` options.
struct Combination {
  YAML::Node config;
  YAML::Node system;  ///< null outside a multi-chip sweep
  std::string split;
  int64_t batch = 1;
  std::string label;     ///< every axis value
  std::string npuLabel;  ///< the values that set NPU config keys (the config's name)
};

/// Sets `system.<key>` in a point's system; `system.chips` is the chip count.
Error setSystemKey(const SweepSpec& spec, const std::string& key, const std::string& text,
                   const std::string& context, YAML::Node system) {
  if (key != "system.chips") {
    setDotted(system, key.substr(7), text);
    return Error::success();
  }
  if (system["chips"].IsSequence())
    return makeError(context, ": key 'system.chips' sets a chip count, but ", spec.system->origin,
                     " lists its chips");
  Expected<int64_t> count = parseCount(text, context, key, kMaxChips);
  if (!count) return count.error();
  system["chips"]["count"] = text;
  return Error::success();
}

/// Writes one axis value's settings into the combination.
Error applyAxisValue(const SweepSpec& spec, const Axis& axis, const AxisValue& value, Combination& c) {
  const std::string context = spec.path + ": axis '" + axis.name + "' = " + value.label;
  bool setsNpu = value.settings.empty();
  for (const auto& [key, text] : value.settings) {
    switch (keyKind(key)) {
      case KeyKind::Npu:
        setDotted(c.config, key, text);
        setsNpu = true;
        break;
      case KeyKind::Split:
        EMBER_RETURN_IF_ERROR(checkSplit(text, context));
        c.split = text;
        break;
      case KeyKind::Batch: {
        EMBER_ASSIGN_OR_RETURN(c.batch, parseCount(text, context, key, kMaxBatch));
        break;
      }
      case KeyKind::System:
        EMBER_RETURN_IF_ERROR(setSystemKey(spec, key, text, context, c.system));
        break;
    }
  }
  c.label += (c.label.empty() ? "" : ", ") + value.label;
  if (setsNpu) c.npuLabel += (c.npuLabel.empty() ? "" : ", ") + value.label;
  return Error::success();
}

/// The point's system: its YAML, chip count and link bandwidth as the axes left them.
PointSystem pointSystem(const Combination& c) {
  PointSystem system;
  YAML::Emitter emitter;
  emitter << c.system;
  system.yaml = std::string(emitter.c_str()) + "\n";
  system.split = c.split;
  system.batch = c.batch;
  // A const node's missing key is an invalid node: test it before asking its type.
  const YAML::Node chips = c.system["chips"];
  if (chips && chips.IsSequence())
    system.chips = int64_t(chips.size());
  else if (chips && chips.IsMap() && chips["count"])
    system.chips = chips["count"].as<int64_t>(1);
  const YAML::Node interconnect = c.system["interconnect"];
  double bandwidth = 0;
  if (interconnect && interconnect.IsMap() && interconnect["bandwidth_gb_per_s"] &&
      YAML::convert<double>::decode(interconnect["bandwidth_gb_per_s"], bandwidth))
    system.linkBandwidthGBps = bandwidth;
  return system;
}

/// What a point's id hashes: the model, backend, number type, config and system.
std::string pointIdentity(const SweepSpec& spec, const SweepModel& model, const std::string& yaml,
                          const std::optional<PointSystem>& system) {
  std::string identity =
      model.name + "\n" + spec.backend + "\n" + (spec.quantize ? "int8\n" : "float\n") + yaml;
  if (system)
    identity += "system\n" + system->yaml + system->split + "\n" + std::to_string(system->batch) + "\n";
  return identity;
}

/// <model>-<10 hex digits of the FNV-1a hash of the point's identity>.
std::string pointId(const SweepModel& model, const std::string& identity) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(identity)));
  std::string safe;
  for (char ch : model.name) safe += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
  return safe + "-" + std::string(hex, 10);
}

Expected<YAML::Node> loadBase(const std::string& text, const std::string& origin) {
  EMBER_RETURN_IF_ERROR(checkYamlText(text, origin));
  YAML::Node base;
  try {
    base = text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return makeError(origin, ":", e.mark.line + 1, ": ", e.msg);
  }
  if (!base.IsMap()) base = YAML::Node(YAML::NodeType::Map);
  return base;
}

/// How many axis combinations, or an error past the limit (64 axes of two values wrapped size_t to 0).
Expected<size_t> countCombinations(const SweepSpec& spec) {
  constexpr size_t kMaxPoints = 100000;
  size_t combinations = 1;
  for (const Axis& axis : spec.axes) {
    combinations *= axis.values.size();
    if (combinations > kMaxPoints) break;
  }
  if (combinations > kMaxPoints || combinations * spec.models.size() > kMaxPoints)
    return makeError(spec.path, ": the sweep has more than ", kMaxPoints, " points (",
                     combinations > kMaxPoints ? std::string("its axes alone")
                                               : std::to_string(combinations * spec.models.size()),
                     ")");
  return combinations;
}

/// "axis 'a' = v, axis 'b' = w": the axis values of one combination, for errors.
std::string describeChoice(const SweepSpec& spec, const std::vector<size_t>& choice) {
  std::string axes;
  for (size_t a = 0; a < spec.axes.size(); ++a)
    axes += (axes.empty() ? "" : ", ") + std::string("axis '") + spec.axes[a].name +
            "' = " + spec.axes[a].values[choice[a]].label;
  return axes.empty() ? "the base config" : axes;
}

/// The combination's NPU config as YAML (in `yaml`), checked by the config reader.
Expected<npu::NpuConfig> checkedConfig(const SweepSpec& spec, const std::vector<size_t>& choice,
                                       const Combination& c, std::string& yaml) {
  YAML::Emitter emitter;
  emitter << c.config;
  yaml = std::string(emitter.c_str()) + "\n";
  Expected<npu::NpuConfig> parsed = npu::parseConfig(yaml, "config");
  if (parsed) return parsed;
  return makeError(spec.path, ": ", describeChoice(spec, choice), ": ", parsed.error().message());
}

/// Gives `point` an id that no earlier point has. The same point twice is an
/// error; a different point under a taken id (40 bits collide with odds of
/// about 0.5 % in 10^5 points) gets a numbered suffix.
Error assignPointId(const SweepSpec& spec, const std::vector<size_t>& choice,
                    std::map<std::string, size_t>& pointById, const std::vector<SweepPoint>& points,
                    SweepPoint& point) {
  const SweepModel& model = spec.models[point.model];
  const std::string identity = pointIdentity(spec, model, point.configYaml, point.system);
  const std::string hashedId = pointId(model, identity);
  point.id = hashedId;
  for (int suffix = 2;; ++suffix) {
    const auto [seen, added] = pointById.emplace(point.id, points.size());
    if (added) return Error::success();
    const SweepPoint& other = points[seen->second];
    if (pointIdentity(spec, spec.models[other.model], other.configYaml, other.system) == identity)
      return makeError(spec.path, ": ", describeChoice(spec, other.axisValues), " and ",
                       describeChoice(spec, choice), " give the same point of model '", model.name, "' (",
                       point.id, "): remove the repeated axis value");
    point.id = hashedId + "-" + std::to_string(suffix);
  }
}

}  // namespace

namespace {

Expected<std::vector<SweepPoint>> expandSweepImpl(const SweepSpec& spec) {
  EMBER_ASSIGN_OR_RETURN(YAML::Node base, loadBase(spec.baseConfigText, spec.baseConfigPath));
  YAML::Node baseSystem;
  if (spec.system) {
    EMBER_ASSIGN_OR_RETURN(baseSystem, loadBase(spec.system->yaml, spec.system->origin));
  }
  const std::string baseName = base["name"] && base["name"].IsScalar() ? base["name"].Scalar() : "npu-16x16";
  EMBER_ASSIGN_OR_RETURN(const size_t combinations, countCombinations(spec));

  std::vector<SweepPoint> points;
  // Two points with one id would share points/<id>/ and one results row: an
  // axis that repeats a value (or two axes that set a key to the same effect)
  // is refused rather than run twice.
  std::map<std::string, size_t> pointById;
  std::vector<size_t> choice(spec.axes.size(), 0);
  for (size_t n = 0; n < combinations; ++n) {
    // Mixed-radix counter; the last axis varies fastest.
    size_t rest = n;
    for (size_t a = spec.axes.size(); a-- > 0;) {
      choice[a] = rest % spec.axes[a].values.size();
      rest /= spec.axes[a].values.size();
    }
    Combination c;
    c.config = YAML::Clone(base);
    if (spec.system) {
      c.system = YAML::Clone(baseSystem);
      c.split = spec.system->split;
      c.batch = spec.system->batch;
    }
    for (size_t a = 0; a < spec.axes.size(); ++a)
      EMBER_RETURN_IF_ERROR(applyAxisValue(spec, spec.axes[a], spec.axes[a].values[choice[a]], c));
    c.config["name"] = c.npuLabel.empty() ? baseName : baseName + " [" + c.npuLabel + "]";
    std::string yaml;
    EMBER_ASSIGN_OR_RETURN(npu::NpuConfig config, checkedConfig(spec, choice, c, yaml));
    std::optional<PointSystem> system;
    if (spec.system) system = pointSystem(c);
    for (size_t m = 0; m < spec.models.size(); ++m) {
      SweepPoint point;
      point.index = points.size();
      point.model = m;
      point.axisValues = choice;
      point.label = c.label.empty() ? baseName : c.label;
      point.configYaml = yaml;
      point.config = config;
      point.system = system;
      EMBER_RETURN_IF_ERROR(assignPointId(spec, choice, pointById, points, point));
      points.push_back(std::move(point));
    }
  }
  return points;
}

}  // namespace

Expected<std::vector<SweepPoint>> expandSweep(const SweepSpec& spec) {
  // Axis labels and config errors quote the spec's own text, which may hold
  // control characters: the error stays one line.
  Expected<std::vector<SweepPoint>> points = expandSweepImpl(spec);
  if (!points) return oneLineError(points.error());
  return points;
}

}  // namespace ember::codesign
