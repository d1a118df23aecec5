// Runs the built `ember` tool from a test, for the NPU subcommands (sim, asm,
// disasm) that live in sdk/tools/ember. EMBER_TOOL_PATH names the binary.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../common/RunTool.h"

#ifndef EMBER_TOOL_PATH
#error "EMBER_TOOL_PATH must name the built ember tool"
#endif

namespace ember::npu::test {

/// `ember COMMAND ARGS...` with its output discarded; returns its exit
/// status, or -1 when it could not be started or did not exit.
inline int runEmber(const std::string& command, const std::vector<std::string>& args) {
  std::vector<std::string> words{command};
  words.insert(words.end(), args.begin(), args.end());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ember_npu_tool_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return ember::test::runTool(EMBER_TOOL_PATH, words, dir).status;
}

}  // namespace ember::npu::test
