#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the whole
# suite through ctest, then (unless EMBER_ASAN_SUBSET=0) the AddressSanitizer +
# UBSan subset of scripts/asan-subset.sh. Usage: scripts/test.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/install-deps.sh
scripts/build.sh "$preset"
ctest --preset "$preset" --timeout 1500 -j 2
if [ "${EMBER_ASAN_SUBSET:-1}" = 1 ] && [ "$preset" != asan ]; then
  scripts/asan-subset.sh
fi
