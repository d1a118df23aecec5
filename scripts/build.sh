#!/usr/bin/env bash
# Configures and builds Ember with a CMake preset (default: "default").
# Usage: scripts/build.sh [PRESET] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
shift || true
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -- "$@"
