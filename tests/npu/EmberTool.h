// Runs the built `ember` tool from a test, for the NPU subcommands (sim, asm,
// disasm) that live in sdk/tools/ember. EMBER_TOOL_PATH names the binary.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#ifndef EMBER_TOOL_PATH
#error "EMBER_TOOL_PATH must name the built ember tool"
#endif

extern char **environ;

namespace ember::npu::test {

/// `ember COMMAND ARGS...` with standard output and error discarded; returns
/// its exit status, or -1 when it could not be started or did not exit.
inline int runEmber(const std::string &command,
                    const std::vector<std::string> &args) {
  std::vector<std::string> words{EMBER_TOOL_PATH, command};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int started =
      posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0)
    return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

} // namespace ember::npu::test
