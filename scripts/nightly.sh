#!/usr/bin/env bash
# The long checks that do not fit CI (docs/testing.md, "Nightly"). Each stage
# appends one line of figures to build/nightly/summary.txt and leaves a stamp,
# so an interrupted run resumes where it stopped (--fresh starts over).
#
# Usage: scripts/nightly.sh [--hours H] [--fresh] [STAGE...]
#   STAGE: asan tsan fuzz coverage   (default: all, in that order)
#   --hours H  stop starting new stages after H hours (default: no limit);
#              the fuzz stage also stops early then, and resumes next time
#   EMBER_FUZZ_EXECS  executions per fuzz target (default 10000000)
#   EMBER_TSAN_TESTS  ctest -R regex of the suites run under TSan
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
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
    asan|tsan|fuzz|coverage) stages+=("$1"); shift ;;
    *) echo "nightly: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan fuzz coverage)

out=build/nightly
summary=$out/summary.txt
mkdir -p "$out"
[ "$fresh" = 1 ] && rm -f "$out"/*.done "$summary"
start=$(date +%s)
deadline=""
[ -n "$hours" ] && deadline=$(awk -v s="$start" -v h="$hours" 'BEGIN { printf "%d", s + h * 3600 }')

out_of_time() { [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ]; }
record() { echo "$(date -u +%FT%TZ) $*" | tee -a "$summary"; }

# The whole ctest suite with AddressSanitizer + UBSan (the `asan` preset).
stage_asan() {
  cmake --preset asan >/dev/null
  cmake --build --preset asan --parallel 2
  local log=$out/asan.log
  if ctest --preset asan --timeout 3000 -j 2 >"$log" 2>&1; then :; fi
  record "asan: $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
  grep -q "100% tests passed" "$log"
}

# The suites whose code runs threads, under ThreadSanitizer (the `tsan` preset).
stage_tsan() {
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan --parallel 2
  local log=$out/tsan.log
  if ctest --preset tsan --timeout 3000 -j 2 -R "${EMBER_TSAN_TESTS:-[Cc]pu|[Cc]odesign|[Ss]weep|Determinism|[Rr]untime|[Pp]ool}" >"$log" 2>&1; then :; fi
  record "tsan: $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
  grep -q "100% tests passed" "$log"
}

# Every libFuzzer target up to EMBER_FUZZ_EXECS executions in all, counted
# across resumed runs in $out/fuzz-TARGET.execs.
stage_fuzz() {
  local goal=${EMBER_FUZZ_EXECS:-10000000} failed=0 target done runs
  for target in onnx_importer npy config bundle isa_decoder assembler; do
    done=$(cat "$out/fuzz-$target.execs" 2>/dev/null || echo 0)
    while [ "$done" -lt "$goal" ] && ! out_of_time; do
      runs=$((goal - done < 2000000 ? goal - done : 2000000))
      local log=$out/fuzz-$target.log
      if ! scripts/fuzz.sh "$target" 36000 -runs="$runs" >"$log" 2>&1; then
        record "fuzz $target: FINDING after $done executions ($log)"
        failed=1
        break
      fi
      done=$((done + $(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)))
      echo "$done" >"$out/fuzz-$target.execs"
    done
    record "fuzz $target: $done of $goal executions"
    [ "$done" -ge "$goal" ] || failed=1
  done
  return $failed
}

# Line and branch coverage of core/, backends/ and simulator/ from the normal
# suite (clang source-based coverage, the `coverage` preset).
stage_coverage() {
  local build=build/coverage
  cmake --preset coverage >/dev/null
  cmake --build --preset coverage --parallel 2
  rm -rf "$build/profiles" && mkdir -p "$build/profiles"
  LLVM_PROFILE_FILE="$PWD/$build/profiles/%p-%m.profraw" ctest --test-dir "$build" --timeout 3000 -j 2 \
    >"$out/coverage-tests.log" 2>&1 || true
  llvm-profdata-14 merge -sparse "$build"/profiles/*.profraw -o "$build/ember.profdata"
  local objects=()
  while IFS= read -r f; do objects+=(-object "$f"); done < <(find "$build" -type f \( -name '*.so' -o -perm -u+x \) \
    -path '*/tests/*' ! -name '*.sh' ! -name '*.py')
  objects+=(-object "$build/bin/ember")
  llvm-cov-14 show -format=html -output-dir="$out/coverage-html" -instr-profile="$build/ember.profdata" \
    "${objects[@]}" core backends simulator >/dev/null
  for folder in core backends simulator; do
    record "coverage $folder: $(llvm-cov-14 report -instr-profile="$build/ember.profdata" "${objects[@]}" "$folder" |
      awk '/^TOTAL/ { print "lines " $10 ", branches " $13 }')"
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
