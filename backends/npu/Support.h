// Whether the NPU takes a node, and if not, why: the one answer behind
// Backend::supports and Backend::unsupportedReason (docs/backend-guide.md).
#pragma once

#include <string>
#include <utility>

#include "ember/Error.h"

namespace ember::npu_backend {

/// `reason` says why a node is refused, with the sizes that decide it; it is
/// empty when taken, or when there is nothing to say beyond "no" (an op or a
/// type the NPU does not implement).
struct Support {
  bool taken = false;
  std::string reason;

  explicit operator bool() const { return taken; }
  static Support yes() { return {true, ""}; }
  static Support no(std::string why = "") { return {false, std::move(why)}; }
  /// Taken when `plan` holds a value, else refused with its error's message.
  template <typename T>
  static Support of(const Expected<T>& plan) {
    return plan ? yes() : no(plan.error().message());
  }
  static Support of(const Error& fits) { return fits ? no(fits.message()) : yes(); }
};

}  // namespace ember::npu_backend
