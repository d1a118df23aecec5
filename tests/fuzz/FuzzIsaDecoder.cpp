// Fuzz target: the ISA decoder. Every 32-byte instruction that decodes must
// encode back to the same bytes, and its text form must assemble to them too.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "FuzzCheck.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Isa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::npu;
  for (size_t at = 0; at + isa::kInstructionBytes <= size; at += isa::kInstructionBytes) {
    isa::EncodedInstruction bytes;
    std::memcpy(bytes.data(), data + at, bytes.size());
    auto instr = isa::decode(bytes);
    if (!instr) continue;
    auto encoded = isa::encode(*instr);
    EMBER_FUZZ_CHECK(encoded.hasValue(), encoded.error().message());
    EMBER_FUZZ_CHECK(*encoded == bytes, "decode + encode changed an instruction");
    // The text form has no layer tag; compare without it.
    isa::Instruction untagged = *instr;
    untagged.layer = 0;
    const std::string text = formatInstruction(untagged);
    auto assembled = assemble(text + "\nfinish\n", "instruction.s", "");
    EMBER_FUZZ_CHECK(assembled.hasValue(), assembled.error().message() + ": " + text);
    EMBER_FUZZ_CHECK(assembled->program.size() == 2 && assembled->program[0] == *isa::encode(untagged),
                     "assembling the disassembly changed the instruction: " + text);
  }
  return 0;
}
