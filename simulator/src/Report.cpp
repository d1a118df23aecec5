// Stats JSON and the Chrome trace-event timeline.
#include <optional>
#include <string>
#include <string_view>

#include "ember/JsonWriter.h"
#include "ember/npu/Simulator.h"

namespace ember::npu {
namespace {

using Layout = JsonWriter::Layout;

void writeStalls(JsonWriter& json, const std::array<uint64_t, kNumStallReasons>& stalls) {
  json.beginObject(Layout::Inline);
  for (size_t i = 0; i < kNumStallReasons; ++i) json.key(stallReasonName(StallReason(i))).value(stalls[i]);
  json.endObject();
}

std::string_view mnemonic(uint8_t opcode) {
  const auto* spec = isa::findOpcode(opcode);
  return spec ? spec->mnemonic : "?";
}

std::string_view layerName(const Bundle& bundle, uint32_t layer) {
  return layer ? std::string_view(bundle.layers[layer - 1]) : std::string_view("program");
}

void writeTotals(JsonWriter& json, const SimStats& s) {
  json.key("config").value(s.configName);
  json.key("clock_ghz").value(s.clockGhz);
  json.key("cycles").value(s.cycles);
  json.key("seconds").value(double(s.cycles) / (s.clockGhz * 1e9));
  json.key("instructions").value(s.instructions);
  json.key("macs").value(s.macs);
  json.key("mac_utilization").value(s.macUtilization);
  json.key("dram_read_bytes").value(s.dramReadBytes);
  json.key("dram_write_bytes").value(s.dramWriteBytes);
  json.key("scratchpad_read_bytes").value(s.scratchpadReadBytes);
  json.key("scratchpad_write_bytes").value(s.scratchpadWriteBytes);
  json.key("accumulator_read_bytes").value(s.accumulatorReadBytes);
  json.key("accumulator_write_bytes").value(s.accumulatorWriteBytes);
  json.key("scratchpad_peak_bytes").value(s.scratchpadPeakBytes);
  json.key("accumulator_peak_bytes").value(s.accumulatorPeakBytes);
  json.key("vector_ops").value(s.vectorOps);
  json.key("energy_pj").value(s.energyPj);
  json.key("energy_breakdown_pj").beginObject(Layout::Inline);
  for (const auto& [name, picojoules] : s.energyBreakdownPj) json.key(name).value(picojoules);
  json.endObject();
  json.key("host_seconds").value(s.hostSeconds);
  json.key("simulated_macs_per_host_second").value(s.hostSeconds > 0 ? double(s.macs) / s.hostSeconds : 0);
  json.key("matrix_engine").value(s.matrixEngine);
  json.key("matrix_engine_cycles").value(s.matrixEngineCycles);
}

void writeUnits(JsonWriter& json, const SimStats& s) {
  json.key("units").beginObject();
  for (size_t u = 0; u < kNumUnits; ++u) {
    const auto& us = s.units[u];
    uint64_t stalled = 0;
    for (auto v : us.stallCycles) stalled += v;
    json.key(unitName(Unit(u))).beginObject(Layout::Inline);
    json.key("busy_cycles").value(us.busyCycles).key("stall_cycles").value(stalled).key("stalls");
    writeStalls(json, us.stallCycles);
    json.key("utilization").value(s.cycles ? double(us.busyCycles) / double(s.cycles) : 0);
    json.endObject();
  }
  json.endObject();
}

void writeLayers(JsonWriter& json, const SimStats& s) {
  json.key("layers").beginArray();
  for (const auto& l : s.layers) {
    json.beginObject(Layout::Inline);
    json.key("name").value(l.name).key("op").value(l.op).key("cycles").value(l.cycles);
    json.key("macs").value(l.macs).key("mac_utilization").value(l.macUtilization);
    json.key("dram_bytes").value(l.dramBytes).key("stalls");
    writeStalls(json, l.stallCycles);
    json.endObject();
  }
  json.endArray();
}

void writeInstructionRecords(JsonWriter& json, const SimStats& s, const Bundle& bundle) {
  json.key("instruction_records").beginArray();
  for (const auto& r : s.records) {
    json.beginObject(Layout::Inline);
    json.key("index").value(r.index).key("op").value(mnemonic(r.opcode)).key("unit").value(unitName(r.unit));
    json.key("layer").value(layerName(bundle, r.layer));
    json.key("issue").value(r.issueCycle).key("start").value(r.startCycle).key("end").value(r.endCycle);
    json.key("macs").value(r.macs).key("dram_bytes").value(r.dramBytes).key("stalls");
    writeStalls(json, r.stallCycles);
    json.endObject();
  }
  json.endArray();
}

}  // namespace

std::string statsToJson(const SimStats& s, const Bundle& bundle, bool perInstruction) {
  JsonWriter json(17);
  json.beginObject();
  writeTotals(json, s);
  writeUnits(json, s);
  writeLayers(json, s);
  if (perInstruction) writeInstructionRecords(json, s, bundle);
  json.endObject();
  return json.str();
}

std::string traceToJson(const SimStats& s, const Bundle& bundle) {
  const double usPerCycle = 1.0 / (s.clockGhz * 1000.0);
  JsonWriter json(17);
  json.beginObject(Layout::Inline);
  json.key("displayTimeUnit").value("ns").key("traceEvents").beginArray(Layout::Lines);
  auto metadata = [&](const char* name, std::optional<size_t> tid, const std::string& value) {
    json.beginObject(Layout::Inline).key("name").value(name).key("ph").value("M").key("pid").value(0);
    if (tid) json.key("tid").value(*tid);
    json.key("args").beginObject(Layout::Inline).key("name").value(value).endObject();
    json.endObject();
  };
  metadata("process_name", std::nullopt, "Ember NPU " + s.configName);
  for (size_t u = 0; u < kNumUnits; ++u) metadata("thread_name", u, std::string(unitName(Unit(u))));
  auto slice = [&](std::string_view name, Unit unit, uint64_t begin, uint64_t end,
                   const InstructionRecord& r) {
    json.beginObject(Layout::Inline).key("name").value(name).key("ph").value("X").key("pid").value(0);
    json.key("tid").value(size_t(unit)).key("ts").value(double(begin) * usPerCycle);
    json.key("dur").value(double(end - begin) * usPerCycle);
    json.key("args").beginObject(Layout::Inline).key("index").value(r.index);
    json.key("layer").value(layerName(bundle, r.layer)).endObject();
    json.endObject();
  };
  for (const auto& r : s.records) {
    const Unit queueUnit =
        r.unit == Unit::MatrixEngine || r.unit == Unit::VectorUnit ? Unit::Compute : r.unit;
    if (r.startCycle > r.issueCycle) slice("wait token", queueUnit, r.issueCycle, r.startCycle, r);
    slice(mnemonic(r.opcode), r.unit, r.startCycle, r.endCycle, r);
  }
  json.endArray();
  json.endObject();
  return json.str();
}

}  // namespace ember::npu
