// Fuzz target: the quantization profile reader (`ember run --quantize`,
// docs/quantization.md). An error names the profile and is one line; an
// accepted profile written back with toYaml() reads back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "FuzzCheck.h"
#include "ember/Quantization.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.profile.yaml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  Expected<QuantizationProfile> profile = QuantizationProfile::parse(text, origin);
  if (!profile) {
    fuzz::checkNamesOrigin(profile.error().message(), origin);
    return 0;
  }
  const std::string written = profile->toYaml();
  Expected<QuantizationProfile> again = QuantizationProfile::parse(written, "written.yaml");
  EMBER_FUZZ_CHECK(again.hasValue(), again.error().message());
  EMBER_FUZZ_CHECK(again->toYaml() == written, "the profile changed in a write/read round trip");
  EMBER_FUZZ_CHECK(again->tensors.size() == profile->tensors.size(), "tensors were lost");
  return 0;
}
