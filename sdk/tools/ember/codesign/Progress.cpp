#include "Progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember::codesign {

std::string formatDuration(double seconds) {
  long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

Progress::Progress(std::ostream& out, bool terminal, size_t total, size_t skipped, size_t concurrency)
    : out_(out),
      terminal_(terminal),
      total_(total),
      skipped_(skipped),
      concurrency_(std::max<size_t>(concurrency, 1)),
      start_(std::chrono::steady_clock::now()),
      lastPrint_(start_) {}

void Progress::finished(bool ok, double seconds) {
  if (running_) --running_;
  ++finished_;
  if (!ok) ++failed_;
  pointSeconds_ += seconds;
  print(false);
}

void Progress::tick() { print(false); }

void Progress::done() {
  print(true);
  if (terminal_) out_ << "\n";
  out_.flush();
}

std::string Progress::line() const {
  size_t complete = skipped_ + finished_;
  constexpr size_t kWidth = 24;
  size_t filled = total_ ? complete * kWidth / total_ : kWidth;
  std::string bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "]";
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string text = bar + " " + std::to_string(complete) + "/" + std::to_string(total_);
  if (skipped_) text += "  " + std::to_string(skipped_) + " resumed";
  if (failed_) text += "  " + std::to_string(failed_) + " failed";
  text += "  " + std::to_string(running_) + " running  elapsed " + formatDuration(elapsed);
  size_t left = total_ - complete;
  if (left == 0)
    text += "  done";
  else if (finished_ > 0)
    text +=
        "  ETA " + formatDuration(pointSeconds_ / double(finished_) * double(left) / double(concurrency_));
  else
    text += "  ETA ?";
  return text;
}

void Progress::print(bool force) {
  auto now = std::chrono::steady_clock::now();
  double sinceLast = std::chrono::duration<double>(now - lastPrint_).count();
  if (terminal_) {
    // Pad so that a shorter line erases the longer one before it.
    std::string text = line();
    out_ << "\r" << text << std::string(text.size() < 100 ? 100 - text.size() : 0, ' ') << "\r" << text;
    out_.flush();
    lastPrint_ = now;
    return;
  }
  if (!force && sinceLast < periodSeconds_) return;
  out_ << "ember sweep: " << line() << "\n";
  out_.flush();
  lastPrint_ = now;
}

}  // namespace ember::codesign
