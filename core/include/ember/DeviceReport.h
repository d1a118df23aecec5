// A device's report (docs/backend-guide.md, "Device reports"): what a
// backend's device decided at compile and measured in its last run, in a
// form the tools print and write without knowing the device. A few fields
// every device has (its name, cycles, time, MACs, layers with names), named
// counters, and a per-layer table whose columns the backend declares.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ember {

/// What a column holds: how it is written to JSON and shown in the text.
enum class ReportKind : uint8_t {
  Count,      ///< uint64_t (bytes, instructions)
  Real,       ///< double; the text shows three decimals
  Fraction,   ///< double, a share of a whole; the text shows a percentage with one decimal
  Text,       ///< std::string
  Breakdown,  ///< std::map<std::string, uint64_t> (reason -> cycles); the text shows its largest part
};

/// A counter's value: a count or a real number.
using ReportNumber = std::variant<uint64_t, double>;
/// A cell of the per-layer table; the alternative follows the column's kind
/// (Real and Fraction are double).
using ReportValue = std::variant<uint64_t, double, std::string, std::map<std::string, uint64_t>>;

/// A figure of the whole function, written as a top-level JSON key.
struct ReportCounter {
  std::string name;  ///< the snake_case JSON key, e.g. "dram_read_bytes"
  std::string unit;  ///< of the value, e.g. "B", "pJ"
  ReportNumber value = uint64_t(0);
  bool peak = false;  ///< partitions combine into the largest value (a high-water mark), not the sum
};

/// A column of the per-layer table.
struct ReportColumn {
  std::string name;   ///< the snake_case JSON key in each layer, e.g. "dram_bytes"
  std::string title;  ///< the text table's header; empty: written to JSON only
  std::string unit;
  ReportKind kind = ReportKind::Count;
  bool measured = true;  ///< filled by each run ("-" before one), else at compile
  int width = 12;        ///< text width of a measured column (compile-time ones close the line)
};

/// One layer: an instruction of the IR, or a fused group.
struct LayerReport {
  std::string name;              ///< the graph node (the IR instruction's name)
  std::string op;                ///< its op kind, e.g. "QuantizedConv"
  uint64_t estimatedCycles = 0;  ///< the compiler's estimate; 0: none
  uint64_t cycles = 0, macs = 0;
  std::map<std::string, ReportValue, std::less<>> values;  ///< by column name; a column may be missing

  const ReportValue* value(std::string_view column) const;
  /// A Text column's value; empty when the layer has none.
  std::string text(std::string_view column) const;
};

/// What a device measured in the last execute() (the compile-time fields are
/// filled at compile). Zero and empty until then.
struct DeviceReport {
  std::string device;     ///< its name in the text report, e.g. "npu"
  bool measured = false;  ///< a run has filled the measured fields
  uint64_t cycles = 0, macs = 0;
  uint64_t peakMacsPerCycle = 0;  ///< utilisation = macs / (cycles * peak); 0: not counted
  double deviceSeconds = 0;       ///< the run's time on the device
  double hostSeconds = 0;         ///< host wall time of a simulated device's run
  std::vector<ReportCounter> counters;
  std::vector<ReportColumn> columns;
  /// Lines of the text report after the totals: `{counter}` is replaced by
  /// the counter's value, `{counter/D}` by the value divided by D with three
  /// decimals. Counters that no line names follow, one a line.
  std::vector<std::string> summary;
  std::vector<LayerReport> layers;

  double macUtilization() const {
    return cycles && peakMacsPerCycle ? double(macs) / (double(cycles) * double(peakMacsPerCycle)) : 0.0;
  }
  const ReportCounter* counter(std::string_view name) const;
  /// Sets a counter's value, declaring it (last) on first use.
  void setCounter(const std::string& name, ReportNumber value, const std::string& unit = "",
                  bool peak = false);
  /// Adds another partition's figures (sequential execution: cycles add;
  /// counters add or keep the peak; columns and summary lines are united).
  void merge(const DeviceReport& other);
};

}  // namespace ember
