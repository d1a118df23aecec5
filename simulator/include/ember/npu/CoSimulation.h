// Several NPUs co-simulated in one SystemC elaboration (docs/multichip.md):
// one chip top per chip, one TLM link channel per link, and one driver
// thread per chip that runs that chip's programs (every simulate() it calls
// runs on its own chip top, in the system's time) and exchanges data with
// the other chips over the links. No SystemC types here.
//
// SystemC 2.3 elaborates once per process, before the first sc_start: the
// process elaborates the one-chip top, detail::kMaxCoSimulatedChips (8) chip
// tops, every link channel among them and the drivers together, at its first
// simulation of either kind, and reuses them for every run after (each run
// configures the chips' clocks and the links' bandwidth and latency). A
// system of more chips, or more links than its chips have pairs, is an error.
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
  std::vector<uint64_t> programs;  ///< per chip: programs run
  std::vector<CoSimLinkStats> links;
  double hostSeconds = 0;
};

/// Runs drivers[c] as chip c's thread, every chip and link in one SystemC
/// elaboration, until every driver returned. Errors: a driver's (the first,
/// by chip), a chip whose program or driver can make no progress (naming
/// the chip), a system the elaboration cannot hold.
Expected<CoSimResult> coSimulate(const CoSimSystemSpec& system, const std::vector<ChipDriver>& drivers);

}  // namespace ember::npu
