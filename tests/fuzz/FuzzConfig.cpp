// Fuzz target: the NPU's YAML config loader. An accepted config must satisfy
// the cross-key invariants that the simulator relies on.
#include <cstddef>
#include <cstdint>
#include <string>

#include "FuzzCheck.h"
#include "ember/npu/Config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.yaml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  Expected<npu::NpuConfig> config = npu::parseConfig(text, origin);
  if (!config) {
    fuzz::checkNamesOrigin(config.error().message(), origin);
    return 0;
  }
  EMBER_FUZZ_CHECK(config->rows > 0 && config->cols > 0, "empty matrix engine");
  EMBER_FUZZ_CHECK(config->scratchpadBanks > 0 && config->scratchpadBytes % config->scratchpadBanks == 0,
                   "banks do not divide the scratchpad");
  EMBER_FUZZ_CHECK(config->accumulatorEntries() > 0 && config->dramBytes > 0, "empty memory");
  EMBER_FUZZ_CHECK(config->clockGhz > 0, "non-positive clock");
  (void)config->hash();
  return 0;
}
