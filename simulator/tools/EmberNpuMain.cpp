// ember-npu: a standalone driver of the NPU subcommands, for testing the
// simulator without the full `ember` tool (which calls the same functions).
#include <iostream>
#include <string>
#include <vector>

#include "ember/npu/Commands.h"

int main(int argc, char** argv) {
  const std::string kUsage = "usage: ember-npu sim|asm|disasm ARGS... (each subcommand has --help)\n";
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "sim") return ember::npu::runSimCommand(args);
  if (command == "asm") return ember::npu::runAsmCommand(args);
  if (command == "disasm") return ember::npu::runDisasmCommand(args);
  if (command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "ember-npu: unknown subcommand '" << command << "'\n" << kUsage;
  return 2;
}
