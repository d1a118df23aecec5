#include "DeviceReportFormat.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <variant>

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

/// The label of a line of totals: "cycles:" and its padding.
std::string label(const std::string& name) {
  constexpr size_t kWidth = 14;
  const std::string text = name + ":";
  return text + std::string(text.size() < kWidth ? kWidth - text.size() : 1, ' ');
}

std::string numberText(const ReportNumber& number) {
  if (const uint64_t* count = std::get_if<uint64_t>(&number)) return std::to_string(*count);
  return fixed(std::get<double>(number), 3);
}

double numberValue(const ReportNumber& number) {
  return std::visit([](auto value) { return double(value); }, number);
}

/// A breakdown's largest part, "reason cycles" (the first of equals), or "-".
std::string largestPart(const std::map<std::string, uint64_t>& parts) {
  std::string best = "-";
  uint64_t most = 0;
  for (const auto& [part, amount] : parts)
    if (amount > most) {
      most = amount;
      best = part + " " + std::to_string(amount);
    }
  return best;
}

std::string cellText(const ReportColumn& column, const ReportValue* cell) {
  if (!cell) return "-";
  if (const auto* parts = std::get_if<std::map<std::string, uint64_t>>(cell)) return largestPart(*parts);
  if (const auto* text = std::get_if<std::string>(cell)) return *text;
  if (const auto* count = std::get_if<uint64_t>(cell)) return std::to_string(*count);
  const double real = std::get<double>(*cell);
  return column.kind == ReportKind::Fraction ? fixed(100 * real, 1) + "%" : fixed(real, 3);
}

bool rightAligned(const ReportColumn& column) {
  return column.kind != ReportKind::Text && column.kind != ReportKind::Breakdown;
}

/// A summary line with `{counter}` and `{counter/D}` replaced; names the
/// counters it printed in `printed`.
std::string expandSummary(const DeviceReport& device, const std::string& line,
                          std::set<std::string>& printed) {
  std::string out;
  size_t at = 0;
  for (size_t open = line.find('{'); open != std::string::npos; open = line.find('{', at)) {
    const size_t close = line.find('}', open);
    if (close == std::string::npos) break;
    out += line.substr(at, open - at);
    const std::string field = line.substr(open + 1, close - open - 1);
    const size_t slash = field.find('/');
    const std::string name = field.substr(0, slash);
    const ReportCounter* counter = device.counter(name);
    if (!counter)
      out += "-";
    else if (slash == std::string::npos)
      out += numberText(counter->value);
    else
      out += fixed(numberValue(counter->value) / std::strtod(field.c_str() + slash + 1, nullptr), 3);
    printed.insert(name);
    at = close + 1;
  }
  return out + line.substr(at);
}

uint64_t estimatedCycles(const DeviceReport& device) {
  uint64_t estimate = 0;
  for (const LayerReport& layer : device.layers) estimate += layer.estimatedCycles;
  return estimate;
}

void printTotals(std::ostream& os, const DeviceReport& device) {
  if (device.measured && device.cycles > 0) {
    os << label("cycles") << device.cycles << " (" << fixed(device.deviceSeconds * 1e6, 1)
       << " us on the device"
       << (device.hostSeconds > 0 ? ", " + fixed(device.hostSeconds, 2) + " s to simulate" : "") << ")\n";
  } else if (!device.measured && estimatedCycles(device) > 0) {
    os << label("cycles") << "not simulated; the compiler estimates " << estimatedCycles(device)
       << " (sum over layers, without overlap between layers)\n";
  }
  if (!device.measured) return;
  if (device.peakMacsPerCycle > 0)
    os << label("MACs") << device.macs << ", utilisation " << fixed(100 * device.macUtilization(), 1)
       << "% of " << device.peakMacsPerCycle << " MAC/cycle\n";
  std::set<std::string> printed;
  for (const std::string& line : device.summary) os << expandSummary(device, line, printed) << "\n";
  for (const ReportCounter& counter : device.counters)
    if (!printed.count(counter.name))
      os << label(counter.name) << numberText(counter.value)
         << (counter.unit.empty() ? "" : " " + counter.unit) << "\n";
}

/// Measured columns first (each in its width; "-" before a run), then the
/// compile-time ones untruncated, joined by " | ".
void printLayerRow(std::ostream& os, const DeviceReport& device, bool withCycles, const std::string& name,
                   const std::string& op, const std::string& cycles,
                   const std::function<std::string(const ReportColumn&)>& cell) {
  os << padded(name, 30) << padded(op, 16);
  if (withCycles) os << padded(cycles, 12, true);
  bool afterNumber = withCycles;
  for (const ReportColumn& column : device.columns) {
    if (!column.measured || column.title.empty()) continue;
    afterNumber = rightAligned(column);
    const size_t width = size_t(std::max(column.width, 1));
    os << (afterNumber ? padded(cell(column), width, true) : "  " + padded(cell(column), width));
  }
  std::string tail;
  for (const ReportColumn& column : device.columns)
    if (!column.measured && !column.title.empty()) tail += (tail.empty() ? "" : " | ") + cell(column);
  if (!tail.empty() && afterNumber) os << "  ";
  os << tail << "\n";
}
}  // namespace

void printDeviceReport(std::ostream& os, const DeviceReport& device) {
  printTotals(os, device);
  if (device.layers.empty()) return;
  const bool withCycles = device.cycles > 0 || estimatedCycles(device) > 0;
  os << "\n";
  printLayerRow(os, device, withCycles, "layer", "op", device.measured ? "cycles" : "est. cycles",
                [](const ReportColumn& column) { return column.title; });
  for (const LayerReport& layer : device.layers)
    printLayerRow(os, device, withCycles, layer.name, layer.op,
                  std::to_string(device.measured ? layer.cycles : layer.estimatedCycles),
                  [&](const ReportColumn& column) {
                    return device.measured || !column.measured ? cellText(column, layer.value(column.name))
                                                               : std::string("-");
                  });
}

namespace {
void writeValue(JsonWriter& json, const ReportValue& value) {
  std::visit(
      [&json](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::map<std::string, uint64_t>>) {
          json.beginObject();
          for (const auto& [part, amount] : v) json.key(part).value(amount);
          json.endObject();
        } else {
          json.value(v);
        }
      },
      value);
}

void writeColumns(JsonWriter& json, const DeviceReport& device, const LayerReport& layer, bool measured) {
  for (const ReportColumn& column : device.columns)
    if (column.measured == measured)
      if (const ReportValue* cell = layer.value(column.name)) writeValue(json.key(column.name), *cell);
}
}  // namespace

void writeDeviceReport(JsonWriter& json, const DeviceReport& device) {
  json.key("cycles").value(device.cycles);
  json.key("macs").value(device.macs);
  json.key("peak_macs_per_cycle").value(device.peakMacsPerCycle);
  json.key("mac_utilization").value(device.macUtilization());
  for (const ReportCounter& counter : device.counters)
    std::visit([&](auto value) { json.key(counter.name).value(value); }, counter.value);
  json.key("device_seconds").value(device.deviceSeconds);
  json.key("latency_us").value(device.deviceSeconds * 1e6);
  json.key("host_seconds").value(device.hostSeconds);
  json.key("layers").beginArray();
  for (const LayerReport& layer : device.layers) {
    json.beginObject();
    json.key("name").value(layer.name).key("op").value(layer.op);
    writeColumns(json, device, layer, false);
    json.key("estimated_cycles").value(layer.estimatedCycles);
    json.key("cycles").value(layer.cycles).key("macs").value(layer.macs);
    writeColumns(json, device, layer, true);
    json.endObject();
  }
  json.endArray();
}

}  // namespace ember::cli
