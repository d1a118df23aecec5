#!/usr/bin/env bash
# Runs one libFuzzer target (docs/testing.md, "Fuzzing").
# Usage: scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags...]
#        scripts/fuzz.sh --merge TARGET
#   TARGET: onnx_importer npy config bundle isa_decoder assembler npy_writer
#           sweep_spec quant_profile
# Builds fuzz_TARGET with the `fuzz` preset (clang, ASan+UBSan) in
# $EMBER_FUZZ_BUILD_DIR (default build/fuzz), fuzzes one process at nice 19
# from a working copy of the seed corpus plus the regression inputs, and
# writes crashing inputs to $BUILD/fuzz-artifacts/TARGET/. New crashers
# belong in tests/fuzz/regressions/TARGET/ once fixed.
# --merge adds to the repository's corpus (tests/fuzz/corpus/TARGET) the
# inputs of the working corpus that reach code it does not (libFuzzer's
# -merge=1), so the next run, and ctest's replay, start from them.
set -euo pipefail
cd "$(dirname "$0")/.."
targets="onnx_importer npy config bundle isa_decoder assembler npy_writer sweep_spec quant_profile"
if [ "${1:-}" = --merge ] && [ $# -eq 2 ] && [[ " $targets " == *" $2 "* ]]; then :
elif [ $# -lt 2 ] || ! [[ " $targets " == *" $1 "* ]] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...] | --merge TARGET   (TARGET: $targets)" >&2
  exit 2
fi
merge=0
if [ "${1:-}" = --merge ]; then
  merge=1
  shift
  set -- "${1:-}" 0
fi
target=$1
seconds=$2
shift 2
build=${EMBER_FUZZ_BUILD_DIR:-build/fuzz}

# Several targets may start at once (the nightly runs one per core): one
# configure and build at a time in the build folder.
mkdir -p "$build"
(
  flock 9
  if [ ! -f "$build/build.ninja" ]; then
    cmake --preset fuzz -B "$build" >/dev/null
  fi
  ninja -C "$build" "fuzz_$target" >/dev/null
) 9>"$build/.fuzz-build.lock"

work="$build/fuzz-corpus/$target"
artifacts="$build/fuzz-artifacts/$target"
mkdir -p "$work" "$artifacts"
inputs=("tests/fuzz/corpus/$target")
[ -d "tests/fuzz/regressions/$target" ] && inputs+=("tests/fuzz/regressions/$target")

if [ "$merge" = 1 ]; then
  before=$(ls "${inputs[0]}" | wc -l)
  nice -n 19 "$build/tests/fuzz/fuzz_$target" -merge=1 -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    "${inputs[0]}" "$work" >"$build/fuzz-merge-$target.log" 2>&1 ||
    { tail -5 "$build/fuzz-merge-$target.log" >&2; exit 1; }
  echo "fuzz $target: corpus $before -> $(ls "${inputs[0]}" | wc -l) inputs, $(cat "${inputs[0]}"/* | wc -c) bytes"
  exit 0
fi

# One process on one core, lowest priority: fuzzing must not starve builds.
# -rss_limit_mb catches runaway allocations; -timeout catches hangs.
# Recording every allocation's stack costs the YAML targets a fifth of their
# executions; a finding's input is saved, and running the fuzzer on that one
# file (build/fuzz/tests/fuzz/fuzz_TARGET FILE) shows the stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}
exec nice -n 19 "$build/tests/fuzz/fuzz_$target" "$work" "${inputs[@]}" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$@"
