// Reading and checking a multi-NPU system config (docs/multichip.md).
#include "ember/multichip/SystemConfig.h"

#include "ember/TextEscape.h"

// yaml-cpp 0.7's inline node code trips GCC 12's -Wdangling-pointer.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace ember::multichip {
namespace {

namespace fs = std::filesystem;

/// One-line errors that name the file, the line and what is wrong.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  template <typename... Parts>
  Error error(const YAML::Node& node, Parts&&... message) const {
    return makeError(origin_, ":", node.Mark().line + 1, ": ", std::forward<Parts>(message)...);
  }

  Error onlyKeys(const YAML::Node& map, const std::string& where,
                 std::initializer_list<const char*> keys) const {
    for (const auto& entry : map) {
      std::string key = entry.first.as<std::string>();
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
        std::string known;
        for (const char* k : keys) known += (known.empty() ? "" : ", ") + std::string(k);
        return error(entry.first, where, ": unknown key '", key, "' (known: ", known, ")");
      }
    }
    return Error::success();
  }

  Expected<double> positive(const YAML::Node& map, const char* key, const std::string& where, double fallback,
                            bool allowZero = false) const {
    YAML::Node node = map[key];
    if (!node) {
      if (fallback < 0) return error(map, where + ": missing '" + key + "'");
      return fallback;
    }
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value))
      return error(node, where + ": '" + key + "' must be a number");
    if (value < 0 || (!allowZero && value == 0) || !(value < 1e18))
      return error(node, where + ": '" + key + "' must be " + (allowZero ? ">= 0" : "> 0") + ", got " +
                             node.as<std::string>());
    return value;
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

Expected<std::vector<Chip>> readChips(const Reader& reader, const YAML::Node& node, const fs::path& folder) {
  std::vector<std::pair<std::string, YAML::Node>> declared;  // name, config node
  if (node.IsMap()) {
    // chips: {count: 4, config: npu-16x16.yaml, name_prefix: npu}
    EMBER_RETURN_IF_ERROR(reader.onlyKeys(node, "chips", {"count", "config", "name_prefix"}));
    int64_t count = 0;
    if (!node["count"] || !YAML::convert<int64_t>::decode(node["count"], count) || count < 1 || count > 1024)
      return reader.error(node, "chips: 'count' must be an integer from 1 to 1024");
    std::string prefix = node["name_prefix"] ? node["name_prefix"].as<std::string>() : "npu";
    for (int64_t i = 0; i < count; ++i) declared.push_back({prefix + std::to_string(i), node["config"]});
  } else if (node.IsSequence() && node.size() > 0) {
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node& chip = node[i];
      if (!chip.IsMap() || !chip["name"] || !chip["name"].IsScalar())
        return reader.error(chip, "chip " + std::to_string(i) + ": expected a map with 'name' and 'config'");
      std::string name = chip["name"].as<std::string>();
      EMBER_RETURN_IF_ERROR(reader.onlyKeys(chip, "chip '" + name + "'", {"name", "config"}));
      declared.push_back({name, chip["config"]});
    }
  } else {
    return reader.error(node, "'chips' must be a non-empty list of {name, config} or {count, config}");
  }
  std::vector<Chip> chips;
  std::set<std::string> names;
  for (const auto& [name, configNode] : declared) {
    if (name.empty() || name.find_first_of(" \t-") != std::string::npos)
      return reader.error(configNode, "chip '" + name + "': a chip name has no spaces or '-'");
    if (!names.insert(name).second) return reader.error(configNode, "chip '" + name + "' is declared twice");
    Chip chip;
    chip.name = name;
    if (!configNode || !configNode.IsScalar())
      return makeError(reader.origin(), ": chip '", name, "': 'config' must name an NPU config file");
    fs::path path = configNode.as<std::string>();
    chip.configPath = (path.is_absolute() ? path : folder / path).lexically_normal().string();
    Expected<npu::NpuConfig> config = npu::loadConfig(chip.configPath);
    if (!config) return makeError(reader.origin(), ": chip '", name, "': ", config.error().message());
    chip.config = config.take();
    chips.push_back(std::move(chip));
  }
  return chips;
}

std::vector<Link> topologyLinks(Topology topology, size_t chips, double bandwidth, double latency) {
  std::vector<Link> links;
  if (topology == Topology::Ring) {
    for (size_t i = 0; i + 1 < chips; ++i) links.push_back({i, i + 1, bandwidth, latency});
    if (chips >= 3) links.push_back({0, chips - 1, bandwidth, latency});
  } else if (topology == Topology::AllToAll) {
    for (size_t a = 0; a < chips; ++a)
      for (size_t b = a + 1; b < chips; ++b) links.push_back({a, b, bandwidth, latency});
  }
  return links;
}

/// The interconnect's defaults, which a `links:` entry may override.
struct LinkDefaults {
  std::string topology;
  double bandwidthGBps = 0, latencyNs = 0;
};

/// The `links:` entries: the links of a listed topology, or overrides of a ring's or all-to-all's.
Error readLinks(const Reader& reader, const YAML::Node& listedLinks, const LinkDefaults& defaults,
                SystemConfig& system) {
  const bool listed = system.topology == Topology::Listed;
  const std::string& topology = defaults.topology;
  const double bandwidth = defaults.bandwidthGBps, latency = defaults.latencyNs;
  std::map<std::string, size_t> chipIndex;
  for (size_t i = 0; i < system.chips.size(); ++i) chipIndex[system.chips[i].name] = i;
  std::set<std::pair<size_t, size_t>> seen;
  for (size_t i = 0; listedLinks && i < listedLinks.size(); ++i) {
    const YAML::Node& entry = listedLinks[i];
    YAML::Node between = entry.IsMap() ? entry["between"] : YAML::Node();
    if (!between || !between.IsSequence() || between.size() != 2 || !between[0].IsScalar() ||
        !between[1].IsScalar())
      return reader.error(entry, "link ", i, ": expected {between: [CHIP, CHIP], ...}");
    std::string a = between[0].as<std::string>(), b = between[1].as<std::string>();
    const std::string name = std::string("link '").append(a).append("-").append(b).append("'");
    EMBER_RETURN_IF_ERROR(reader.onlyKeys(entry, name, {"between", "bandwidth_gb_per_s", "latency_ns"}));
    for (const std::string& end : {a, b})
      if (!chipIndex.count(end)) return reader.error(entry, name, ": no chip '", end, "'");
    if (a == b) return reader.error(entry, name, " connects chip '", a, "' to itself");
    size_t ia = std::min(chipIndex[a], chipIndex[b]), ib = std::max(chipIndex[a], chipIndex[b]);
    if (!seen.insert({ia, ib}).second) return reader.error(entry, name, " is listed twice");
    EMBER_ASSIGN_OR_RETURN(double linkBandwidth,
                           reader.positive(entry, "bandwidth_gb_per_s", name, bandwidth));
    EMBER_ASSIGN_OR_RETURN(double linkLatency, reader.positive(entry, "latency_ns", name, latency, true));
    if (listed) {
      system.links.push_back({ia, ib, linkBandwidth, linkLatency});
      continue;
    }
    // On a ring or all-to-all, a listed link sets one existing link's parameters.
    auto it = std::find_if(system.links.begin(), system.links.end(),
                           [&](const Link& l) { return l.a == ia && l.b == ib; });
    if (it == system.links.end())
      return reader.error(entry, name, " is not a link of the ", topology, " (use topology: listed)");
    it->bandwidthGBps = linkBandwidth;
    it->latencyNs = linkLatency;
  }
  return Error::success();
}

Error readInterconnect(const Reader& reader, const YAML::Node& node, SystemConfig& system) {
  if (!node) {
    if (system.chips.size() == 1) return Error::success();
    return makeError(reader.origin(), ": ", system.chips.size(), " chips but no 'interconnect'");
  }
  if (!node.IsMap()) return reader.error(node, "'interconnect' must be a map");
  EMBER_RETURN_IF_ERROR(
      reader.onlyKeys(node, "interconnect", {"topology", "bandwidth_gb_per_s", "latency_ns", "links"}));
  std::string topology = node["topology"] ? node["topology"].as<std::string>() : "ring";
  if (topology == "ring")
    system.topology = Topology::Ring;
  else if (topology == "all_to_all")
    system.topology = Topology::AllToAll;
  else if (topology == "listed")
    system.topology = Topology::Listed;
  else
    return reader.error(node["topology"], "interconnect: topology '", topology,
                        "' (known: ring, all_to_all, listed)");
  bool listed = system.topology == Topology::Listed;
  EMBER_ASSIGN_OR_RETURN(double bandwidth,
                         reader.positive(node, "bandwidth_gb_per_s", "interconnect", listed ? 1 : -1));
  EMBER_ASSIGN_OR_RETURN(double latency, reader.positive(node, "latency_ns", "interconnect", 0, true));
  system.links = topologyLinks(system.topology, system.chips.size(), bandwidth, latency);

  YAML::Node listedLinks = node["links"];
  if (listed && !listedLinks) return reader.error(node, "interconnect: topology 'listed' needs 'links'");
  if (listedLinks && !listedLinks.IsSequence())
    return reader.error(listedLinks, "interconnect: 'links' must be a list of {between: [A, B], ...}");
  return readLinks(reader, listedLinks, {topology, bandwidth, latency}, system);
}

Error readDram(const Reader& reader, const YAML::Node& node, SystemConfig& system) {
  if (!node) return Error::success();
  if (!node.IsMap()) return reader.error(node, "'dram' must be a map");
  EMBER_RETURN_IF_ERROR(reader.onlyKeys(node, "dram", {"kind", "size_mib", "bandwidth_gb_per_s"}));
  std::string kind = node["kind"] ? node["kind"].as<std::string>() : "per_chip";
  if (kind == "per_chip") {
    if (node["size_mib"] || node["bandwidth_gb_per_s"])
      return reader.error(node,
                          "dram: kind per_chip takes each chip's own dram section; size_mib and "
                          "bandwidth_gb_per_s belong to kind shared");
    return Error::success();
  }
  if (kind != "shared")
    return reader.error(node["kind"], "dram: kind '" + kind + "' (known: per_chip, shared)");
  system.dram = DramKind::Shared;
  EMBER_ASSIGN_OR_RETURN(double mib, reader.positive(node, "size_mib", "dram", -1));
  EMBER_ASSIGN_OR_RETURN(system.sharedDramGBps, reader.positive(node, "bandwidth_gb_per_s", "dram", -1));
  system.sharedDramBytes = int64_t(mib * 1024 * 1024);
  return Error::success();
}

/// host: {timed, macs_per_s, gbps, link_gb_per_s, link_latency_us}: each
/// chip's host, which runs its stages' host partitions (ember/HostModel.h).
Error readHost(const Reader& reader, const YAML::Node& node, SystemConfig& system) {
  if (!node) return Error::success();
  if (!node.IsMap()) return reader.error(node, "'host' must be a map");
  EMBER_RETURN_IF_ERROR(
      reader.onlyKeys(node, "host", {"timed", "macs_per_s", "gbps", "link_gb_per_s", "link_latency_us"}));
  if (YAML::Node timed = node["timed"]; timed && !YAML::convert<bool>::decode(timed, system.hostTimed))
    return reader.error(timed, "host: 'timed' must be true or false");
  HostModel& host = system.host;
  EMBER_ASSIGN_OR_RETURN(host.macsPerSecond,
                         reader.positive(node, "macs_per_s", "host", host.macsPerSecond, true));
  EMBER_ASSIGN_OR_RETURN(host.memoryGbps, reader.positive(node, "gbps", "host", host.memoryGbps, true));
  EMBER_ASSIGN_OR_RETURN(host.linkGbps, reader.positive(node, "link_gb_per_s", "host", host.linkGbps, true));
  EMBER_ASSIGN_OR_RETURN(host.linkLatencyUs,
                         reader.positive(node, "link_latency_us", "host", host.linkLatencyUs, true));
  return Error::success();
}

/// Every chip must reach every other over the links.
Error checkConnected(const SystemConfig& system) {
  std::vector<bool> reached(system.chips.size(), false);
  std::deque<size_t> queue{0};
  reached[0] = true;
  while (!queue.empty()) {
    size_t chip = queue.front();
    queue.pop_front();
    for (const Link& l : system.links) {
      if (l.a != chip && l.b != chip) continue;
      size_t other = l.a == chip ? l.b : l.a;
      if (!reached[other]) {
        reached[other] = true;
        queue.push_back(other);
      }
    }
  }
  for (size_t i = 0; i < reached.size(); ++i)
    if (!reached[i])
      return makeError(system.path, ": the links do not connect chip '", system.chips[i].name, "' to chip '",
                       system.chips[0].name, "'");
  return Error::success();
}

}  // namespace

std::string SystemConfig::linkName(const Link& link) const {
  return chips[link.a].name + "-" + chips[link.b].name;
}

int64_t SystemConfig::dramBytesOf(size_t chip) const {
  return dram == DramKind::Shared ? sharedDramBytes : chips[chip].config.dramBytes;
}

Expected<SystemConfig> parseSystemConfig(const std::string& yamlText, const std::string& origin) {
  EMBER_RETURN_IF_ERROR(checkYamlText(yamlText, origin));
  YAML::Node root;
  try {
    root = YAML::Load(yamlText);
  } catch (const YAML::Exception& e) {
    return makeError(origin, ":", e.mark.line + 1, ": invalid YAML: ", e.msg);
  }
  if (!root.IsMap()) return makeError(origin, ": a system config is a YAML mapping (docs/multichip.md)");
  Reader reader(origin);
  SystemConfig system;
  system.path = origin;
  try {
    EMBER_RETURN_IF_ERROR(reader.onlyKeys(root, "system", {"name", "chips", "interconnect", "dram", "host"}));
    system.name = root["name"] ? root["name"].as<std::string>() : fs::path(origin).stem().string();
    if (!root["chips"]) return makeError(origin, ": missing 'chips'");
    EMBER_ASSIGN_OR_RETURN(system.chips, readChips(reader, root["chips"], fs::path(origin).parent_path()));
    EMBER_RETURN_IF_ERROR(readInterconnect(reader, root["interconnect"], system));
    EMBER_RETURN_IF_ERROR(readDram(reader, root["dram"], system));
    EMBER_RETURN_IF_ERROR(readHost(reader, root["host"], system));
  } catch (const YAML::Exception& e) {
    return makeError(origin, ":", e.mark.line + 1, ": ", e.msg);
  }
  EMBER_RETURN_IF_ERROR(checkConnected(system));
  return system;
}

Expected<SystemConfig> loadSystemConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return makeError(path, ": cannot open the system config");
  std::ostringstream text;
  text << in.rdbuf();
  return parseSystemConfig(text.str(), path);
}

std::vector<size_t> route(const SystemConfig& system, size_t from, size_t to) {
  if (from == to || from >= system.chips.size() || to >= system.chips.size()) return {};
  // Breadth-first from `from`, chips in index order: fewest hops, lower indices on ties.
  std::vector<std::optional<size_t>> via(system.chips.size());  // the link that reached each chip
  std::vector<bool> reached(system.chips.size(), false);
  std::deque<size_t> queue{from};
  reached[from] = true;
  while (!queue.empty() && !reached[to]) {
    size_t chip = queue.front();
    queue.pop_front();
    std::vector<std::pair<size_t, size_t>> next;  // neighbour, link
    for (size_t l = 0; l < system.links.size(); ++l) {
      const Link& link = system.links[l];
      if (link.a == chip || link.b == chip) next.push_back({link.a == chip ? link.b : link.a, l});
    }
    std::sort(next.begin(), next.end());
    for (auto [other, l] : next) {
      if (reached[other]) continue;
      reached[other] = true;
      via[other] = l;
      queue.push_back(other);
    }
  }
  std::vector<size_t> links;
  for (size_t chip = to; chip != from && via[chip];) {
    const Link& link = system.links[*via[chip]];
    links.push_back(*via[chip]);
    chip = link.a == chip ? link.b : link.a;
  }
  std::reverse(links.begin(), links.end());
  return links;
}

double transferNanoseconds(const SystemConfig& system, const std::vector<size_t>& links, int64_t bytes) {
  if (links.empty()) return 0;
  double latency = 0, slowest = 0;
  for (size_t l : links) {
    latency += system.links[l].latencyNs;
    double bw = system.links[l].bandwidthGBps;
    slowest = slowest == 0 ? bw : std::min(slowest, bw);
  }
  return latency + double(bytes) / slowest;  // GB/s = bytes per ns
}

Error checkStagePlacement(const SystemConfig& system, const std::vector<StagePlacement>& stages) {
  std::map<std::string, size_t> chipIndex;
  for (size_t i = 0; i < system.chips.size(); ++i) chipIndex[system.chips[i].name] = i;
  std::vector<int64_t> used(system.chips.size(), 0);
  int64_t sharedUsed = 0;
  for (const StagePlacement& stage : stages) {
    auto it = chipIndex.find(stage.chip);
    if (it == chipIndex.end())
      return makeError(system.path, ": stage '", stage.name, "' is placed on chip '", stage.chip,
                       "', which the system does not have");
    size_t chip = it->second;
    used[chip] += stage.dramBytes;
    sharedUsed += stage.dramBytes;
    int64_t capacity = system.dramBytesOf(chip);
    int64_t total = system.dram == DramKind::Shared ? sharedUsed : used[chip];
    if (total > capacity) {
      auto mib = [](int64_t bytes) {
        std::ostringstream os;
        os.precision(4);
        os << double(bytes) / (1024.0 * 1024.0) << " MiB";
        return os.str();
      };
      return makeError(system.path, ": chip '", system.chips[chip].name, "' (",
                       system.chips[chip].config.name, ") cannot hold stage '", stage.name,
                       "': ", mib(stage.dramBytes), " on top of ", mib(total - stage.dramBytes),
                       " already placed exceeds ",
                       system.dram == DramKind::Shared ? "the shared DRAM, " : "its DRAM, ", mib(capacity));
    }
  }
  return Error::success();
}

}  // namespace ember::multichip
