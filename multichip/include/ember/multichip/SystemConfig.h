// A multi-NPU system (docs/multichip.md): N chips, each with its own NPU
// config (they may differ), an interconnect of full-duplex links with a
// bandwidth and a latency (ring, all-to-all or listed), and DRAM per chip or
// shared. The reader validates the whole system; errors name the file and
// the chip or the link. Routes and transfer times are what a pipeline
// scheduler needs to place stages and their transfers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/HostModel.h"
#include "ember/npu/Config.h"

namespace ember::multichip {

struct Chip {
  std::string name;
  std::string configPath;  ///< resolved against the system file's folder
  npu::NpuConfig config;
};

enum class Topology { Ring, AllToAll, Listed };

/// A full-duplex link between two chips: each direction has the bandwidth.
struct Link {
  size_t a = 0, b = 0;  ///< indices into SystemConfig::chips, a < b
  double bandwidthGBps = 0;
  double latencyNs = 0;
};

enum class DramKind { PerChip, Shared };

struct SystemConfig {
  std::string path;
  std::string name;
  std::vector<Chip> chips;
  Topology topology = Topology::Ring;
  std::vector<Link> links;
  DramKind dram = DramKind::PerChip;
  int64_t sharedDramBytes = 0;  ///< DramKind::Shared: the one DRAM every chip reads
  double sharedDramGBps = 0;    ///< DramKind::Shared: every chip's DRAM traffic shares it
  /// Each chip's host, which runs its stages' host partitions; their modelled
  /// time and host-link transfers take simulated time unless !hostTimed.
  HostModel host;
  bool hostTimed = true;

  /// "npu1-npu2"
  std::string linkName(const Link& link) const;
  /// The DRAM bytes a chip's stages may use: its own DRAM, or the shared one.
  int64_t dramBytesOf(size_t chip) const;
};

/// Parses a system YAML; relative chip config paths are relative to `origin`'s
/// folder. Errors name `origin` and the chip or link.
Expected<SystemConfig> parseSystemConfig(const std::string& yamlText, const std::string& origin);
Expected<SystemConfig> loadSystemConfig(const std::string& path);

/// The links of the fewest-hop route from one chip to another (empty when
/// from == to); ties go to the route through lower chip indices.
std::vector<size_t> route(const SystemConfig& system, size_t from, size_t to);

/// Time to move `bytes` along a route, cut-through: every hop's latency plus
/// the bytes at the slowest hop's bandwidth.
double transferNanoseconds(const SystemConfig& system, const std::vector<size_t>& links, int64_t bytes);

/// One pipeline stage placed on a chip: the DRAM it needs (weights,
/// activations and the buffers of the transfers in and out).
struct StagePlacement {
  std::string name;
  std::string chip;
  int64_t dramBytes = 0;
};

/// Checks that every stage names a chip and that every chip (or the shared
/// DRAM) holds the stages placed on it; errors name the chip and the stage.
Error checkStagePlacement(const SystemConfig& system, const std::vector<StagePlacement>& stages);

}  // namespace ember::multichip
