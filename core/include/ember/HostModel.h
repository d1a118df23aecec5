// The host's time for what an accelerator does not run, modelled instead of
// measured: the partitions a fallback backend runs on the host CPU (each IR
// instruction bound by the slower of its MACs at the host's MAC/s and the
// bytes it reads and writes at the host's memory bandwidth, a roofline per
// instruction) and the tensors that cross the host link between them and the
// device. `ember run --host-model` (docs/cli.md, "End-to-end latency") and
// the multi-chip co-simulation (docs/multichip.md) use it.
#pragma once

#include <cstdint>
#include <string>

#include "ember/Runtime.h"

namespace ember {

/// Two AVX2 cores at about 3 GHz (2 x 8 f32 FMA lanes) and one DDR4 channel.
inline constexpr double kDefaultHostMacsPerSecond = 50e9;
inline constexpr double kDefaultHostGbps = 20.0;
/// A PCIe 4.0 x8 link's usable bandwidth and a DMA set-up time.
inline constexpr double kDefaultHostLinkGbps = 12.0;
inline constexpr double kDefaultHostLinkUs = 2.0;

struct HostModel {
  double macsPerSecond = kDefaultHostMacsPerSecond;
  double memoryGbps = kDefaultHostGbps;  ///< GB/s (1e9 bytes/s)
  double linkGbps = kDefaultHostLinkGbps;
  double linkLatencyUs = kDefaultHostLinkUs;  ///< per transfer
};

/// Modelled seconds of every partition of `model` not compiled by
/// `targetBackend` (its IR in partitionIRs); a zero rate counts nothing.
double modelledHostSeconds(const CompiledModel& model, const std::string& targetBackend, double macsPerSecond,
                           double memoryBytesPerSecond);

/// Microseconds `transfers` tensors of `bytes` in all take on the host link.
double hostLinkMicroseconds(uint64_t transfers, uint64_t bytes, double linkBytesPerSecond,
                            double perTransferUs);

}  // namespace ember
