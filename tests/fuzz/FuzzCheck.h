// Shared helpers of the fuzz targets (docs/testing.md, "Fuzzing"). A target
// returns normally for any input that is handled correctly: accepted, or
// refused with an Error that names its origin. Anything else aborts, which
// libFuzzer and the replay test both report as a failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ember/TextEscape.h"

namespace ember::fuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz check failed: %s: %s\n", what, detail.c_str());
  std::abort();
}

/// Every error message must name the file it concerns, be one line and be
/// UTF-8 (a name quoted from the input shows its other bytes as \xNN).
inline void checkNamesOrigin(const std::string& message, const std::string& origin) {
  if (message.rfind(origin, 0) != 0) fail("the error message does not start with the file name", message);
  if (message.find('\n') != std::string::npos) fail("the error message is not one line", message);
  if (invalidUtf8Offset(message) != std::string::npos) fail("the error message is not UTF-8", message);
}

}  // namespace ember::fuzz

#define EMBER_FUZZ_CHECK(cond, detail)                 \
  do {                                                 \
    if (!(cond)) ::ember::fuzz::fail(#cond, (detail)); \
  } while (0)
