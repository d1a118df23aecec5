// Stats JSON and the Chrome trace-event timeline.
#include <cstdio>
#include <sstream>

#include "ember/npu/Simulator.h"

namespace ember::npu {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string stalls(const std::array<uint64_t, kNumStallReasons>& s) {
  std::string out = "{";
  for (size_t i = 0; i < kNumStallReasons; ++i)
    out +=
        (i ? ", " : "") + quote(std::string(stallReasonName(StallReason(i)))) + ": " + std::to_string(s[i]);
  return out + "}";
}

std::string_view mnemonic(uint8_t opcode) {
  const auto* spec = isa::findOpcode(opcode);
  return spec ? spec->mnemonic : "?";
}

}  // namespace

std::string statsToJson(const SimStats& s, const Bundle& bundle, bool perInstruction) {
  std::ostringstream os;
  os << "{\n";
  os << "  \"config\": " << quote(s.configName) << ",\n";
  os << "  \"clock_ghz\": " << num(s.clockGhz) << ",\n";
  os << "  \"cycles\": " << s.cycles << ",\n";
  os << "  \"seconds\": " << num(double(s.cycles) / (s.clockGhz * 1e9)) << ",\n";
  os << "  \"instructions\": " << s.instructions << ",\n";
  os << "  \"macs\": " << s.macs << ",\n";
  os << "  \"mac_utilization\": " << num(s.macUtilization) << ",\n";
  os << "  \"dram_read_bytes\": " << s.dramReadBytes << ",\n";
  os << "  \"dram_write_bytes\": " << s.dramWriteBytes << ",\n";
  os << "  \"scratchpad_read_bytes\": " << s.scratchpadReadBytes << ",\n";
  os << "  \"scratchpad_write_bytes\": " << s.scratchpadWriteBytes << ",\n";
  os << "  \"accumulator_read_bytes\": " << s.accumulatorReadBytes << ",\n";
  os << "  \"accumulator_write_bytes\": " << s.accumulatorWriteBytes << ",\n";
  os << "  \"scratchpad_peak_bytes\": " << s.scratchpadPeakBytes << ",\n";
  os << "  \"accumulator_peak_bytes\": " << s.accumulatorPeakBytes << ",\n";
  os << "  \"vector_ops\": " << s.vectorOps << ",\n";
  os << "  \"energy_pj\": " << num(s.energyPj) << ",\n";
  os << "  \"energy_breakdown_pj\": {";
  bool first = true;
  for (const auto& [k, v] : s.energyBreakdownPj) {
    os << (first ? "" : ", ") << quote(k) << ": " << num(v);
    first = false;
  }
  os << "},\n";
  os << "  \"host_seconds\": " << num(s.hostSeconds) << ",\n";
  os << "  \"simulated_macs_per_host_second\": "
     << num(s.hostSeconds > 0 ? double(s.macs) / s.hostSeconds : 0) << ",\n";
  os << "  \"matrix_engine\": " << quote(s.matrixEngine) << ",\n";
  os << "  \"matrix_engine_cycles\": " << s.matrixEngineCycles << ",\n";
  os << "  \"units\": {\n";
  for (size_t u = 0; u < kNumUnits; ++u) {
    const auto& us = s.units[u];
    uint64_t stalled = 0;
    for (auto v : us.stallCycles) stalled += v;
    os << "    " << quote(std::string(unitName(Unit(u)))) << ": {\"busy_cycles\": " << us.busyCycles
       << ", \"stall_cycles\": " << stalled << ", \"stalls\": " << stalls(us.stallCycles)
       << ", \"utilization\": " << num(s.cycles ? double(us.busyCycles) / double(s.cycles) : 0) << "}"
       << (u + 1 < kNumUnits ? "," : "") << "\n";
  }
  os << "  },\n";
  os << "  \"layers\": [\n";
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    os << "    {\"name\": " << quote(l.name) << ", \"op\": " << quote(l.op) << ", \"cycles\": " << l.cycles
       << ", \"macs\": " << l.macs << ", \"mac_utilization\": " << num(l.macUtilization)
       << ", \"dram_bytes\": " << l.dramBytes << ", \"stalls\": " << stalls(l.stallCycles) << "}"
       << (i + 1 < s.layers.size() ? "," : "") << "\n";
  }
  os << "  ]";
  if (perInstruction) {
    os << ",\n  \"instruction_records\": [\n";
    for (size_t i = 0; i < s.records.size(); ++i) {
      const auto& r = s.records[i];
      os << "    {\"index\": " << r.index << ", \"op\": " << quote(std::string(mnemonic(r.opcode)))
         << ", \"unit\": " << quote(std::string(unitName(r.unit)))
         << ", \"layer\": " << quote(r.layer ? bundle.layers[r.layer - 1] : "program")
         << ", \"issue\": " << r.issueCycle << ", \"start\": " << r.startCycle << ", \"end\": " << r.endCycle
         << ", \"macs\": " << r.macs << ", \"dram_bytes\": " << r.dramBytes
         << ", \"stalls\": " << stalls(r.stallCycles) << "}" << (i + 1 < s.records.size() ? "," : "") << "\n";
    }
    os << "  ]";
  }
  os << "\n}\n";
  return os.str();
}

std::string traceToJson(const SimStats& s, const Bundle& bundle) {
  std::ostringstream os;
  const double usPerCycle = 1.0 / (s.clockGhz * 1000.0);
  os << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": "
     << quote("Ember NPU " + s.configName) << "}}";
  for (size_t u = 0; u < kNumUnits; ++u)
    os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << u
       << ", \"args\": {\"name\": " << quote(std::string(unitName(Unit(u)))) << "}}";
  auto slice = [&](const std::string& name, Unit unit, uint64_t begin, uint64_t end,
                   const InstructionRecord& r) {
    os << ",\n{\"name\": " << quote(name) << ", \"ph\": \"X\", \"pid\": 0, \"tid\": " << size_t(unit)
       << ", \"ts\": " << num(double(begin) * usPerCycle)
       << ", \"dur\": " << num(double(end - begin) * usPerCycle) << ", \"args\": {\"index\": " << r.index
       << ", \"layer\": " << quote(r.layer ? bundle.layers[r.layer - 1] : "program") << "}}";
  };
  for (const auto& r : s.records) {
    const Unit queueUnit =
        r.unit == Unit::MatrixEngine || r.unit == Unit::VectorUnit ? Unit::Compute : r.unit;
    if (r.startCycle > r.issueCycle) slice("wait token", queueUnit, r.issueCycle, r.startCycle, r);
    slice(std::string(mnemonic(r.opcode)), r.unit, r.startCycle, r.endCycle, r);
  }
  os << "\n]}\n";
  return os.str();
}

}  // namespace ember::npu
