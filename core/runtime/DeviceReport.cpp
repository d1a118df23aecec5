#include "ember/DeviceReport.h"

#include <algorithm>
#include <functional>

namespace ember {

const ReportValue* LayerReport::value(std::string_view column) const {
  auto it = values.find(column);
  return it == values.end() ? nullptr : &it->second;
}

std::string LayerReport::text(std::string_view column) const {
  const ReportValue* cell = value(column);
  const std::string* text = cell ? std::get_if<std::string>(cell) : nullptr;
  return text ? *text : std::string();
}

namespace {
/// The counter named `name` in `counters` (const or not), or null.
template <typename Counters>
auto findCounter(Counters& counters, std::string_view name) -> decltype(&counters.front()) {
  auto it = std::find_if(counters.begin(), counters.end(),
                         [&](const ReportCounter& counter) { return counter.name == name; });
  return it == counters.end() ? nullptr : &*it;
}

/// Two partitions' values of one counter: their sum, or the larger of a peak.
ReportNumber combine(const ReportNumber& a, const ReportNumber& b, bool peak) {
  if (std::holds_alternative<uint64_t>(a) && std::holds_alternative<uint64_t>(b)) {
    const uint64_t x = std::get<uint64_t>(a), y = std::get<uint64_t>(b);
    return peak ? std::max(x, y) : x + y;
  }
  auto real = [](const ReportNumber& n) { return std::visit([](auto v) { return double(v); }, n); };
  return peak ? std::max(real(a), real(b)) : real(a) + real(b);
}

template <typename T, typename Same>
void unite(std::vector<T>& into, const std::vector<T>& from, Same same) {
  for (const T& item : from)
    if (std::none_of(into.begin(), into.end(), [&](const T& have) { return same(have, item); }))
      into.push_back(item);
}
}  // namespace

const ReportCounter* DeviceReport::counter(std::string_view name) const {
  return findCounter(counters, name);
}

void DeviceReport::setCounter(const std::string& name, ReportNumber value, const std::string& unit,
                              bool peak) {
  if (ReportCounter* existing = findCounter(counters, name))
    existing->value = value;
  else
    counters.push_back({name, unit, value, peak});
}

void DeviceReport::merge(const DeviceReport& other) {
  if (device.empty()) device = other.device;
  measured = measured || other.measured;
  cycles += other.cycles;
  macs += other.macs;
  peakMacsPerCycle = std::max(peakMacsPerCycle, other.peakMacsPerCycle);
  deviceSeconds += other.deviceSeconds;
  hostSeconds += other.hostSeconds;
  for (const ReportCounter& theirs : other.counters) {
    if (ReportCounter* mine = findCounter(counters, theirs.name))
      mine->value = combine(mine->value, theirs.value, mine->peak);
    else
      counters.push_back(theirs);
  }
  unite(columns, other.columns,
        [](const ReportColumn& a, const ReportColumn& b) { return a.name == b.name; });
  unite(summary, other.summary, std::equal_to<>());
  layers.insert(layers.end(), other.layers.begin(), other.layers.end());
}

}  // namespace ember
