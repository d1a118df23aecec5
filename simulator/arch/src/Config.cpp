// Reading the NPU config (docs/npu/config.md). Every key is declared once in
// kKeys with its type, range and target field.
#include "ember/npu/Config.h"

#include "ember/TextEscape.h"

// yaml-cpp 0.7's inline node code trips GCC 12's -Wdangling-pointer.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <variant>
#include <vector>

namespace ember::npu {
namespace {

struct IntKey {
  int64_t NpuConfig::*field;
  int64_t min, max;
  int64_t scale = 1;  ///< file unit -> bytes (size_kib: 1024)
};
struct RealKey {
  double NpuConfig::*field = nullptr;
  double EnergyTable::*energy = nullptr;
  double min, max;
};
struct EnumKey {
  std::vector<std::string> names;
  std::function<void(NpuConfig&, size_t)> set;
};
struct StringKey {};

struct KeySpec {
  std::string path;
  std::variant<IntKey, RealKey, EnumKey, StringKey> type;
};

const std::vector<KeySpec>& keys() {
  static const std::vector<KeySpec> kKeys = {
      {"name", StringKey{}},
      {"clock_ghz", RealKey{&NpuConfig::clockGhz, nullptr, 0.001, 100.0}},
      {"matrix_engine.rows", IntKey{&NpuConfig::rows, 1, 1024}},
      {"matrix_engine.cols", IntKey{&NpuConfig::cols, 1, 1024}},
      {"matrix_engine.dataflow", EnumKey{{"weight_stationary", "output_stationary"},
                                         [](NpuConfig& c, size_t i) { c.dataflow = Dataflow(i); }}},
      {"matrix_engine.model",
       EnumKey{{"fast", "rtl"}, [](NpuConfig& c, size_t i) { c.matrixEngineModel = MatrixEngineModel(i); }}},
      {"matrix_engine.weight_buffers", IntKey{&NpuConfig::weightBuffers, 1, 2}},
      {"matrix_engine.bias_init",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.biasInit = i == 1; }}},
      {"scratchpad.size_kib", IntKey{&NpuConfig::scratchpadBytes, 1, 16384, 1024}},
      {"scratchpad.banks", IntKey{&NpuConfig::scratchpadBanks, 1, 64}},
      {"scratchpad.bank_width_bytes", IntKey{&NpuConfig::bankWidthBytes, 1, 4096}},
      {"accumulator.size_kib", IntKey{&NpuConfig::accumulatorBytes, 1, 65536, 1024}},
      {"accumulator.port_width_bytes", IntKey{&NpuConfig::accumulatorPortBytes, 4, 4096}},
      {"accumulator.banks", IntKey{&NpuConfig::accumulatorBanks, 1, 64}},
      {"dram.size_mib", IntKey{&NpuConfig::dramBytes, 1, 4096, 1024 * 1024}},
      {"dram.bandwidth_bytes_per_cycle", IntKey{&NpuConfig::dramBytesPerCycle, 1, 4096}},
      {"dram.latency_cycles", IntKey{&NpuConfig::dramLatencyCycles, 0, 1000000}},
      {"vector.lanes", IntKey{&NpuConfig::vectorLanes, 1, 4096}},
      {"vector.latency_cycles", IntKey{&NpuConfig::vectorLatencyCycles, 0, 10000}},
      {"vector.queue",
       EnumKey{{"shared", "separate"}, [](NpuConfig& c, size_t i) { c.vectorQueue = VectorQueue(i); }}},
      {"queues.load_depth", IntKey{&NpuConfig::loadQueueDepth, 1, 65536}},
      {"queues.compute_depth", IntKey{&NpuConfig::computeQueueDepth, 1, 65536}},
      {"queues.store_depth", IntKey{&NpuConfig::storeQueueDepth, 1, 65536}},
      {"queues.vector_depth", IntKey{&NpuConfig::vectorQueueDepth, 1, 65536}},
      {"energy_pj.mac", RealKey{nullptr, &EnergyTable::macPj, 0, 1e6}},
      {"energy_pj.dram_byte", RealKey{nullptr, &EnergyTable::dramBytePj, 0, 1e6}},
      {"energy_pj.scratchpad_byte", RealKey{nullptr, &EnergyTable::scratchpadBytePj, 0, 1e6}},
      {"energy_pj.accumulator_byte", RealKey{nullptr, &EnergyTable::accumulatorBytePj, 0, 1e6}},
      {"energy_pj.vector_op", RealKey{nullptr, &EnergyTable::vectorOpPj, 0, 1e6}},
      {"energy_pj.instruction", RealKey{nullptr, &EnergyTable::instructionPj, 0, 1e6}},
      {"energy_pj.static_per_cycle", RealKey{nullptr, &EnergyTable::staticPjPerCycle, 0, 1e9}},
      {"compiler.fuse_residual_add",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.fuseResidualAdd = i == 1; }}},
      {"compiler.prefetch_weights",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.prefetchWeights = i == 1; }}},
      {"compiler.dense_stem",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.denseStem = i == 1; }}},
      {"compiler.batch_rows",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.batchRows = i == 1; }}},
      {"compiler.fuse_max_pool",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.fuseMaxPool = i == 1; }}},
      {"compiler.residual_out_of_place",
       EnumKey{{"false", "true"}, [](NpuConfig& c, size_t i) { c.residualOutOfPlace = i == 1; }}},
      {"simulation.quantum_cycles", IntKey{&NpuConfig::quantumCycles, 1, 1000000000}},
  };
  return kKeys;
}

const KeySpec* findKey(const std::string& path) {
  for (const auto& k : keys())
    if (k.path == path) return &k;
  return nullptr;
}

bool isSection(const std::string& path) {
  for (const auto& k : keys())
    if (k.path.rfind(path + ".", 0) == 0) return true;
  return false;
}

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  Error fail(const YAML::Node& node, const std::string& key, const std::string& what) const {
    return makeError(origin_, ":", node.Mark().line + 1, ": key '", key, "': ", what);
  }

  Error readMap(const YAML::Node& map, const std::string& prefix, NpuConfig& config) {
    // Copies, not references: yaml-cpp's iterator returns a temporary pair,
    // and references into it dangle (ASan: stack-use-after-scope).
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node keyNode = it->first;
      const YAML::Node value = it->second;
      if (!keyNode.IsScalar()) return fail(keyNode, prefix + "?", "keys must be plain names");
      const std::string path = prefix.empty() ? keyNode.Scalar() : prefix + "." + keyNode.Scalar();
      if (!seen_.insert(path).second) return fail(keyNode, path, "duplicate key");
      if (isSection(path)) {
        if (!value.IsMap()) return fail(value, path, "expected a mapping of sub-keys");
        EMBER_RETURN_IF_ERROR(readMap(value, path, config));
        continue;
      }
      const KeySpec* spec = findKey(path);
      if (!spec) return fail(keyNode, path, "unknown key (see docs/npu/config.md)");
      if (!value.IsScalar()) return fail(value, path, "expected a scalar value");
      EMBER_RETURN_IF_ERROR(readValue(*spec, value, config));
    }
    return Error::success();
  }

 private:
  Error readValue(const KeySpec& spec, const YAML::Node& node, NpuConfig& config) {
    const std::string& text = node.Scalar();
    if (const auto* k = std::get_if<IntKey>(&spec.type)) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        return fail(node, spec.path, "expected an integer, got '" + text + "'");
      if (v < k->min || v > k->max)
        return fail(node, spec.path,
                    "value " + text + " out of range [" + std::to_string(k->min) + ", " +
                        std::to_string(k->max) + "]");
      config.*(k->field) = v * k->scale;
    } else if (const auto* r = std::get_if<RealKey>(&spec.type)) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        return fail(node, spec.path, "expected a number, got '" + text + "'");
      if (v < r->min || v > r->max) {
        std::ostringstream os;
        os << "value " << text << " out of range [" << r->min << ", " << r->max << "]";
        return fail(node, spec.path, os.str());
      }
      if (r->field)
        config.*(r->field) = v;
      else
        config.energy.*(r->energy) = v;
    } else if (const auto* e = std::get_if<EnumKey>(&spec.type)) {
      for (size_t i = 0; i < e->names.size(); ++i)
        if (e->names[i] == text) {
          e->set(config, i);
          return Error::success();
        }
      std::string allowed;
      for (const auto& n : e->names) allowed += (allowed.empty() ? "" : ", ") + n;
      return fail(node, spec.path, "'" + text + "' is not one of: " + allowed);
    } else {
      config.name = text;
    }
    return Error::success();
  }

  std::string origin_;
  std::set<std::string> seen_;
};

/// yaml-cpp 0.7 parses nested collections recursively with no depth limit, so
/// "[[[[..." overflows the stack. Every nesting level needs at least one
/// collection indicator ('[', '{', or '-', '?', ':' before a space), and a
/// JSON-like "key":value pair inside a flow sequence adds at most one more
/// level, so counting indicators bounds the depth. NPU configs have ~40.
constexpr size_t kMaxCollectionIndicators = 1024;

size_t countCollectionIndicators(const std::string& text) {
  size_t count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool spaceAfter = i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' ||
                            text[i + 1] == '\n' || text[i + 1] == '\r';
    if (c == '[' || c == '{' || ((c == '-' || c == '?' || c == ':') && spaceAfter)) ++count;
  }
  return count;
}

void mix(uint64_t& h, int64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= uint64_t(v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;  // FNV-1a
  }
}

}  // namespace

uint64_t NpuConfig::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t v : {rows, cols, int64_t(dataflow), scratchpadBytes, scratchpadBanks, accumulatorBytes,
                    dramBytes, vectorLanes})
    mix(h, v);
  // One buffer hashes as before weight_buffers existed, so v1 bundles still match.
  if (weightBuffers != 1) mix(h, weightBuffers);
  // Likewise the vector queue and accumulator banks (ISA v3) at their defaults.
  if (vectorQueue != VectorQueue::Shared) mix(h, 100 + int64_t(vectorQueue));
  if (accumulatorBanks != 1) mix(h, 200 + accumulatorBanks);
  if (biasInit) mix(h, 300);
  return h == 0 ? 1 : h;  // 0 means "any config" in a bundle
}

namespace {
Expected<NpuConfig> parseConfigImpl(const std::string& yamlText, const std::string& origin) {
  EMBER_RETURN_IF_ERROR(checkYamlText(yamlText, origin));
  if (countCollectionIndicators(yamlText) > kMaxCollectionIndicators)
    return makeError(origin, ": the config has more than ", kMaxCollectionIndicators,
                     " YAML collections; an NPU config is a small mapping (docs/npu/config.md)");
  YAML::Node root;
  try {
    root = YAML::Load(yamlText);
  } catch (const YAML::Exception& e) {
    return makeError(origin, ":", e.mark.line + 1, ": invalid YAML: ", e.msg);
  }
  NpuConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap())
    return makeError(origin, ":", root.Mark().line + 1, ": the config must be a YAML mapping");
  Reader reader(origin);
  try {
    EMBER_RETURN_IF_ERROR(reader.readMap(root, "", config));
  } catch (const YAML::Exception& e) {
    return makeError(origin, ":", e.mark.line + 1, ": ", e.msg);
  }
  // Cross-key constraints.
  if (config.scratchpadBytes % config.scratchpadBanks != 0)
    return makeError(origin, ": key 'scratchpad.banks': ", config.scratchpadBanks,
                     " banks do not divide the scratchpad size ", config.scratchpadBytes, " bytes");
  if (config.accumulatorBytes % (4 * config.accumulatorBanks) != 0)
    return makeError(origin, ": key 'accumulator.banks': ", config.accumulatorBanks,
                     " banks do not divide the accumulator's ", config.accumulatorEntries(), " entries");
  if (config.vectorQueue == VectorQueue::Separate && config.matrixEngineModel == MatrixEngineModel::Rtl)
    return makeError(origin,
                     ": key 'vector.queue': 'separate' is modelled with matrix_engine.model 'fast' only "
                     "(the RTL co-simulation runs the one compute queue); use vector.queue 'shared' or "
                     "model 'fast' (docs/npu/rtl.md)");
  if (config.biasInit && config.matrixEngineModel == MatrixEngineModel::Rtl)
    return makeError(origin,
                     ": key 'matrix_engine.bias_init': the RTL (matrix_engine.model 'rtl') starts every gemm "
                     "from zero; use matrix_engine.bias_init false or model 'fast' (docs/npu/rtl.md)");
  if (config.weightBuffers == 2 && config.dataflow != Dataflow::WeightStationary)
    return makeError(
        origin,
        ": key 'matrix_engine.weight_buffers': 2 weight buffers need "
        "matrix_engine.dataflow 'weight_stationary' (an output-stationary array keeps no weights)");
  return config;
}
}  // namespace

Expected<NpuConfig> parseConfig(const std::string& yamlText, const std::string& origin) {
  Expected<NpuConfig> config = parseConfigImpl(yamlText, origin);
  if (!config) return oneLineError(config.error());
  return config;
}

Expected<NpuConfig> loadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open the NPU config");
  std::ostringstream os;
  os << in.rdbuf();
  return parseConfig(os.str(), path);
}

}  // namespace ember::npu
