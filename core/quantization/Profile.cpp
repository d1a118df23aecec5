// Calibration profiles: choosing (scale, offset), the YAML format, and the
// graph hash that ties a profile to the graph it was calibrated on.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "ember/QuantMath.h"
#include "ember/Quantization.h"
#include "ember/TensorHash.h"
#include "ember/TextEscape.h"

namespace ember {

std::string_view schemaName(QuantSchema schema) {
  switch (schema) {
    case QuantSchema::Asymmetric:
      return "asymmetric";
    case QuantSchema::Symmetric:
      return "symmetric";
    case QuantSchema::SymmetricPower2:
      return "symmetric-power2";
  }
  return "?";
}

Expected<QuantSchema> parseSchema(std::string_view name) {
  for (QuantSchema s : {QuantSchema::Asymmetric, QuantSchema::Symmetric, QuantSchema::SymmetricPower2})
    if (name == schemaName(s)) return s;
  return makeError("unknown schema '", name, "' (expected asymmetric, symmetric or symmetric-power2)");
}

std::string_view calibrationName(CalibrationMethod method) {
  switch (method) {
    case CalibrationMethod::MinMax:
      return "minmax";
    case CalibrationMethod::Percentile:
      return "percentile";
    case CalibrationMethod::KL:
      return "kl";
  }
  return "?";
}

Expected<CalibrationMethod> parseCalibration(std::string_view name) {
  for (CalibrationMethod m :
       {CalibrationMethod::MinMax, CalibrationMethod::Percentile, CalibrationMethod::KL})
    if (name == calibrationName(m)) return m;
  return makeError("unknown calibration method '", name, "' (expected minmax, percentile or kl)");
}

std::string tensorName(NodeValue value) {
  return value.resNo == 0 ? value.node->name() : value.node->name() + ":" + std::to_string(value.resNo);
}

std::string graphHash(const Function& function) {
  // FNV-1a over the text form (structure, names, types, attributes) and the
  // constant payload hashes, in topological order.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      h ^= static_cast<const unsigned char*>(data)[i];
      h *= 0x100000001b3ull;
    }
  };
  const auto order = function.topologicalOrder();
  std::vector<const Tensor*> payloads;
  for (const Node* node : order)
    if (node->isConstant()) payloads.push_back(&node->payload());
  const std::vector<uint64_t> payloadHashes = hashTensors(payloads);
  size_t constantIndex = 0;
  for (const Node* node : order) {
    std::string line = node->str();
    mix(line.data(), line.size());
    if (node->isConstant()) {
      uint64_t payload = payloadHashes[constantIndex++];
      mix(&payload, sizeof payload);
    }
  }
  for (const auto& [name, value] : function.outputs()) {
    std::string line = name + "=" + tensorName(value);
    mix(line.data(), line.size());
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TensorQuantization chooseQuantization(float min, float max, QuantSchema schema, ElemKind kind) {
  TensorQuantization q;
  q.min = min;
  q.max = max;
  q.kind = kind;
  const quant::QuantRange range = kind == ElemKind::UInt8Q ? quant::uint8Range() : quant::int8Range();
  // The range always holds 0, so that zero (padding, ReLU) is exact.
  double lo = std::min(0.0, double(min)), hi = std::max(0.0, double(max));
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi - lo <= 0) return q;  // scale 1, offset 0
  // A range so small that its step is no normal float (a squared product of
  // tiny values, ~1e-42) would get scale 0 or a denormal: it holds nothing
  // int8 can tell from zero, so it is treated as empty.
  const double steps = kind == ElemKind::UInt8Q || schema == QuantSchema::Asymmetric ? 255.0 : 127.0;
  if (std::max(hi, -lo) / steps < double(std::numeric_limits<float>::min())) return q;
  if (schema == QuantSchema::Asymmetric) {
    double scale = (hi - lo) / double(range.hi - range.lo);
    q.scale = float(scale);
    q.offset = quant::clampTo(std::llround(double(range.lo) - lo / double(q.scale)), range.lo, range.hi);
    return q;
  }
  // Symmetric: offset 0 for int8; uint8 (non-negative data) keeps offset 0 too.
  double absMax = std::max(-lo, hi);
  double scale = absMax / steps;
  if (schema == QuantSchema::SymmetricPower2) scale = std::exp2(std::ceil(std::log2(scale)));
  q.scale = float(scale);
  q.offset = 0;
  return q;
}

// ---- YAML -------------------------------------------------------------------------

std::string QuantizationProfile::toYaml() const {
  YAML::Emitter out;
  out.SetFloatPrecision(9);
  out.SetDoublePrecision(17);
  out << YAML::Comment("Ember int8 quantization profile (docs/quantization.md)");
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << 1;
  out << YAML::Key << "model" << YAML::Value << model;
  out << YAML::Key << "graph_hash" << YAML::Value << graphHash;
  out << YAML::Key << "schema" << YAML::Value << std::string(schemaName(schema));
  out << YAML::Key << "calibration" << YAML::Value << std::string(calibrationName(calibration));
  out << YAML::Key << "per_channel" << YAML::Value << perChannel;
  out << YAML::Key << "tensors" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, t] : tensors) {
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value << std::string(elemKindName(t.kind));
    out << YAML::Key << "scale" << YAML::Value << t.scale;
    out << YAML::Key << "offset" << YAML::Value << t.offset;
    out << YAML::Key << "min" << YAML::Value << t.min;
    out << YAML::Key << "max" << YAML::Value << t.max;
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

/// Reads a scalar of type T from `node`, or fails naming the key.
template <typename T>
Expected<T> scalar(const YAML::Node& node, const std::string& key) {
  if (!node || !node.IsScalar()) return makeError("key '", key, "' is missing or not a scalar");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return makeError("key '", key, "' has an invalid value '", node.Scalar(), "'");
  }
}

Expected<TensorQuantization> parseTensor(const YAML::Node& node) {
  if (!node.IsMap()) return makeError("expected a map with keys kind, scale, offset");
  for (const auto& entry : node) {
    std::string key = entry.first.as<std::string>("");
    if (key != "kind" && key != "scale" && key != "offset" && key != "min" && key != "max")
      return makeError("unknown key '", key, "'");
  }
  TensorQuantization t;
  EMBER_ASSIGN_OR_RETURN(std::string kind, scalar<std::string>(node["kind"], "kind"));
  auto k = elemKindFromName(kind);
  if (!k || (*k != ElemKind::Int8Q && *k != ElemKind::UInt8Q))
    return makeError("key 'kind' must be i8q or u8q, got '", kind, "'");
  t.kind = *k;
  EMBER_ASSIGN_OR_RETURN(double scale, scalar<double>(node["scale"], "scale"));
  if (!(scale > 0) || !std::isfinite(float(scale)) || float(scale) <= 0)
    return makeError("key 'scale' must be finite and > 0, got ", scale);
  t.scale = float(scale);
  EMBER_ASSIGN_OR_RETURN(int64_t offset, scalar<int64_t>(node["offset"], "offset"));
  int64_t lo = t.kind == ElemKind::Int8Q ? -128 : 0, hi = t.kind == ElemKind::Int8Q ? 127 : 255;
  if (offset < lo || offset > hi)
    return makeError("key 'offset' ", offset, " is outside [", lo, ", ", hi, "] of ", kind);
  t.offset = int32_t(offset);
  if (node["min"]) {
    EMBER_ASSIGN_OR_RETURN(double v, scalar<double>(node["min"], "min"));
    t.min = float(v);
  }
  if (node["max"]) {
    EMBER_ASSIGN_OR_RETURN(double v, scalar<double>(node["max"], "max"));
    t.max = float(v);
  }
  return t;
}

/// The optional keys schema, calibration and per_channel into `p`.
Error parseSettings(const YAML::Node& root, QuantizationProfile& p) {
  if (root["schema"]) {
    EMBER_ASSIGN_OR_RETURN(std::string s, scalar<std::string>(root["schema"], "schema"));
    auto schema = parseSchema(s);
    if (!schema) return schema.error().withContext("key 'schema'");
    p.schema = *schema;
  }
  if (root["calibration"]) {
    EMBER_ASSIGN_OR_RETURN(std::string s, scalar<std::string>(root["calibration"], "calibration"));
    auto method = parseCalibration(s);
    if (!method) return method.error().withContext("key 'calibration'");
    p.calibration = *method;
  }
  if (root["per_channel"]) {
    EMBER_ASSIGN_OR_RETURN(p.perChannel, scalar<bool>(root["per_channel"], "per_channel"));
  }
  return Error::success();
}

Expected<QuantizationProfile> parseRoot(const YAML::Node& root) {
  if (!root.IsMap())
    return makeError("the document must be a map with keys version, graph_hash, tensors, ...");
  static const char* kKeys[] = {"version",     "model",       "graph_hash", "schema",
                                "calibration", "per_channel", "tensors"};
  for (const auto& entry : root) {
    std::string key = entry.first.as<std::string>("");
    bool known = false;
    for (const char* k : kKeys) known |= key == k;
    if (!known) return makeError("unknown key '", key, "'");
  }
  QuantizationProfile p;
  EMBER_ASSIGN_OR_RETURN(int64_t version, scalar<int64_t>(root["version"], "version"));
  if (version != 1) return makeError("key 'version': unsupported profile version ", version, " (expected 1)");
  if (root["model"]) {
    EMBER_ASSIGN_OR_RETURN(p.model, scalar<std::string>(root["model"], "model"));
  }
  EMBER_ASSIGN_OR_RETURN(p.graphHash, scalar<std::string>(root["graph_hash"], "graph_hash"));
  EMBER_RETURN_IF_ERROR(parseSettings(root, p));
  const YAML::Node tensors = root["tensors"];
  if (!tensors || !tensors.IsMap()) return makeError("key 'tensors' is missing or not a map");
  for (const auto& entry : tensors) {
    std::string name = entry.first.as<std::string>("");
    auto t = parseTensor(entry.second);
    if (!t) return t.error().withContext("tensor '" + name + "'");
    if (!p.tensors.emplace(name, *t).second) return makeError("tensor '", name, "' is listed twice");
  }
  return p;
}

}  // namespace

namespace {
Expected<QuantizationProfile> parseProfile(const std::string& text, const std::string& origin);
}  // namespace

Expected<QuantizationProfile> QuantizationProfile::parse(const std::string& text, const std::string& origin) {
  // yaml-cpp's messages quote the offending character, a newline included.
  Expected<QuantizationProfile> profile = parseProfile(text, origin);
  if (!profile) return oneLineError(profile.error());
  return profile;
}

namespace {
Expected<QuantizationProfile> parseProfile(const std::string& text, const std::string& origin) {
  // yaml-cpp reads bytes that are not UTF-8 as they are but writes them as
  // U+FFFD: a name holding them would not survive the profile's next write.
  EMBER_RETURN_IF_ERROR(checkYamlText(text, origin));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return makeError(origin, ": malformed YAML at line ", e.mark.line + 1, ": ", e.msg);
  }
  try {
    auto profile = parseRoot(root);
    if (!profile) return profile.error().withContext(origin);
    return profile;
  } catch (const YAML::Exception& e) {
    return makeError(origin, ": malformed profile: ", e.msg);
  }
}

}  // namespace

Expected<QuantizationProfile> QuantizationProfile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open the quantization profile");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse(buffer.str(), path);
}

}  // namespace ember
