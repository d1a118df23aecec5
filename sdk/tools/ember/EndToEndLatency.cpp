#include "EndToEndLatency.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/HostModel.h"
#include "ember/JsonWriter.h"

namespace ember::cli {

void HostLinkOptions::addTo(OptionParser& parser) {
  parser.addNonNegativeNumber(
      "--host-link-gbps", "GB/s", &gbps,
      "accelerator runs: host-link bandwidth of the end-to-end latency (default: 12)");
  parser.addNonNegativeNumber("--host-link-us", "US", &latencyUs,
                              "accelerator runs: set-up time of each host-link transfer (default: 2)");
}

double HostLinkOptions::bytesPerSecond() const { return gbps.value_or(kDefaultHostLinkGbps) * 1e9; }
double HostLinkOptions::perTransferUs() const { return latencyUs.value_or(kDefaultHostLinkUs); }

void HostModelOptions::addTo(OptionParser& parser) {
  parser.addFlag("--host-model", &enabled,
                 "accelerator runs: model the host partitions' time from --host-macs-per-s and --host-gbps "
                 "instead of measuring it");
  parser.addNonNegativeNumber("--host-macs-per-s", "N", &macsPerSecond,
                              "--host-model: host multiply-accumulates per second (default: 50e9)");
  parser.addNonNegativeNumber("--host-gbps", "GB/s", &gbps,
                              "--host-model: host memory bandwidth (default: 20)");
}

double modelledHostSeconds(const CompiledModel& model, const std::string& targetBackend,
                           const HostModelOptions& host) {
  return ember::modelledHostSeconds(model, targetBackend,
                                    host.macsPerSecond.value_or(kDefaultHostMacsPerSecond),
                                    host.gbps.value_or(kDefaultHostGbps) * 1e9);
}

EndToEndLatency modelledEndToEndLatency(const DeviceReport& device, const RunStatistics* stats,
                                        double modelledHostSeconds, const HostLinkOptions& link) {
  EndToEndLatency latency = endToEndLatency(device, stats, modelledHostSeconds, link);
  latency.hostModelled = latency.partitions > 1;
  return latency;
}

EndToEndLatency endToEndLatency(const DeviceReport& device, const RunStatistics* stats,
                                double hostSecondsMedian, const HostLinkOptions& link) {
  EndToEndLatency latency;
  if (!device.device.empty()) latency.device = device.device;
  latency.deviceUs = device.deviceSeconds * 1e6;
  if (!stats || stats->partitions <= 1) return latency;
  latency.partitions = stats->partitions;
  latency.hostPartitionsUs = std::max(0.0, hostSecondsMedian) * 1e6;
  latency.transfers = stats->hostTransfers;
  latency.transferBytes = stats->hostTransferBytes;
  latency.transfersUs = hostLinkMicroseconds(latency.transfers, latency.transferBytes, link.bytesPerSecond(),
                                             link.perTransferUs());
  return latency;
}

namespace {
std::string microseconds(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}
}  // namespace

void printEndToEndLatency(std::ostream& os, const EndToEndLatency& latency) {
  if (latency.partitions <= 1) return;
  os << "\nend-to-end:   " << microseconds(latency.totalUs()) << " = " << latency.device << " "
     << microseconds(latency.deviceUs) << " + host partitions " << microseconds(latency.hostPartitionsUs)
     << " + transfers " << microseconds(latency.transfersUs) << "\n";
  os << "  [host partitions]  " << microseconds(latency.hostPartitionsUs)
     << (latency.hostModelled ? "  modelled (--host-model)\n"
                              : "  measured: run wall time - simulator wall time (median)\n");
  os << "  [transfers]        " << microseconds(latency.transfersUs) << "  " << latency.transfers << " x, "
     << latency.transferBytes << " B over the host link\n";
}

void writeEndToEndLatency(JsonWriter& json, const EndToEndLatency& latency) {
  json.key("end_to_end_latency_us").value(latency.totalUs());
  json.key("host_partitions_us").value(latency.hostPartitionsUs);
  json.key("host_partitions_modelled").value(latency.hostModelled);
  json.key("transfers_us").value(latency.transfersUs);
  json.key("transfer_bytes").value(latency.transferBytes);
  json.key("host_transfers").value(latency.transfers);
}

Error appendEndToEndTrace(const std::string& path, const EndToEndLatency& latency) {
  if (latency.partitions <= 1) return Error::success();
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot read the trace back");
  std::stringstream text;
  text << in.rdbuf();
  std::string trace = text.str();
  const size_t close = trace.rfind(']');
  if (close == std::string::npos) return makeError(path, ": not a trace-event array");
  auto span = [](const std::string& name, int tid, double ts, double dur, const std::string& args) {
    return "{\"name\": \"" + name + "\", \"ph\": \"X\", \"pid\": 1, \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + ", \"args\": {" + args +
           "}}";
  };
  std::string events =
      ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"Host (summed "
      "time, placed after the NPU)\"}},\n"
      "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"host "
      "partitions\"}},\n"
      "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"host "
      "link transfers\"}},\n" +
      span(latency.hostModelled ? "host partitions (modelled)" : "host partitions (measured)", 0,
           latency.deviceUs, latency.hostPartitionsUs, "") +
      ",\n" +
      span("transfers", 1, latency.deviceUs + latency.hostPartitionsUs, latency.transfersUs,
           "\"count\": " + std::to_string(latency.transfers) +
               ", \"bytes\": " + std::to_string(latency.transferBytes)) +
      "\n";
  std::string body = trace.substr(0, close);
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << body << events << trace.substr(close);
  if (!out) return makeError(path, ": cannot write the trace");
  return Error::success();
}

}  // namespace ember::cli
