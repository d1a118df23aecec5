#include "ProcessPool.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace ember::codesign {
namespace {

std::atomic<int> gInterrupt{0};

void onInterrupt(int signal) { gInterrupt = signal; }

/// Installs the interrupt handlers for the pool's lifetime, restoring the old ones.
class InterruptGuard {
 public:
  InterruptGuard() {
    gInterrupt = 0;
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt_);
    sigaction(SIGTERM, &action, &oldTerm_);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &oldInt_, nullptr);
    sigaction(SIGTERM, &oldTerm_, nullptr);
  }

 private:
  struct sigaction oldInt_ {
  }, oldTerm_{};
};

using Clock = std::chrono::steady_clock;

struct Running {
  size_t job;
  pid_t pid;
  Clock::time_point start;
  bool timedOut = false;
};

ChildOutcome spawnFailure(const std::string& message) {
  ChildOutcome outcome;
  outcome.spawnFailed = true;
  outcome.spawnError = message;
  return outcome;
}

/// Starts a child in its own process group with stdin from /dev/null and
/// stdout/stderr into the log.
Expected<pid_t> spawn(const ChildJob& job) {
  if (job.argv.empty()) return makeError("empty command line");
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, job.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_setpgroup(&attributes, 0);
  // The children must not inherit the pool's interrupt handlers' ignored state.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  argv.reserve(job.argv.size() + 1);
  for (const std::string& word : job.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int status = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (status != 0) return makeError(job.argv[0], ": cannot start: ", std::strerror(status));
  return pid;
}

}  // namespace

std::string ChildOutcome::describe() const {
  if (spawnFailed) return spawnError;
  if (timedOut) return "timed out after " + std::to_string(std::lround(seconds)) + " s";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit status " + std::to_string(exitCode);
}

namespace {
std::string& executableOverride() {
  static std::string path;
  return path;
}
}  // namespace

void setSelfExecutable(const std::string& path) { executableOverride() = path; }

std::string selfExecutable() {
  if (!executableOverride().empty()) return executableOverride();
  std::error_code ec;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : path.string();
}

Error runProcessPool(const std::vector<ChildJob>& jobs, size_t concurrency, const PoolCallbacks& callbacks) {
  InterruptGuard guard;
  concurrency = std::max<size_t>(concurrency, 1);
  std::vector<Running> running;
  size_t next = 0;
  auto lastTick = Clock::now();
  while (next < jobs.size() || !running.empty()) {
    while (!gInterrupt && next < jobs.size() && running.size() < concurrency) {
      size_t job = next++;
      Expected<pid_t> pid = spawn(jobs[job]);
      if (callbacks.started) callbacks.started(job);
      if (!pid) {
        if (callbacks.finished) callbacks.finished(job, spawnFailure(pid.error().message()));
        continue;
      }
      running.push_back({job, *pid, Clock::now()});
    }
    if (gInterrupt) {
      for (Running& r : running) {
        kill(-r.pid, SIGKILL);
        waitpid(r.pid, nullptr, 0);
      }
      return makeError("interrupted by signal ", int(gInterrupt), "; ", running.size(),
                       " running point(s) stopped, ", jobs.size() - next, " not started");
    }
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      int status = 0;
      pid_t done = waitpid(r.pid, &status, WNOHANG);
      double seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (done == 0) {
        double timeout = jobs[r.job].timeoutSeconds;
        if (timeout > 0 && seconds > timeout && !r.timedOut) {
          kill(-r.pid, SIGKILL);  // the whole group: the child and what it started
          r.timedOut = true;
        }
        ++i;
        continue;
      }
      ChildOutcome outcome;
      outcome.seconds = seconds;
      outcome.timedOut = r.timedOut;
      if (done < 0) {
        outcome.spawnFailed = true;
        outcome.spawnError = std::string("waitpid failed: ") + std::strerror(errno);
      } else if (WIFEXITED(status)) {
        outcome.exitCode = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        outcome.signal = WTERMSIG(status);
      }
      size_t job = r.job;
      running.erase(running.begin() + std::ptrdiff_t(i));
      reaped = true;
      if (callbacks.finished) callbacks.finished(job, outcome);
    }
    if (callbacks.tick &&
        std::chrono::duration<double>(Clock::now() - lastTick).count() >= callbacks.tickSeconds) {
      callbacks.tick();
      lastTick = Clock::now();
    }
    if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Error::success();
}

}  // namespace ember::codesign
