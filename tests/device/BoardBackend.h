// "board": a test accelerator with a Device of its own (tests/device). Its
// device refuses any function it did not compile, may have a memory limit,
// may keep tensors between partitions (DeviceTensor), may share one device
// between two backend names, and may run asynchronously with the work
// deferred to wait(), so a test sees the order in which the runtime starts
// and finishes partitions. Counters and an event log make all of it visible.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/Backend.h"

namespace board {

struct BoardConfig {
  std::set<ember::OpKind> ops;  ///< what supports() accepts (f32 only)
  std::string deviceName;       ///< Device::name(): backends with the same name share a device
  uint64_t memoryBytes = 0;     ///< Device::memoryLimitBytes()
  bool keepsTensors = false;    ///< Device::keepsTensors()
  bool deferred = false;        ///< runAsync returns at once; the run happens in wait()
};

/// What the boards' devices did (all boards of the process).
struct BoardCounters {
  uint64_t runs = 0;
  uint64_t hostInputs = 0;          ///< inputs given as host tensors
  uint64_t deviceInputs = 0;        ///< inputs given as a board's DeviceTensor
  uint64_t hostOutputs = 0;         ///< outputs written as host tensors
  uint64_t deviceOutputs = 0;       ///< outputs kept on the board
  uint64_t toHost = 0;              ///< DeviceTensor::toHost() calls
  std::vector<std::string> events;  ///< "launch ID", "run ID" in order
};
BoardCounters& counters();

/// The configuration a backend named `name` starts with (setOption changes
/// one instance's).
BoardConfig& defaultConfig(const std::string& name);

std::unique_ptr<ember::Backend> createBoardBackend(const std::string& name);

}  // namespace board
