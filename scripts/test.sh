#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the whole
# suite through ctest, then (unless EMBER_ASAN_SUBSET=0) the AddressSanitizer +
# UBSan subset of scripts/asan-subset.sh and (unless EMBER_TSAN_SUBSET=0) the
# ThreadSanitizer subset of scripts/tsan-subset.sh. Usage: scripts/test.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/install-deps.sh
scripts/build.sh "$preset"
ctest --preset "$preset" --timeout 1500 -j 2
if [ "${EMBER_ASAN_SUBSET:-1}" = 1 ] && [ "$preset" != asan ]; then
  scripts/asan-subset.sh
fi
if [ "${EMBER_TSAN_SUBSET:-1}" = 1 ] && [ "$preset" != tsan ]; then
  scripts/tsan-subset.sh  # the thread pools under ThreadSanitizer
fi
