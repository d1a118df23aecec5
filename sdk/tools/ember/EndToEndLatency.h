// The end-to-end latency of an accelerator run with host (fallback)
// partitions: the device's time + the host partitions' time + the transfers
// between host and device over a modelled host link (docs/cli.md,
// "End-to-end latency").
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "Options.h"
#include "ember/Backend.h"
#include "ember/HostModel.h"
#include "ember/JsonWriter.h"
#include "ember/Runtime.h"

namespace ember::cli {

/// The host link between host memory and the accelerator's DRAM.
struct HostLinkOptions {
  std::optional<double> gbps;       ///< GB/s (1e9 bytes/s); default kDefaultHostLinkGbps
  std::optional<double> latencyUs;  ///< per transfer; default kDefaultHostLinkUs
  void addTo(OptionParser& parser);
  double bytesPerSecond() const;
  double perTransferUs() const;
};

/// --host-model: the host partitions' time modelled instead of measured, each
/// instruction bound by the slower of its MACs at a host MAC/s and the bytes
/// it reads and writes at a host memory bandwidth (a roofline per instruction).
struct HostModelOptions {
  bool enabled = false;
  std::optional<double> macsPerSecond;  ///< default kDefaultHostMacsPerSecond
  std::optional<double> gbps;           ///< default kDefaultHostGbps
  void addTo(OptionParser& parser);
};

/// Modelled seconds of every partition of `model` not compiled by
/// `targetBackend` (ember/HostModel.h) at the options' rates.
double modelledHostSeconds(const CompiledModel& model, const std::string& targetBackend,
                           const HostModelOptions& host);

struct EndToEndLatency {
  std::string device = "device";  ///< the accelerator's name in the text (DeviceReport::device)
  double deviceUs = 0;            ///< the accelerator's simulated time (latency_us)
  double hostPartitionsUs = 0;    ///< the host partitions' time, measured or modelled
  bool hostModelled = false;
  double transfersUs = 0;  ///< host-link time of the tensors that crossed
  uint64_t transfers = 0, transferBytes = 0;
  size_t partitions = 1;
  double totalUs() const { return deviceUs + hostPartitionsUs + transfersUs; }
};

/// `hostSecondsMedian` is the median over the timed runs of (run wall time -
/// the simulator's wall time); it is counted only when the model ran in more
/// than one partition. A whole-model accelerator run is its device time.
EndToEndLatency endToEndLatency(const DeviceReport& device, const RunStatistics* stats,
                                double hostSecondsMedian, const HostLinkOptions& link);
/// The same with the host partitions' time taken from modelledHostSeconds.
EndToEndLatency modelledEndToEndLatency(const DeviceReport& device, const RunStatistics* stats,
                                        double modelledHostSeconds, const HostLinkOptions& link);

/// The rows that follow the per-layer table: host partitions, transfers, total.
void printEndToEndLatency(std::ostream& os, const EndToEndLatency& latency);
/// Writes end_to_end_latency_us, host_partitions_us, host_partitions_modelled,
/// transfers_us, transfer_bytes and host_transfers into the --report-json
/// object being written (reportJson's `moreKeys`).
void writeEndToEndLatency(JsonWriter& json, const EndToEndLatency& latency);
/// Adds a "host" process to the --trace file at `path` (Chrome trace-event
/// JSON): a host-partitions track and a host-link track, each one span of the
/// summed time placed after the NPU's timeline (the totals are not timed in
/// place). Does nothing for a whole-model accelerator run.
Error appendEndToEndTrace(const std::string& path, const EndToEndLatency& latency);

}  // namespace ember::cli
