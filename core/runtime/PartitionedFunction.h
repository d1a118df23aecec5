// The run side of a partitioned model (docs/backend-guide.md, "Device model"):
// every partition is loaded on its own backend's Device and run through it;
// consecutive partitions on one device hand tensors over on the device, and
// partitions on different devices overlap through Device::runAsync.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Partitioner.h"
#include "ember/Backend.h"
#include "ember/Runtime.h"

namespace ember {

class PartitionedFunction : public CompiledFunction {
 public:
  struct Stage {
    std::shared_ptr<CompiledFunction> function;
    std::vector<std::string> inputs;   ///< names read from earlier stages or the model inputs
    std::vector<std::string> outputs;  ///< names it produces
    size_t device = 0;                 ///< index into the devices
    uint64_t memoryBytes = 0;          ///< planned constants + inputs/outputs + activations
    std::string label;                 ///< "partition 1 (acme, 12 nodes)"
  };
  struct DeviceSlot {
    std::shared_ptr<Device> device;
    std::string label;  ///< "device 'acme0'", or "device of backend 'acme'" when unnamed
  };
  PartitionedFunction(std::vector<Stage> stages, std::vector<DeviceSlot> devices,
                      std::vector<std::string> modelOutputs, std::vector<StorageOutput> storageOutputs = {});
  ~PartitionedFunction() override;

  /// Loads every partition on its device under "ID/pN", refusing a partition
  /// that would take a device above its memoryLimitBytes().
  Error load(const std::string& id);
  /// Runs the partitions loaded under `id`: each one as soon as the tensors
  /// it reads are ready, through Device::runAsync.
  Error run(const std::string& id, ExecutionContext& context);
  Error unload(const std::string& id);

  /// Loads once (under "execute") and runs.
  Error execute(ExecutionContext& context) override;
  const DeviceReport* deviceReport() const override;
  /// Writes each stage's artefact: PATH for the first that has one, PATH.2,
  /// PATH.3... for the next ones. Fails when no stage has an artefact.
  Error writeArtifact(const std::string& path) const override;
  Error writeTrace(const std::string& path) const override;

  const RunStatistics& lastRun() const { return lastRun_; }
  /// Keeps the fallback backends alive as long as their devices and functions.
  void keepBackends(std::vector<std::unique_ptr<Backend>> backends) { backends_ = std::move(backends); }

 private:
  Error writeEach(const std::string& path, Error (CompiledFunction::*write)(const std::string&) const) const;
  std::string stageId(const std::string& id, size_t stage) const;
  Error loadLocked(const std::string& id);

  std::vector<std::unique_ptr<Backend>> backends_;  // destroyed last
  std::vector<Stage> stages_;
  std::vector<DeviceSlot> devices_;
  std::vector<std::string> modelOutputs_;
  std::vector<StorageOutput> storageOutputs_;
  /// The stage that produces each intermediate tensor, and the outputs each
  /// stage is asked to keep on its device (a later stage there reads them).
  std::map<std::string, size_t> producer_;
  std::vector<std::set<std::string>> keepOnDevice_;
  /// Guards the loaded ids and bytes and lastRun_: the function may be run
  /// from several threads, as a compiled function could be before.
  std::mutex mutex_;
  std::vector<uint64_t> loadedBytes_;  ///< per device
  std::set<std::string> loadedIds_;
  RunStatistics lastRun_;
  mutable DeviceReport merged_;
};

}  // namespace ember
