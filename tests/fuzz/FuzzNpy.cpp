// Fuzz target: the .npy reader. An accepted array must survive a write/read
// round trip bit for bit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "FuzzCheck.h"
#include "ember/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.npy";
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Expected<Tensor> tensor = parseNpy(bytes, origin);
  if (!tensor) {
    fuzz::checkNamesOrigin(tensor.error().message(), origin);
    return 0;
  }
  Expected<Tensor> again = parseNpy(serializeNpy(*tensor), "round-trip.npy");
  EMBER_FUZZ_CHECK(again.hasValue(), again.error().message());
  EMBER_FUZZ_CHECK(again->bitwiseEqual(*tensor), "the round trip changed the array " + tensor->type().str());
  return 0;
}
