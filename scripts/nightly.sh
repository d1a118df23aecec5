#!/usr/bin/env bash
# The long checks that do not fit CI (docs/testing.md, "Nightly"). Each stage
# appends one line of figures to build/nightly/summary.txt and leaves a stamp,
# so an interrupted run resumes where it stopped (--fresh starts over).
#
# Usage: scripts/nightly.sh [--hours H] [--fresh] [STAGE...]
#   STAGE: asan tsan rtl fuzz coverage   (default: all, in that order)
#   --hours H  stop starting new stages after H hours (default: no limit);
#              the fuzz stage also stops early then, and resumes next time
#   EMBER_FUZZ_EXECS  executions per fuzz target (default 10000000)
#   EMBER_FUZZ_TURN   seconds per fuzz target per turn (default 600)
#   EMBER_FUZZ_JOBS   fuzz targets run at once (default: nproc)
#   EMBER_TSAN_TESTS  ctest -R regex of the suites run under TSan
#   EMBER_TSAN_TARGETS  build targets of the tsan stage (default: all); the
#              binaries of the EMBER_TSAN_TESTS tests and their data suffice
#   EMBER_RTL_RANDOM  the rtl_random binary (default: build/default's)
#   EMBER_ASAN_BUILD_DIR, EMBER_TSAN_BUILD_DIR  the sanitizer stages' build
#              folders (default build/asan, build/tsan); pointing them at CI's
#              build/asan-subset and build/tsan-subset reuses those objects
# A target that fails to build is reported by ctest as not run (a failure);
# the stage still runs every test that did build.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  # The header comment, up to the first line that is not one.
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
}

hours=""
fresh=0
stages=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hours)
      [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "nightly: --hours needs a number" >&2; exit 2; }
      hours=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    -h|--help) usage; exit 0 ;;
    asan|tsan|rtl|fuzz|coverage) stages+=("$1"); shift ;;
    *) echo "nightly: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan rtl fuzz coverage)

# Under the kernel's autogroup scheduling, nice ranks processes only within
# their session: give the session the same nice value, so that a
# `nice -n 19 scripts/nightly.sh` really takes only idle CPU.
niceness=$(nice)
if [ "$niceness" -gt 0 ] && [ -w /proc/self/autogroup ]; then echo "$niceness" >/proc/self/autogroup 2>/dev/null || true; fi

out=build/nightly
summary=$out/summary.txt
mkdir -p "$out"
[ "$fresh" = 1 ] && rm -f "$out"/*.done "$summary"
start=$(date +%s)
deadline=""
[ -n "$hours" ] && deadline=$(awk -v s="$start" -v h="$hours" 'BEGIN { printf "%d", s + h * 3600 }')

out_of_time() { [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ]; }
record() { echo "$(date -u +%FT%TZ) $*" | tee -a "$summary"; }

# build_all NAME DIR [cmake --build options]: builds every target it can
# (ninja -k 0); the build's failures are counted in the summary and their
# tests show up as not run.
build_all() {
  local name=$1 dir=$2 log=$out/build-$1.log
  shift 2
  if cmake --build "$dir" --parallel 2 "$@" -- -k 0 >"$log" 2>&1; then return 0; fi
  record "build $name: $(grep -c '^FAILED: ' "$log") targets failed ($log)"
}

# The whole ctest suite with AddressSanitizer + UBSan (the `asan` preset).
stage_asan() {
  local build=${EMBER_ASAN_BUILD_DIR:-build/asan} log=$out/asan.log
  # The whole suite: the RTL co-simulation too, which CI's subset leaves out.
  cmake --preset asan -B "$build" -DCMAKE_DISABLE_FIND_PACKAGE_verilator=OFF >/dev/null
  build_all asan "$build"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$build" --output-on-failure --timeout 3000 -j 2 >"$log" 2>&1; then :; fi
  record "asan: $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
  grep -q "100% tests passed" "$log"
}

# The suites whose code runs threads, under ThreadSanitizer (the `tsan` preset).
stage_tsan() {
  local build=${EMBER_TSAN_BUILD_DIR:-build/tsan} log=$out/tsan.log
  cmake --preset tsan -B "$build" >/dev/null
  # shellcheck disable=SC2086 # a list of targets
  build_all tsan "$build" ${EMBER_TSAN_TARGETS:+--target $EMBER_TSAN_TARGETS}
  if TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "$build" --output-on-failure --timeout 3000 -j 2 -R "${EMBER_TSAN_TESTS:-[Cc]pu|[Cc]odesign|[Ss]weep|Determinism|[Rr]untime|[Pp]ool}" >"$log" 2>&1; then :; fi
  record "tsan: $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
  grep -q "100% tests passed" "$log"
}

# Random NPU programs (tests/rtl_random): >= 10^4 on the 16x16 array, as many
# on it with two weight buffers (npu-16x16-v2, wbuf drawn) and >= 2,000 on the
# 32x32, the fast model against the RTL matrix engine, bit for bit and cycle
# for cycle, plus illegal mutations against the checkers.
stage_rtl() {
  local bin=${EMBER_RTL_RANDOM:-build/default/tests/rtl_random/rtl_random} failed=0 config count line
  [ -x "$bin" ] || { record "rtl: $bin is not built (cmake --build build/default --target rtl_random)"; return 1; }
  for config in npu-16x16:${EMBER_RTL_PROGRAMS_16:-10000} npu-16x16-v2:${EMBER_RTL_PROGRAMS_16:-10000} \
    npu-32x32:${EMBER_RTL_PROGRAMS_32:-2000}; do
    count=${config#*:}
    if ! line=$("$bin" "simulator/configs/${config%%:*}.yaml" "$count" 2>"$out/rtl-${config%%:*}.log"); then
      failed=1
    fi
    record "${line:-rtl ${config%%:*}: FAILED ($out/rtl-${config%%:*}.log)}"
  done
  return $failed
}

# Every libFuzzer target up to EMBER_FUZZ_EXECS executions in all, counted
# across resumed runs in $out/fuzz-TARGET.execs. Targets take turns of
# EMBER_FUZZ_TURN seconds (default 600), so a short night reaches every one,
# EMBER_FUZZ_JOBS of them at once (default: one per core).
stage_fuzz() {
  local goal=${EMBER_FUZZ_EXECS:-10000000} turn=${EMBER_FUZZ_TURN:-600} jobs=${EMBER_FUZZ_JOBS:-$(nproc)}
  local failed=0 target count running
  local targets=(onnx_importer npy config bundle isa_decoder assembler npy_writer sweep_spec quant_profile)
  local pending=("${targets[@]}") next
  [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { record "fuzz: EMBER_FUZZ_JOBS must be a positive integer, not '$jobs'"; return 1; }
  # Build every target first, so that turns are spent fuzzing.
  [ -f build/fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
  build_all fuzz build/fuzz --target ember_fuzzers
  rm -f "$out"/fuzz-*.finding
  while [ ${#pending[@]} -gt 0 ] && ! out_of_time; do
    running=0
    for target in "${pending[@]}"; do
      count=$(cat "$out/fuzz-$target.execs" 2>/dev/null || echo 0)
      [ "$count" -lt "$goal" ] || continue
      out_of_time && break
      fuzz_turn "$target" "$count" "$goal" "$turn" &
      running=$((running + 1))
      if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
    done
    wait
    # The next round: the targets short of the goal and without a finding.
    next=()
    for target in "${pending[@]}"; do
      if [ -f "$out/fuzz-$target.finding" ]; then failed=1; continue; fi
      count=$(cat "$out/fuzz-$target.execs" 2>/dev/null || echo 0)
      [ "$count" -lt "$goal" ] && next+=("$target")
    done
    pending=("${next[@]+"${next[@]}"}")
  done
  for target in "${targets[@]}"; do
    count=$(cat "$out/fuzz-$target.execs" 2>/dev/null || echo 0)
    record "fuzz $target: $count of $goal executions"
    [ "$count" -ge "$goal" ] || failed=1
  done
  return $failed
}

# fuzz_turn TARGET COUNT GOAL SECONDS: one turn of one target (run in the
# background); adds its executions to the count, or leaves a .finding stamp.
fuzz_turn() {
  local target=$1 count=$2 goal=$3 seconds=$4 log=$out/fuzz-$1.log executed
  # Never run past the deadline.
  [ -n "$deadline" ] && [ $((deadline - $(date +%s))) -lt "$seconds" ] && seconds=$((deadline - $(date +%s)))
  [ "$seconds" -gt 0 ] || return 0
  if ! scripts/fuzz.sh "$target" "$seconds" -runs=$((goal - count)) >"$log" 2>&1; then
    record "fuzz $target: FINDING or build failure after $count executions ($log)"
    touch "$out/fuzz-$target.finding"
    # The goal counts executions of the fixed code: a finding starts it over.
    grep -q "^artifact_prefix=.*Test unit written" "$log" && echo 0 >"$out/fuzz-$target.execs"
    return 1
  fi
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo $((count + ${executed:-0})) >"$out/fuzz-$target.execs"
}

# Line and branch coverage of core/, backends/ and simulator/ from the normal
# suite (clang source-based coverage, the `coverage` preset).
stage_coverage() {
  local build=build/coverage
  cmake --preset coverage >/dev/null
  build_all coverage "$build"
  rm -rf "$build/profiles" && mkdir -p "$build/profiles"
  LLVM_PROFILE_FILE="$PWD/$build/profiles/%p-%m.profraw" ctest --test-dir "$build" --timeout 3000 -j 2 \
    >"$out/coverage-tests.log" 2>&1 || true
  llvm-profdata-14 merge -sparse "$build"/profiles/*.profraw -o "$build/ember.profdata"
  # llvm-cov takes the first binary as an argument and every other one after
  # -object; the folders after them filter the sources. Only instrumented
  # objects are given: scripts, and the out-of-tree tests' gcc-built programs,
  # would make it refuse the whole list.
  local binaries=() objects=()
  while IFS= read -r f; do
    readelf -S "$f" 2>/dev/null | grep -q __llvm_covmap && binaries+=("$f")
  done < <(find "$build" -type f \( -name '*.so' -o -perm -u+x \) \( -path '*/tests/*' -o -path '*/bin/*' \) \
    ! -path '*/CMakeFiles/*' | sort)
  [ ${#binaries[@]} -gt 0 ] || { record "coverage: no instrumented binaries in $build"; return 1; }
  for f in "${binaries[@]:1}"; do objects+=(-object "$f"); done
  local sources=("$PWD/core" "$PWD/backends" "$PWD/simulator")
  llvm-cov-14 show -format=html -output-dir="$out/coverage-html" -instr-profile="$build/ember.profdata" \
    "${binaries[0]}" "${objects[@]}" "${sources[@]}" >/dev/null
  local folder totals
  for folder in "${sources[@]}"; do
    totals=$(llvm-cov-14 report -instr-profile="$build/ember.profdata" "${binaries[0]}" "${objects[@]}" "$folder" |
      awk '/^TOTAL/ { print "lines " $10 ", branches " $13 }')
    [ -n "$totals" ] || { record "coverage ${folder##*/}: llvm-cov gave no total"; return 1; }
    record "coverage ${folder##*/}: $totals"
  done
}

status=0
for stage in "${stages[@]}"; do
  if [ -f "$out/$stage.done" ]; then echo "nightly: $stage done earlier (--fresh to redo)"; continue; fi
  if out_of_time; then record "stopped: out of time before $stage"; break; fi
  echo "nightly: $stage ..."
  if "stage_$stage"; then touch "$out/$stage.done"; else status=1; record "$stage: FAILED"; fi
done
echo "nightly: $(($(date +%s) - start)) s; figures in $summary"
exit $status
