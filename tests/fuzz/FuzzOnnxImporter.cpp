// Fuzz target: the ONNX importer. Any bytes give a verified graph whose names
// are UTF-8 (they reach YAML and JSON files), or an Error naming the file.
// The limits are small so that import-time folding stays fast; they are the
// same checks as the defaults, at a lower threshold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "FuzzCheck.h"
#include "ember/Graph.h"
#include "ember/Importer.h"
#include "ember/TextEscape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.onnx";
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ImportOptions options;
  options.maxElements = int64_t(1) << 20;
  options.maxTensorBytes = int64_t(8) << 20;
  options.maxConstantBytes = int64_t(32) << 20;
  options.dimValues = {{"N", 1}, {"batch", 1}, {"seq", 4}};
  Module module;
  Expected<Function*> function = importOnnxBytes(bytes, origin, module, options);
  if (!function) {
    fuzz::checkNamesOrigin(function.error().message(), origin);
    return 0;
  }
  Error verified = (*function)->verify();
  EMBER_FUZZ_CHECK(!verified, verified.message());
  for (const Node* node : (*function)->nodes())
    EMBER_FUZZ_CHECK(invalidUtf8Offset(node->name()) == std::string::npos, "a node name is not UTF-8");
  for (const auto& [name, value] : (*function)->outputs())
    EMBER_FUZZ_CHECK(invalidUtf8Offset(name) == std::string::npos, "an output name is not UTF-8");
  return 0;
}
