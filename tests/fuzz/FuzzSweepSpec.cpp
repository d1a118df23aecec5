// Fuzz target: the sweep spec reader (`ember sweep`, docs/codesign.md). An
// error names the spec and is one line; an accepted spec has models and a
// positive time limit, and a small one expands to as many points as its axes
// and models multiply to, with distinct ids. Inputs naming /dev, /proc or
// /sys are skipped: base_config opens the file it names, by design.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "FuzzCheck.h"
#include "SweepSpec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "/nonexistent-ember-fuzz/spec.yaml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* special : {"/dev", "/proc", "/sys"})
    if (text.find(special) != std::string::npos) return 0;
  Expected<codesign::SweepSpec> spec = codesign::parseSweepSpec(text, origin, {});
  if (!spec) {
    fuzz::checkNamesOrigin(spec.error().message(), origin);
    return 0;
  }
  EMBER_FUZZ_CHECK(!spec->models.empty(), "a spec without models was accepted");
  EMBER_FUZZ_CHECK(spec->timeoutSeconds > 0, "a non-positive time limit was accepted");
  // The product of the axes' sizes and the model count, saturated.
  size_t combinations = spec->models.size();
  for (const codesign::Axis& axis : spec->axes) {
    EMBER_FUZZ_CHECK(!axis.values.empty(), "an axis without values was accepted: " + axis.name);
    combinations = axis.values.size() > (size_t(1) << 40) / combinations ? size_t(1) << 40
                                                                         : combinations * axis.values.size();
  }
  if (combinations > 64 && combinations <= 100000) return 0;  // expanding parses every point's config
  Expected<std::vector<codesign::SweepPoint>> points = codesign::expandSweep(*spec);
  if (!points) {
    fuzz::checkNamesOrigin(points.error().message(), origin);
    return 0;
  }
  EMBER_FUZZ_CHECK(combinations <= 100000, "a sweep over the point limit was expanded");
  EMBER_FUZZ_CHECK(points->size() == combinations,
                   "expanded to " + std::to_string(points->size()) + " points");
  std::set<std::string> ids;
  for (const codesign::SweepPoint& p : *points) ids.insert(p.id);
  EMBER_FUZZ_CHECK(ids.size() == points->size(), "two points share an id");
  return 0;
}
