// Fuzz target: the NPU assembler. What it accepts must load as a bundle and
// survive a disassemble/assemble round trip byte for byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "FuzzCheck.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string origin = "fuzz.s";
  const std::string text(reinterpret_cast<const char*>(data), size);
  // No base directory: .incbin is refused (a fuzzer must not read host files).
  Expected<npu::Bundle> bundle = npu::assemble(text, origin, "");
  if (!bundle) {
    fuzz::checkNamesOrigin(bundle.error().message(), origin);
    return 0;
  }
  const std::vector<uint8_t> bytes = npu::serializeBundle(*bundle);
  Expected<npu::Bundle> loaded = npu::parseBundle(bytes, "assembled.bundle");
  EMBER_FUZZ_CHECK(loaded.hasValue(), loaded.error().message());
  Expected<std::string> disassembly = npu::disassemble(*loaded);
  EMBER_FUZZ_CHECK(disassembly.hasValue(), disassembly.error().message());
  Expected<npu::Bundle> again = npu::assemble(*disassembly, "disassembly.s", "");
  EMBER_FUZZ_CHECK(again.hasValue(), again.error().message() + "\n" + *disassembly);
  EMBER_FUZZ_CHECK(npu::serializeBundle(*again) == bytes,
                   "disassemble + assemble changed the bundle\n" + *disassembly);
  return 0;
}
