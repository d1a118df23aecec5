#!/usr/bin/env bash
# The fast AddressSanitizer + UndefinedBehaviorSanitizer subset that CI runs
# after the main suite (docs/testing.md, "Sanitizers"): the core unit tests,
# the NPU format and simulator tests, the cpu backend's kernels against the
# reference (cpu_ops_test: 10 s), the fuzz regression replay and the
# command-line tests, built with the `asan` preset's flags. The RTL
# co-simulation, the model and ONNX node suites and the benchmarks are left to
# the full `asan` preset run (`scripts/test.sh asan`).
# Usage: scripts/asan-subset.sh   (build dir: $EMBER_ASAN_BUILD_DIR, default build/asan-subset)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_ASAN_BUILD_DIR:-build/asan-subset}

gtests=(kernels_test type_rules_test npy_test graph_test ir_test importer_test optimizer_test
        quant_kernels_test quant_conversion_test npu_sim_test npu_hardening_test cli_test import_errors_test
        cpu_ops_test)

start=$(date +%s)
# No Verilator: the RTL matrix engine's generated code is slow to build under
# the sanitizers and has its own suite (tests/rtl).
cmake --preset asan -B "$build" -DEMBER_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_verilator=ON >/dev/null
cmake --build "$build" --parallel 2 --target "${gtests[@]}" fuzz_replays
built=$(date +%s)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logs="$build/asan-subset-logs"
rm -rf "$logs" && mkdir -p "$logs"
# Each GoogleTest binary runs whole (two at a time), which is faster than
# ctest's one process per test case under the sanitizers.
for t in "${gtests[@]}"; do find "$build/tests" -maxdepth 2 -type f -name "$t"; done |
  xargs -P 2 -I{} sh -c '"$1" --gtest_brief=1 >"$2/$(basename "$1").log" 2>&1 || echo "$1" >>"$2/failed"' _ {} "$logs"
ctest --test-dir "$build" -L fuzz --output-on-failure --timeout 900 -j 2 >"$logs/replay.log" 2>&1 ||
  echo replay >>"$logs/failed"
end=$(date +%s)
echo "asan-subset: build $((built - start)) s, tests $((end - built)) s"
if [ -s "$logs/failed" ]; then
  for f in $(cat "$logs/failed"); do
    log="$logs/$(basename "$f").log"
    echo "---- FAILED: $f ($log)"
    tail -40 "$log"
  done
  exit 1
fi
echo "asan-subset: ${#gtests[@]} test binaries and $(grep -c ' Passed ' "$logs/replay.log") fuzz replays passed"
