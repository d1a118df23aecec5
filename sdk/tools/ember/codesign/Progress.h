// The sweep's progress display on stderr: one line redrawn with '\r' on a
// terminal, plain periodic lines otherwise (logs, CI). The ETA is the mean
// time of the finished points times the points left, divided by the
// concurrency.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace ember::codesign {

class Progress {
 public:
  Progress(std::ostream& out, bool terminal, size_t total, size_t skipped, size_t concurrency);

  void started() { ++running_; }
  void finished(bool ok, double seconds);
  /// Redraws on a terminal; prints a line every `periodSeconds` otherwise.
  void tick();
  /// The last line (always printed, ends with a newline).
  void done();

  /// "[#####.....] 12/48  1 failed  2 running  elapsed 1m02s  ETA 3m10s".
  std::string line() const;

 private:
  void print(bool force);

  std::ostream& out_;
  bool terminal_;
  size_t total_, skipped_, concurrency_;
  size_t finished_ = 0, failed_ = 0, running_ = 0;
  double pointSeconds_ = 0;
  std::chrono::steady_clock::time_point start_, lastPrint_;
  double periodSeconds_ = 10;
};

/// "1h02m", "3m10s", "12s".
std::string formatDuration(double seconds);

}  // namespace ember::codesign
