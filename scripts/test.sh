#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the whole
# suite through ctest, then (unless EMBER_ASAN_SUBSET=0) the AddressSanitizer +
# UBSan subset of scripts/asan-subset.sh and (unless EMBER_TSAN_SUBSET=0) the
# ThreadSanitizer subset of scripts/tsan-subset.sh. Usage: scripts/test.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
# Each phase's wall time, printed at the end, so that a CI run that grows
# toward its time limit shows which phase grew.
phases=()
timed() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$name $((SECONDS - start)) s")
}
timed install-deps scripts/install-deps.sh
timed build scripts/build.sh "$preset"
timed ctest ctest --preset "$preset" --timeout 1500 -j 2
if [ "${EMBER_ASAN_SUBSET:-1}" = 1 ] && [ "$preset" != asan ]; then
  timed asan-subset scripts/asan-subset.sh
fi
if [ "${EMBER_TSAN_SUBSET:-1}" = 1 ] && [ "$preset" != tsan ]; then
  timed tsan-subset scripts/tsan-subset.sh  # the thread pools under ThreadSanitizer
fi
echo "test.sh: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g') (total ${SECONDS} s)"
