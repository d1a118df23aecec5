// A device's report (DeviceReport) as text (totals and the per-layer table)
// and as the device keys of --report-json (docs/cli.md), whatever counters and
// columns the backend declared.
#pragma once

#include <ostream>

#include "ember/Backend.h"
#include "ember/JsonWriter.h"

namespace ember::cli {

/// Totals (cycles, MACs, the backend's summary lines and its other counters,
/// once a run measured them), then one line per layer: name, op, cycles, the
/// measured columns in their widths, then the compile-time columns.
void printDeviceReport(std::ostream& os, const DeviceReport& device);
/// cycles, macs, peak_macs_per_cycle, mac_utilization, the counters,
/// device_seconds, latency_us, host_seconds and layers[] (name, op, the
/// compile-time columns, estimated_cycles, cycles, macs, the measured columns).
void writeDeviceReport(JsonWriter& json, const DeviceReport& device);

}  // namespace ember::cli
