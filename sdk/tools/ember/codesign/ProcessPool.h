// A local process pool: runs command lines as child processes, at most N at a
// time, each with its stdout and stderr in a log file and a timeout. Each child
// gets its own process group so that a timeout or an interrupt also ends the
// processes it started.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/Error.h"

namespace ember::codesign {

struct ChildJob {
  std::vector<std::string> argv;  ///< argv[0] is the executable's path
  std::string logPath;            ///< receives stdout and stderr (truncated first)
  double timeoutSeconds = 0;      ///< 0: none
};

struct ChildOutcome {
  int exitCode = -1;  ///< valid when signal == 0 and !timedOut
  int signal = 0;     ///< the signal that ended the child, if any
  bool timedOut = false;
  bool spawnFailed = false;
  std::string spawnError;
  double seconds = 0;

  bool ok() const { return !spawnFailed && !timedOut && signal == 0 && exitCode == 0; }
  /// "exit status 1", "killed by signal 11 (Segmentation fault)", "timed out after 10 s".
  std::string describe() const;
};

struct PoolCallbacks {
  std::function<void(size_t job)> started;
  std::function<void(size_t job, const ChildOutcome&)> finished;
  /// Called about every `tickSeconds` while children run (progress display).
  std::function<void()> tick;
  double tickSeconds = 0.5;
};

/// Runs every job, `concurrency` at a time, in order of the vector. Returns
/// an error only when interrupted (SIGINT/SIGTERM): running children are then
/// killed and the remaining jobs are not started.
Error runProcessPool(const std::vector<ChildJob>& jobs, size_t concurrency, const PoolCallbacks& callbacks);

/// The path of the running executable (/proc/self/exe), or the `ember` tool
/// set by setSelfExecutable (a library host such as the Python binding,
/// whose own executable is not the tool).
std::string selfExecutable();
void setSelfExecutable(const std::string& path);

}  // namespace ember::codesign
