// An accelerator's report (DeviceReport) as text (the per-layer table) and as
// the NPU keys of --report-json (docs/cli.md).
#pragma once

#include <ostream>

#include "ember/Backend.h"
#include "ember/JsonWriter.h"

namespace ember::cli {

/// Totals, then one line per layer: op, shape, tiles, cycles, utilisation,
/// DRAM bytes and the dominant stall.
void printDeviceReport(std::ostream& os, const DeviceReport& device);
/// cycles, macs, mac_utilization, dram_read_bytes, dram_write_bytes,
/// energy_pj, sram_peak_bytes, device_seconds, host_seconds and layers[].
void writeDeviceReport(JsonWriter& json, const DeviceReport& device);

}  // namespace ember::cli
