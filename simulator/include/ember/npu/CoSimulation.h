// Several NPUs co-simulated in one SystemC elaboration (docs/multichip.md):
// one chip top per chip, one TLM link channel per link, and one driver
// thread per chip that runs that chip's programs (every simulate() it calls
// runs on its own chip top, in the system's time) and exchanges data with
// the other chips over the links. No SystemC types here.
//
// SystemC 2.3 elaborates once per process, before the first sc_start: the
// process elaborates the one-chip top, max(8, the chips reserved or of the
// first co-simulated system) chip tops, every link channel among them and
// the drivers together, at its first simulation of either kind, and reuses
// them for every run after (each run configures the chips' clocks, the links'
// bandwidth and latency and the shared DRAM). A later system of more chips
// is an error naming the limit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/Error.h"

namespace ember::npu {

struct CoSimChipSpec {
  std::string name;
  double clockGhz = 1.0;  ///< a cycle of the chip's programs lasts 1 / clockGhz ns
};

/// A full-duplex link: each direction carries one transfer at a time.
struct CoSimLinkSpec {
  size_t a = 0, b = 0;  ///< chip indices, a != b
  double bandwidthGBps = 1;
  double latencyNs = 0;
};

struct CoSimSystemSpec {
  std::vector<CoSimChipSpec> chips;
  std::vector<CoSimLinkSpec> links;
  /// > 0: the chips share one DRAM of this bandwidth (GB/s): every DRAM
  /// transaction of every chip also takes its bytes' time on it, so chips
  /// that use it at once slow each other down. 0: each chip's own DRAM.
  double sharedDramGBps = 0;
};

/// A chip's view of the system, given to its driver for the run.
class ChipPort {
 public:
  virtual ~ChipPort() = default;
  virtual size_t chip() const = 0;
  /// Sends `bytes` to chip `to` along `route` (link indices, the first from
  /// this chip). Cut-through: starts once every hop's direction is free,
  /// holds them for the bytes at the slowest hop's bandwidth, and arrives the
  /// hops' latencies after that. Returns at once; the links carry the data.
  virtual Error send(size_t to, const std::vector<size_t>& route, uint64_t tag,
                     std::vector<uint8_t> bytes) = 0;
  /// Waits until the message `tag` sent to this chip has arrived; its bytes.
  virtual Expected<std::vector<uint8_t>> receive(uint64_t tag) = 0;
  /// The system's time since the run started.
  virtual double nowNs() const = 0;
  /// Work on the chip's host for `nanoseconds` of the system's time (a
  /// stage's host partitions): the driver waits; the chip's NPU idles.
  virtual void hostWork(double nanoseconds) = 0;
};

/// A chip's work for the run; simulate() calls in it run on the chip.
using ChipDriver = std::function<Error(ChipPort&)>;

struct CoSimLinkStats {
  double busyNs[2] = {0, 0};  ///< per direction: a -> b, b -> a
  uint64_t bytes[2] = {0, 0};
  size_t transfers = 0;
};

struct CoSimResult {
  double endNs = 0;                ///< when the last driver finished
  std::vector<double> chipBusyNs;  ///< per chip: the time its programs ran
  std::vector<double> chipHostNs;  ///< per chip: its host work (hostWork)
  std::vector<uint64_t> programs;  ///< per chip: programs run
  /// Per chip: its programs' DRAM bandwidth stall cycles, and of those the
  /// cycles spent waiting for the shared DRAM (0 without one).
  std::vector<uint64_t> dramStallCycles, sharedDramWaitCycles;
  std::vector<CoSimLinkStats> links;
  double sharedDramBusyNs = 0;  ///< the shared DRAM's busy time (0 without one)
  uint64_t sharedDramBytes = 0;
  double hostSeconds = 0;
};

/// Runs drivers[c] as chip c's thread, every chip and link in one SystemC
/// elaboration, until every driver returned. Errors: a driver's (the first,
/// by chip), a chip whose program or driver can make no progress (naming
/// the chip), a system the elaboration cannot hold.
Expected<CoSimResult> coSimulate(const CoSimSystemSpec& system, const std::vector<ChipDriver>& drivers);

/// Before the process's first simulation: elaborate max(8, `chips`) chip
/// tops. Afterwards: an error naming the limit when `chips` is above it.
Error reserveCoSimulatedChips(size_t chips);

}  // namespace ember::npu
