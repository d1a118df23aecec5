// The report of `ember multichip` (MultichipReport.h).
#include "MultichipReport.h"

#include <algorithm>
#include <cmath>
#include <iomanip>

namespace ember::cli {
namespace {

using multichip::MultichipFigures;

double meanCycles(const multichip::MultichipRun& run, size_t stage, size_t* count) {
  uint64_t total = 0;
  *count = 0;
  for (const auto& cycles : run.stageCycles)
    if (auto it = cycles.find(stage); it != cycles.end()) {
      total += it->second;
      ++*count;
    }
  return *count ? double(total) / double(*count) : 0.0;
}

/// The mean host time of a stage's runs (its host partitions and host-link transfers).
double meanHostNs(const multichip::MultichipRun& run, size_t stage) {
  double total = 0;
  size_t count = 0;
  for (const auto& hostNs : run.stageHostNs)
    if (auto it = hostNs.find(stage); it != hostNs.end()) {
      total += it->second;
      ++count;
    }
  return count ? total / double(count) : 0.0;
}

double busiestLink(const MultichipFigures& figures) {
  double busiest = 0;
  for (double u : figures.linkUtilization) busiest = std::max(busiest, u);
  return busiest;
}

/// What is busiest: "chips" (a chip's programs plus its host's partitions),
/// "link" (a link direction) or "shared DRAM".
std::string boundBy(const MultichipFigures& figures) {
  const multichip::Schedule& schedule = figures.schedule;
  double chip = 0, link = 0;
  for (size_t c = 0; c < schedule.chipBusyNs.size(); ++c)
    chip = std::max(chip, schedule.chipBusyNs[c] + schedule.hostBusyNs[c]);
  for (const auto& use : schedule.links) link = std::max({link, use.busyNs[0], use.busyNs[1]});
  if (figures.sharedDramBusyNs > std::max(chip, link)) return "shared DRAM";
  return link > chip ? "link" : "chips";
}

/// What the report's reader must know about how the figures were made.
std::vector<std::string> warningsOf(const MultichipSummary& summary) {
  std::vector<std::string> warnings;
  if (!summary.coSimulated && summary.model->system.dram == multichip::DramKind::Shared)
    warnings.push_back(
        "the event schedule (--schedule-only) does not model shared-DRAM contention: each chip's DRAM "
        "traffic runs at its own config's bandwidth, so the figures are optimistic");
  return warnings;
}

std::string percent(double fraction) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100.0 * fraction << "%";
  return os.str();
}

/// How far `estimate` is from `measured`, in percent of `measured`.
double differencePercent(double estimate, double measured) {
  return measured != 0 ? 100.0 * (estimate - measured) / measured : 0.0;
}

void writeScheduleEstimate(JsonWriter& json, const MultichipFigures& estimate,
                           const MultichipFigures& measured, double images) {
  json.key("schedule_estimate").beginObject();
  json.key("latency_us").value(estimate.latencyNs / 1e3);
  json.key("makespan_us").value(estimate.makespanNs / 1e3);
  json.key("throughput_images_per_s").value(estimate.throughputPerSecond * images);
  json.key("steady_throughput_images_per_s").value(estimate.steadyThroughputPerSecond * images);
  json.key("latency_difference_percent").value(differencePercent(estimate.latencyNs, measured.latencyNs));
  json.key("throughput_difference_percent")
      .value(differencePercent(estimate.throughputPerSecond, measured.throughputPerSecond));
  json.key("steady_throughput_difference_percent")
      .value(differencePercent(estimate.steadyThroughputPerSecond, measured.steadyThroughputPerSecond));
  json.endObject();
}

/// The stages (with their host partitions and host time) and the cut tensors.
void printStages(std::ostream& os, const multichip::MultichipModel& model,
                 const multichip::MultichipRun& run) {
  const multichip::SystemConfig& system = model.system;
  os << "stages:\n";
  for (size_t s = 0; s < model.stages.size(); ++s) {
    const auto& stage = model.stages[s];
    size_t runs = 0;
    const double cycles = meanCycles(run, s, &runs);
    os << "  " << stage.name << " on " << system.chips[stage.chip].name << " ("
       << system.chips[stage.chip].config.name << "): " << stage.numNodes << " nodes " << stage.firstNode
       << " .. " << stage.lastNode << ", estimated " << stage.estimatedCycles << " cycles, measured "
       << std::fixed << std::setprecision(0) << cycles << " per micro-batch x " << runs << ", DRAM "
       << stage.dramBytes << " B\n";
    for (const std::string& partition : stage.hostPartitions)
      os << "    host partition " << partition << "\n";
    if (!stage.hostPartitions.empty())
      os << "    host time " << std::setprecision(1) << meanHostNs(run, s) / 1e3
         << (system.hostTimed ? " us per micro-batch (modelled: partitions + host-link transfers)\n"
                              : " us per micro-batch (host not timed)\n");
  }
  for (const auto& transfer : model.transfers)
    os << "  transfer " << transfer.tensor << ": " << model.stages[transfer.fromStage].name << " -> "
       << model.stages[transfer.toStage].name << ", " << transfer.bytes << " B per micro-batch\n";
}

/// Every chip's use (with its host and DRAM stalls), the shared DRAM's and every link's.
void printChipsAndLinks(std::ostream& os, const MultichipSummary& summary) {
  const multichip::SystemConfig& system = summary.model->system;
  const MultichipFigures& figures = summary.figures;
  for (size_t c = 0; c < system.chips.size(); ++c) {
    os << "chip " << system.chips[c].name << ":    busy " << percent(figures.chipUtilization[c])
       << ", MAC utilisation " << percent(figures.chipMacUtilization[c]);
    if (figures.schedule.hostBusyNs[c] > 0) os << ", host " << figures.schedule.hostBusyNs[c] / 1e3 << " us";
    if (!figures.chipDramStallCycles.empty())
      os << ", DRAM stalls " << figures.chipDramStallCycles[c] << " cycles (shared DRAM "
         << figures.chipSharedDramWaitCycles[c] << ")";
    os << "\n";
  }
  if (system.dram == multichip::DramKind::Shared && summary.coSimulated)
    os << "shared DRAM:  " << system.sharedDramGBps << " GB/s, busy "
       << percent(figures.sharedDramUtilization) << ", " << figures.sharedDramBytes << " B\n";
  for (size_t l = 0; l < system.links.size(); ++l) {
    const auto& use = figures.schedule.links[l];
    os << "link " << system.linkName(system.links[l]) << ": busy " << percent(figures.linkUtilization[l])
       << ", " << use.bytes[0] + use.bytes[1] << " B in " << use.transfers << " transfers\n";
  }
}

}  // namespace

void printMultichipReport(std::ostream& os, const MultichipSummary& summary) {
  const multichip::MultichipModel& model = *summary.model;
  const multichip::MultichipRun& run = *summary.run;
  const multichip::SystemConfig& system = model.system;
  const MultichipFigures& figures = summary.figures;
  const double images = double(summary.imagesPerMicroBatch);
  os << "system:       " << system.name << " (" << system.chips.size() << " chips, " << system.links.size()
     << " links), split " << multichip::splitModeName(model.split) << ", " << run.stageCycles.size()
     << " micro-batches of " << summary.imagesPerMicroBatch << "\n";
  printStages(os, model, run);
  os << std::setprecision(1);
  os << "latency:      " << figures.latencyNs / 1e3 << " us (first micro-batch, end to end)\n";
  os << "batch:        " << figures.makespanNs / 1e3 << " us; throughput "
     << figures.throughputPerSecond * images << " images/s over the batch, "
     << figures.steadyThroughputPerSecond * images << " images/s steady state\n";
  printChipsAndLinks(os, summary);
  if (summary.scheduleEstimate) {
    const MultichipFigures& estimate = *summary.scheduleEstimate;
    os << "event schedule of the same stage cycles: latency " << estimate.latencyNs / 1e3 << " us ("
       << std::showpos << differencePercent(estimate.latencyNs, figures.latencyNs) << "%), throughput "
       << std::noshowpos << estimate.throughputPerSecond * images << " images/s (" << std::showpos
       << differencePercent(estimate.throughputPerSecond, figures.throughputPerSecond) << "%)\n"
       << std::noshowpos;
  }
  if (!summary.sweep.empty()) {
    os << (summary.coSimulated ? "link bandwidth sweep (same split, co-simulated on each):\n"
                               : "link bandwidth sweep (same split and stage cycles, retimed):\n")
       << "  GB/s      latency us   images/s   steady images/s   busiest link   bound by\n";
    for (const BandwidthPoint& point : summary.sweep)
      os << "  " << std::setw(8) << point.bandwidthGBps << "  " << std::setw(11)
         << point.figures.latencyNs / 1e3 << "  " << std::setw(9)
         << point.figures.throughputPerSecond * images << "  " << std::setw(16)
         << point.figures.steadyThroughputPerSecond * images << "  " << std::setw(13)
         << percent(busiestLink(point.figures)) << "  " << boundBy(point.figures) << "\n";
  }
  for (const std::string& warning : warningsOf(summary)) os << "warning:      " << warning << "\n";
  if (summary.coSimulated)
    os << "note:         the chips and links were co-simulated in one SystemC elaboration ("
       << summary.coSimulationHostSeconds << " host s)\n";
  else
    os << "note:         each chip's stage is simulated on its own, per micro-batch; the chips and links "
          "are\n"
          "              composed by an event-driven schedule (--schedule-only), not co-simulated\n";
}

namespace {

/// The stages (with their host partitions) and the cut tensors' transfers.
void writeStagesJson(JsonWriter& json, const multichip::MultichipModel& model,
                     const multichip::MultichipRun& run) {
  const multichip::SystemConfig& system = model.system;
  json.key("stages").beginArray();
  for (size_t s = 0; s < model.stages.size(); ++s) {
    const auto& stage = model.stages[s];
    size_t runs = 0;
    const double cycles = meanCycles(run, s, &runs);
    json.beginObject();
    json.key("name").value(stage.name);
    json.key("chip").value(system.chips[stage.chip].name);
    json.key("nodes").value(uint64_t(stage.numNodes));
    json.key("first_node").value(stage.firstNode);
    json.key("last_node").value(stage.lastNode);
    json.key("estimated_cycles").value(stage.estimatedCycles);
    json.key("cycles_per_micro_batch").value(cycles);
    json.key("micro_batches").value(uint64_t(runs));
    json.key("macs").value(run.stageMacs[s]);
    json.key("dram_bytes").value(stage.dramBytes);
    json.key("host_us_per_micro_batch").value(meanHostNs(run, s) / 1e3);
    json.key("host_partitions").beginArray();
    for (const std::string& partition : stage.hostPartitions) json.value(partition);
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("transfers").beginArray();
  for (const auto& transfer : model.transfers) {
    json.beginObject();
    json.key("tensor").value(transfer.tensor);
    json.key("from").value(model.stages[transfer.fromStage].name);
    json.key("to").value(model.stages[transfer.toStage].name);
    json.key("bytes_per_micro_batch").value(transfer.bytes);
    json.key("route").beginArray();
    for (size_t link :
         multichip::route(system, model.stages[transfer.fromStage].chip, model.stages[transfer.toStage].chip))
      json.value(system.linkName(system.links[link]));
    json.endArray();
    json.endObject();
  }
  json.endArray();
}

/// Every chip's and link's use in the timed run.
void writeChipsAndLinksJson(JsonWriter& json, const multichip::SystemConfig& system,
                            const MultichipFigures& figures) {
  json.key("chips").beginArray();
  for (size_t c = 0; c < system.chips.size(); ++c) {
    json.beginObject();
    json.key("name").value(system.chips[c].name);
    json.key("config").value(system.chips[c].config.name);
    json.key("busy_us").value(figures.schedule.chipBusyNs[c] / 1e3);
    json.key("busy_cycles")
        .value(uint64_t(std::llround(figures.schedule.chipBusyNs[c] * system.chips[c].config.clockGhz)));
    json.key("utilization").value(figures.chipUtilization[c]);
    json.key("mac_utilization").value(figures.chipMacUtilization[c]);
    json.key("host_busy_us").value(figures.schedule.hostBusyNs[c] / 1e3);
    if (!figures.chipDramStallCycles.empty()) {
      json.key("dram_stall_cycles").value(figures.chipDramStallCycles[c]);
      json.key("shared_dram_wait_cycles").value(figures.chipSharedDramWaitCycles[c]);
    }
    json.endObject();
  }
  json.endArray();
  json.key("links").beginArray();
  for (size_t l = 0; l < system.links.size(); ++l) {
    const auto& link = system.links[l];
    const auto& use = figures.schedule.links[l];
    json.beginObject();
    json.key("name").value(system.linkName(link));
    json.key("bandwidth_gb_per_s").value(link.bandwidthGBps);
    json.key("latency_ns").value(link.latencyNs);
    json.key("bytes").value(use.bytes[0] + use.bytes[1]);
    json.key("transfers").value(uint64_t(use.transfers));
    json.key("busy_us").value(std::max(use.busyNs[0], use.busyNs[1]) / 1e3);
    json.key("busy_us_per_direction")
        .beginArray()
        .value(use.busyNs[0] / 1e3)
        .value(use.busyNs[1] / 1e3)
        .endArray();
    json.key("utilization").value(figures.linkUtilization[l]);
    json.endObject();
  }
  json.endArray();
}

/// The DRAM (shared: its use), the hosts' model and the warnings.
void writeDramAndHostJson(JsonWriter& json, const MultichipSummary& summary) {
  const multichip::SystemConfig& system = summary.model->system;
  const MultichipFigures& figures = summary.figures;
  const bool shared = system.dram == multichip::DramKind::Shared;
  json.key("dram").beginObject();
  json.key("kind").value(shared ? "shared" : "per_chip");
  if (shared) {
    json.key("bandwidth_gb_per_s").value(system.sharedDramGBps);
    json.key("contention_modelled").value(summary.coSimulated);
    json.key("busy_us").value(figures.sharedDramBusyNs / 1e3);
    json.key("utilization").value(figures.sharedDramUtilization);
    json.key("bytes").value(figures.sharedDramBytes);
  }
  json.endObject();
  json.key("host").beginObject();
  json.key("timed").value(system.hostTimed);
  json.key("macs_per_s").value(system.host.macsPerSecond);
  json.key("gbps").value(system.host.memoryGbps);
  json.key("link_gb_per_s").value(system.host.linkGbps);
  json.key("link_latency_us").value(system.host.linkLatencyUs);
  json.endObject();
  json.key("warnings").beginArray();
  for (const std::string& warning : warningsOf(summary)) json.value(warning);
  json.endArray();
}

}  // namespace

void writeMultichipJson(JsonWriter& json, const MultichipSummary& summary) {
  const multichip::MultichipModel& model = *summary.model;
  const multichip::MultichipRun& run = *summary.run;
  const multichip::SystemConfig& system = model.system;
  const MultichipFigures& figures = summary.figures;
  const double images = double(summary.imagesPerMicroBatch);
  json.key("backend").value("npu");
  json.key("system").value(system.name);
  json.key("system_path").value(system.path);
  json.key("split").value(multichip::splitModeName(model.split));
  json.key("num_chips").value(uint64_t(system.chips.size()));
  json.key("micro_batches").value(uint64_t(run.stageCycles.size()));
  json.key("images_per_micro_batch").value(summary.imagesPerMicroBatch);
  json.key("co_simulated").value(summary.coSimulated);
  json.key("latency_us").value(figures.latencyNs / 1e3);
  json.key("makespan_us").value(figures.makespanNs / 1e3);
  json.key("throughput_images_per_s").value(figures.throughputPerSecond * images);
  json.key("steady_throughput_images_per_s").value(figures.steadyThroughputPerSecond * images);
  json.key("simulation_host_seconds").value(run.hostSeconds);
  json.key("host_seconds").value(summary.hostSeconds);
  json.key("co_simulation_host_seconds").value(summary.coSimulationHostSeconds);
  if (summary.scheduleEstimate) writeScheduleEstimate(json, *summary.scheduleEstimate, figures, images);
  writeStagesJson(json, model, run);
  writeChipsAndLinksJson(json, system, figures);
  writeDramAndHostJson(json, summary);
  json.key("bandwidth_sweep").beginArray();
  for (const BandwidthPoint& point : summary.sweep) {
    json.beginObject();
    json.key("bandwidth_gb_per_s").value(point.bandwidthGBps);
    json.key("latency_us").value(point.figures.latencyNs / 1e3);
    json.key("throughput_images_per_s").value(point.figures.throughputPerSecond * images);
    json.key("steady_throughput_images_per_s").value(point.figures.steadyThroughputPerSecond * images);
    json.key("busiest_link_utilization").value(busiestLink(point.figures));
    json.key("bound_by").value(boundBy(point.figures));
    json.endObject();
  }
  json.endArray();
}

}  // namespace ember::cli
