// The NPU's text assembly (docs/npu/isa.md, "Assembly"). disassemble() emits
// text that assemble() turns back into the identical bundle bytes.
#pragma once

#include <string>

#include "ember/Error.h"
#include "ember/npu/Bundle.h"

namespace ember::npu {

/// Assembles a program. `origin` names the source in errors ("gemm.s:12: ...");
/// `.incbin` paths are relative to `baseDir`; an empty `baseDir` refuses
/// `.incbin` (text that does not come from a file, such as a fuzzer's).
Expected<Bundle> assemble(const std::string& text, const std::string& origin,
                          const std::string& baseDir = ".");
Expected<Bundle> assembleFile(const std::string& path);

/// The text of one instruction ("gemm preload=1 m=16 ..."), without layer.
std::string formatInstruction(const isa::Instruction& instr);
/// The whole bundle as assembly. Fails only on an undecodable instruction.
Expected<std::string> disassemble(const Bundle& bundle);

}  // namespace ember::npu
