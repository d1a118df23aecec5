// Which sanitizer a test binary is built with, for the few tests whose
// expectation a sanitizer's runtime changes (address space, rlimits).
#pragma once

// GCC says __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang __has_feature.
#if defined(__has_feature)
#define EMBER_TEST_HAS_FEATURE(feature) __has_feature(feature)
#else
#define EMBER_TEST_HAS_FEATURE(feature) 0
#endif

namespace ember::test {

#if defined(__SANITIZE_ADDRESS__) || EMBER_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__) || EMBER_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace ember::test
