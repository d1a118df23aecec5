// Fuzz target: the NPU bundle loader. An accepted bundle must serialise back to
// the same bytes, and disassemble to text that assembles to the same bundle.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "FuzzCheck.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.bundle";
  const std::vector<uint8_t> bytes(data, data + size);
  Expected<npu::Bundle> bundle = npu::parseBundle(bytes, origin);
  if (!bundle) {
    fuzz::checkNamesOrigin(bundle.error().message(), origin);
    return 0;
  }
  EMBER_FUZZ_CHECK(npu::serializeBundle(*bundle) == bytes, "serialising a loaded bundle changed its bytes");
  Expected<std::string> text = npu::disassemble(*bundle);
  EMBER_FUZZ_CHECK(text.hasValue(), text.error().message());
  // No base directory: .incbin is refused, so the text must be self-contained.
  Expected<npu::Bundle> again = npu::assemble(*text, "disassembly.s", "");
  EMBER_FUZZ_CHECK(again.hasValue(), again.error().message() + "\n" + *text);
  EMBER_FUZZ_CHECK(npu::serializeBundle(*again) == bytes,
                   "disassemble + assemble changed the bundle\n" + *text);
  return 0;
}
