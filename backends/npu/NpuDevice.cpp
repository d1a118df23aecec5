// The npu backend's run path: the compiled bundle runs in-process on the
// SystemC simulator. The only file of backends/npu that uses the simulator.
#include "NpuDevice.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "ember/npu/Simulator.h"

namespace ember::npu_backend {
namespace {

class NpuFunction final : public CompiledFunction {
 public:
  NpuFunction(CompiledProgram program, npu::NpuConfig config)
      : bundle_(std::move(program.bundle)),
        config_(std::move(config)),
        outputDims_(std::move(program.outputDims)) {
    report_.layers = std::move(program.layers);
    declareReport(program.sramPeakBytes);
  }

  Error execute(ExecutionContext& context) override {
    npu::DramImage dram = npu::makeDram(bundle_);
    for (const npu::Symbol& s : bundle_.symbols) {
      if (s.direction != npu::Symbol::Direction::Input) continue;
      const Tensor* t = context.input(s.name);
      if (!t) return makeError("npu: missing input '", s.name, "'");
      if (t->type().kind != ElemKind::Int8Q || uint64_t(t->type().numElements()) != uint64_t(s.numElements()))
        return makeError("npu: input '", s.name, "': expected i8q<", dimsStr(s.shape), ">, got ",
                         t->type().str());
      std::memcpy(dram.bytes.data() + s.dramOffset, t->data(), s.sizeInBytes());
    }
    const auto start = std::chrono::steady_clock::now();
    auto stats = npu::simulate(bundle_, config_, dram);
    if (!stats) return stats.error().withContext("npu: simulating the bundle");
    const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const npu::Symbol& s : bundle_.symbols) {
      if (s.direction != npu::Symbol::Direction::Output) continue;
      auto dims = outputDims_.find(s.name);
      Tensor out(Type(ElemKind::Int8Q, dims != outputDims_.end() ? dims->second : Dims(s.shape), s.scale,
                      s.zeroPoint));
      std::memcpy(out.data(), dram.bytes.data() + s.dramOffset, s.sizeInBytes());
      context.setOutput(s.name, std::move(out));
    }
    updateReport(*stats, host);
    lastStats_ = stats.take();
    return Error::success();
  }

  const DeviceReport* deviceReport() const override { return &report_; }

  Error writeArtifact(const std::string& path) const override { return npu::writeBundle(path, bundle_); }

  Error writeTrace(const std::string& path) const override {
    if (!lastStats_) return makeError("npu: no run to trace yet (execute the function first)");
    std::ofstream out(path, std::ios::binary);
    out << npu::traceToJson(*lastStats_, bundle_);
    if (!out) return makeError("cannot write trace '", path, "'");
    return Error::success();
  }

 private:
  /// The NPU's counters and columns (the keys of docs/cli.md, "--report-json"),
  /// zero until a run; the compiler fills the shape and tiles of each layer.
  void declareReport(uint64_t compiledSramPeakBytes) {
    report_.device = "npu";
    report_.peakMacsPerCycle = uint64_t(config_.rows * config_.cols);
    report_.setCounter("dram_read_bytes", uint64_t(0), "B");
    report_.setCounter("dram_write_bytes", uint64_t(0), "B");
    report_.setCounter("sram_peak_bytes", compiledSramPeakBytes, "B", /*peak=*/true);
    report_.setCounter("energy_pj", 0.0, "pJ");
    report_.summary = {
        "DRAM:         read {dram_read_bytes} B, written {dram_write_bytes} B; "
        "SRAM peak {sram_peak_bytes} B; energy {energy_pj/1e6} uJ"};
    report_.columns = {
        {kShapeColumn, "shape", "", ReportKind::Text, /*measured=*/false, 0},
        {kTilesColumn, "tiles", "", ReportKind::Text, /*measured=*/false, 0},
        {"mac_utilization", "util", "", ReportKind::Fraction, /*measured=*/true, 7},
        {"dram_bytes", "DRAM B", "B", ReportKind::Count, /*measured=*/true, 11},
        {"stall_cycles", "stall (max)", "cycles", ReportKind::Breakdown, /*measured=*/true, 22},
    };
    for (LayerReport& layer : report_.layers) clearMeasured(layer);
  }

  /// A layer's measured fields and columns, zero (before a run, or when the
  /// run's statistics have no layer of its name).
  static void clearMeasured(LayerReport& layer) {
    layer.cycles = layer.macs = 0;
    layer.values["mac_utilization"] = 0.0;
    layer.values["dram_bytes"] = uint64_t(0);
    layer.values["stall_cycles"] = std::map<std::string, uint64_t>();
  }

  void updateReport(const npu::SimStats& s, double hostSeconds) {
    report_.measured = true;
    report_.cycles = s.cycles;
    report_.macs = s.macs;
    report_.setCounter("dram_read_bytes", s.dramReadBytes);
    report_.setCounter("dram_write_bytes", s.dramWriteBytes);
    const ReportCounter* sramPeak = report_.counter("sram_peak_bytes");
    report_.setCounter("sram_peak_bytes",
                       std::max(std::get<uint64_t>(sramPeak->value), s.scratchpadPeakBytes));
    report_.setCounter("energy_pj", s.energyPj);
    report_.deviceSeconds = double(s.cycles) / (s.clockGhz * 1e9);
    report_.hostSeconds = hostSeconds;
    for (LayerReport& layer : report_.layers) {
      clearMeasured(layer);
      for (const npu::LayerStats& ls : s.layers) {
        if (ls.name != layer.name) continue;
        layer.cycles = ls.cycles;
        layer.macs = ls.macs;
        layer.values["mac_utilization"] = ls.macUtilization;
        layer.values["dram_bytes"] = ls.dramBytes;
        auto& stalls = std::get<std::map<std::string, uint64_t>>(layer.values["stall_cycles"]);
        for (size_t r = 0; r < npu::kNumStallReasons; ++r)
          if (ls.stallCycles[r])
            stalls[std::string(npu::stallReasonName(npu::StallReason(r)))] = ls.stallCycles[r];
      }
    }
  }

  npu::Bundle bundle_;
  npu::NpuConfig config_;
  std::map<std::string, Dims> outputDims_;
  DeviceReport report_;
  std::optional<npu::SimStats> lastStats_;
};

/// Loads and runs like the host device; what it adds is the NPU's DRAM as
/// the memory limit. runAsync stays the default (synchronous): the simulator
/// reads per-thread state of the caller (its cancellation check,
/// npu::ScopedCancellation), so a run must stay on the caller's thread.
class NpuDevice final : public Device {
 public:
  explicit NpuDevice(uint64_t dramBytes) : dramBytes_(dramBytes) {}
  uint64_t memoryLimitBytes() const override { return dramBytes_; }

 private:
  uint64_t dramBytes_;
};

}  // namespace

std::unique_ptr<Device> makeNpuDevice(const npu::NpuConfig& config) {
  return std::make_unique<NpuDevice>(uint64_t(config.dramBytes));
}

std::unique_ptr<CompiledFunction> makeSimulatedFunction(CompiledProgram program, npu::NpuConfig config) {
  return std::make_unique<NpuFunction>(std::move(program), std::move(config));
}

}  // namespace ember::npu_backend
