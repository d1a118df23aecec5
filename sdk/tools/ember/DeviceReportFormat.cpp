#include "DeviceReportFormat.h"

#include <cstdio>
#include <string>

namespace ember::cli {

namespace {
std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string padded(std::string text, size_t width, bool right = false) {
  if (text.size() > width) text = text.substr(0, width - 1) + "~";
  std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

std::string dominantStall(const LayerReport& layer) {
  std::string best = "-";
  uint64_t most = 0;
  for (const auto& [reason, cycles] : layer.stallCycles)
    if (cycles > most) {
      most = cycles;
      best = reason + " " + std::to_string(cycles);
    }
  return best;
}
}  // namespace

void printDeviceReport(std::ostream& os, const DeviceReport& device) {
  const bool simulated = device.cycles > 0;
  if (simulated) {
    os << "cycles:       " << device.cycles << " (" << fixed(device.deviceSeconds * 1e6, 1)
       << " us on the device, " << fixed(device.hostSeconds, 2) << " s to simulate)\n";
    os << "MACs:         " << device.macs << ", utilisation " << fixed(100 * device.macUtilization(), 1)
       << "% of " << device.peakMacsPerCycle << " MAC/cycle\n";
    os << "DRAM:         read " << device.dramReadBytes << " B, written " << device.dramWriteBytes
       << " B; SRAM peak " << device.sramPeakBytes << " B; energy " << fixed(device.energyPj / 1e6, 3)
       << " uJ\n";
  } else {
    uint64_t estimate = 0;
    for (const LayerReport& layer : device.layers) estimate += layer.estimatedCycles;
    os << "cycles:       not simulated; the compiler estimates " << estimate
       << " (sum over layers, without overlap between layers)\n";
  }
  if (device.layers.empty()) return;
  // Measured columns first; the shape and tiling close each line untruncated.
  os << "\n"
     << padded("layer", 30) << padded("op", 16) << padded(simulated ? "cycles" : "est. cycles", 12, true)
     << padded("util", 7, true) << padded("DRAM B", 11, true) << "  " << padded("stall (max)", 22)
     << "shape | tiles\n";
  for (const LayerReport& layer : device.layers) {
    os << padded(layer.name, 30) << padded(layer.op, 16)
       << padded(std::to_string(simulated ? layer.cycles : layer.estimatedCycles), 12, true)
       << padded(simulated ? fixed(100 * layer.macUtilization, 1) + "%" : "-", 7, true)
       << padded(simulated ? std::to_string(layer.dramBytes) : "-", 11, true) << "  "
       << padded(dominantStall(layer), 22) << layer.shape << " | " << layer.tiles << "\n";
  }
}

void writeDeviceReport(JsonWriter& json, const DeviceReport& device) {
  json.key("cycles").value(device.cycles);
  json.key("macs").value(device.macs);
  json.key("peak_macs_per_cycle").value(device.peakMacsPerCycle);
  json.key("mac_utilization").value(device.macUtilization());
  json.key("dram_read_bytes").value(device.dramReadBytes);
  json.key("dram_write_bytes").value(device.dramWriteBytes);
  json.key("sram_peak_bytes").value(device.sramPeakBytes);
  json.key("energy_pj").value(device.energyPj);
  json.key("device_seconds").value(device.deviceSeconds);
  json.key("latency_us").value(device.deviceSeconds * 1e6);
  json.key("host_seconds").value(device.hostSeconds);
  json.key("layers").beginArray();
  for (const LayerReport& layer : device.layers) {
    json.beginObject();
    json.key("name").value(layer.name).key("op").value(layer.op).key("shape").value(layer.shape);
    json.key("tiles").value(layer.tiles);
    json.key("estimated_cycles").value(layer.estimatedCycles);
    json.key("cycles").value(layer.cycles).key("macs").value(layer.macs);
    json.key("mac_utilization").value(layer.macUtilization);
    json.key("dram_bytes").value(layer.dramBytes);
    json.key("stall_cycles").beginObject();
    for (const auto& [reason, cycles] : layer.stallCycles) json.key(reason).value(cycles);
    json.endObject();
    json.endObject();
  }
  json.endArray();
}

}  // namespace ember::cli
