#include "SweepSpec.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>

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
          value.settings.emplace_back(key, text);
        }
        if (value.label.empty())
          for (const auto& [k, text] : value.settings)
            value.label += (value.label.empty() ? "" : " ") + k + "=" + text;
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
      "name", "variables", "backend", "base_config", "quantize", "timeout_seconds", "seed", "models", "axes"};
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
  if (const YAML::Node axes = root["axes"]) EMBER_RETURN_IF_ERROR(parseAxes(axes, path, spec));
  return spec;
}

}  // namespace

Expected<std::vector<SweepPoint>> expandSweep(const SweepSpec& spec) {
  YAML::Node base;
  try {
    base = spec.baseConfigText.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(spec.baseConfigText);
  } catch (const YAML::Exception& e) {
    return makeError(spec.baseConfigPath, ":", e.mark.line + 1, ": ", e.msg);
  }
  if (!base.IsMap()) base = YAML::Node(YAML::NodeType::Map);
  const std::string baseName = base["name"] && base["name"].IsScalar() ? base["name"].Scalar() : "npu-16x16";

  // Stop multiplying past the limit: 64 axes of two values wrapped size_t to 0.
  constexpr size_t kMaxPoints = 100000;
  size_t combinations = 1;
  for (const Axis& axis : spec.axes)
    if ((combinations *= axis.values.size()) > kMaxPoints) break;
  if (combinations > kMaxPoints || combinations * spec.models.size() > kMaxPoints)
    return makeError(spec.path, ": the sweep has more than ", kMaxPoints, " points (",
                     combinations > kMaxPoints ? std::string("its axes alone")
                                               : std::to_string(combinations * spec.models.size()),
                     ")");

  std::vector<SweepPoint> points;
  std::vector<size_t> choice(spec.axes.size(), 0);
  for (size_t c = 0; c < combinations; ++c) {
    // Mixed-radix counter; the last axis varies fastest.
    size_t rest = c;
    for (size_t a = spec.axes.size(); a-- > 0;) {
      choice[a] = rest % spec.axes[a].values.size();
      rest /= spec.axes[a].values.size();
    }
    YAML::Node config = YAML::Clone(base);
    std::string label, context;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      const AxisValue& value = spec.axes[a].values[choice[a]];
      label += (label.empty() ? "" : ", ") + value.label;
      for (const auto& [key, text] : value.settings) setDotted(config, key, text);
    }
    config["name"] = label.empty() ? baseName : baseName + " [" + label + "]";
    YAML::Emitter emitter;
    emitter << config;
    std::string yaml = std::string(emitter.c_str()) + "\n";
    Expected<npu::NpuConfig> parsed = npu::parseConfig(yaml, "config");
    if (!parsed) {
      std::string axes;
      for (size_t a = 0; a < spec.axes.size(); ++a)
        axes += (axes.empty() ? "" : ", ") + std::string("axis '") + spec.axes[a].name +
                "' = " + spec.axes[a].values[choice[a]].label;
      return makeError(spec.path, ": ", axes, ": ", parsed.error().message());
    }
    for (size_t m = 0; m < spec.models.size(); ++m) {
      SweepPoint point;
      point.index = points.size();
      point.model = m;
      point.axisValues = choice;
      point.label = label.empty() ? baseName : label;
      point.configYaml = yaml;
      point.config = *parsed;
      const SweepModel& model = spec.models[m];
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx",
                    static_cast<unsigned long long>(fnv1a(model.name + "\n" + spec.backend + "\n" +
                                                          (spec.quantize ? "int8\n" : "float\n") + yaml)));
      std::string safe;
      for (char ch : model.name) safe += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
      point.id = safe + "-" + std::string(hex, 10);
      points.push_back(std::move(point));
    }
  }
  return points;
}

}  // namespace ember::codesign
