#!/usr/bin/env bash
# Runs one libFuzzer target (docs/testing.md, "Fuzzing").
# Usage: scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags...]
#   TARGET: onnx_importer npy config bundle isa_decoder assembler npy_writer
#           sweep_spec quant_profile
# Builds fuzz_TARGET with the `fuzz` preset (clang, ASan+UBSan) in
# $EMBER_FUZZ_BUILD_DIR (default build/fuzz), fuzzes one process at nice 19
# from a working copy of the seed corpus plus the regression inputs, and
# writes crashing inputs to $BUILD/fuzz-artifacts/TARGET/. New crashers
# belong in tests/fuzz/regressions/TARGET/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
targets="onnx_importer npy config bundle isa_decoder assembler npy_writer sweep_spec quant_profile"
if [ $# -lt 2 ] || ! [[ " $targets " == *" $1 "* ]] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]   (TARGET: $targets)" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2
build=${EMBER_FUZZ_BUILD_DIR:-build/fuzz}

if [ ! -f "$build/build.ninja" ]; then
  cmake --preset fuzz -B "$build" >/dev/null
fi
ninja -C "$build" "fuzz_$target" >/dev/null

work="$build/fuzz-corpus/$target"
artifacts="$build/fuzz-artifacts/$target"
mkdir -p "$work" "$artifacts"
inputs=("tests/fuzz/corpus/$target")
[ -d "tests/fuzz/regressions/$target" ] && inputs+=("tests/fuzz/regressions/$target")

# One process on one core, lowest priority: fuzzing must not starve builds.
# -rss_limit_mb catches runaway allocations; -timeout catches hangs.
exec nice -n 19 "$build/tests/fuzz/fuzz_$target" "$work" "${inputs[@]}" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$@"
