#!/usr/bin/env bash
# CI's clang-tidy step (.ci/run; docs/testing.md, "Static checks"): runs
# scripts/clang-tidy-changed.sh on the C++ sources changed by the last
# EMBER_TIDY_COMMITS commits (default 10), or since EMBER_TIDY_BASE when the CI
# system names the last commit it passed. Fails on a finding, and when it takes
# longer than EMBER_TIDY_TIMEOUT seconds (default 600), so that it cannot eat
# the CI's time unnoticed. Needs a configured and built build/default.
# Environment: EMBER_TIDY_JOBS (default 2 here: CI has the machine to itself).
set -euo pipefail
cd "$(dirname "$0")/.."
commits=${EMBER_TIDY_COMMITS:-10}
limit=${EMBER_TIDY_TIMEOUT:-600}
if [ -n "${EMBER_TIDY_BASE:-}" ]; then
  base=$EMBER_TIDY_BASE
else
  # HEAD~N, or the oldest commit there is when the history (or a shallow
  # clone's) is shorter.
  base=$(git rev-parse -q --verify "HEAD~$commits^{commit}" || git rev-list --max-parents=0 HEAD | tail -n 1)
fi
echo "clang-tidy-ci: sources changed since $(git log -1 --format='%h %s' "$base" | cut -c1-72)"
status=0
EMBER_TIDY_JOBS=${EMBER_TIDY_JOBS:-2} timeout "$limit" scripts/clang-tidy-changed.sh "$base" || status=$?
if [ "$status" -eq 124 ]; then
  echo "clang-tidy-ci: over the time limit of ${limit}s (EMBER_TIDY_TIMEOUT); fewer commits: EMBER_TIDY_COMMITS" >&2
fi
exit "$status"
