// Runs a built tool from a test as a user would: no standard input, standard
// output and error captured. Shared by the test suites that drive `ember`.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace ember::test {

struct ToolRun {
  bool started = false;  ///< false when the tool could not be spawned
  int status = -1;       ///< exit status; -1 when it did not exit normally
  int signal = 0;        ///< the signal that killed it, or 0
  std::string out, err;
};

inline std::string readWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// Runs `tool args...` with stdin from /dev/null; stdout and stderr go to
/// files in `dir` (which must exist) and are returned.
inline ToolRun runTool(const std::string& tool, const std::vector<std::string>& args,
                       const std::filesystem::path& dir) {
  const std::string outPath = (dir / "stdout.txt").string(), errPath = (dir / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> words{tool};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ToolRun run;
  run.started = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ) == 0;
  posix_spawn_file_actions_destroy(&actions);
  if (!run.started) return run;
  int status = 0;
  if (waitpid(pid, &status, 0) == pid) {
    if (WIFEXITED(status)) run.status = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  }
  run.out = readWholeFile(outPath);
  run.err = readWholeFile(errPath);
  return run;
}

}  // namespace ember::test
