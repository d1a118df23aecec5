// The `ember sim`, `ember asm` and `ember disasm` subcommands. The ember tool
// (and the standalone ember-npu) call these; `args` excludes the program name
// and the subcommand. Each handles --help, prints one-line errors
// ("ember sim: ...") on stderr and returns 0 (success), 1 (failure) or 2
// (usage error).
#pragma once

#include <string>
#include <vector>

namespace ember::npu {

int runSimCommand(const std::vector<std::string>& args);
int runAsmCommand(const std::vector<std::string>& args);
int runDisasmCommand(const std::vector<std::string>& args);

}  // namespace ember::npu
