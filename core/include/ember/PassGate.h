// Which optional passes run: names switched off, and an opt-bisect limit on
// how many optional pass executions run at all (as LLVM's -opt-bisect-limit).
// Shared by the graph pass manager and the IR optimizer, so one count spans
// the whole pipeline.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace ember {

class PassGate {
 public:
  PassGate() = default;
  /// `limit` < 0: no limit.
  PassGate(std::set<std::string> disabled, int64_t limit) : disabled_(std::move(disabled)), limit_(limit) {}

  /// Whether the optional pass `name` runs now. A pass that runs is counted
  /// and recorded in ran().
  bool shouldRun(const std::string& name) {
    if (disabled_.count(name)) return false;
    if (limit_ >= 0 && int64_t(ran_.size()) >= limit_) return false;
    ran_.push_back(name);
    return true;
  }

  /// The optional pass executions that ran, in order.
  const std::vector<std::string>& ran() const { return ran_; }

 private:
  std::set<std::string> disabled_;
  int64_t limit_ = -1;
  std::vector<std::string> ran_;
};

}  // namespace ember
