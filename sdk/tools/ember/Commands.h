// The `ember` subcommands. Each takes the words after its name and returns
// the process exit status (0 success, 1 failure, 2 usage; see Options.h).
#pragma once

#include <string>
#include <vector>

namespace ember::cli {

int runCommand(const std::vector<std::string>& args);
int compileCommand(const std::vector<std::string>& args);
int dumpCommand(const std::vector<std::string>& args);
int backendsCommand(const std::vector<std::string>& args);
int conformanceCommand(const std::vector<std::string>& args);
int newBackendCommand(const std::vector<std::string>& args);
int quantizeCommand(const std::vector<std::string>& args);
int sweepCommand(const std::vector<std::string>& args);
int reportCommand(const std::vector<std::string>& args);
// The NPU's: the simulator, the assembler and the disassembler.
int simCommand(const std::vector<std::string>& args);
int asmCommand(const std::vector<std::string>& args);
int disasmCommand(const std::vector<std::string>& args);
int compareCommand(const std::vector<std::string>& args);
int npyDiffCommand(const std::vector<std::string>& args);
// A model split over several NPUs (docs/multichip.md).
int multichipCommand(const std::vector<std::string>& args);

}  // namespace ember::cli
