#!/usr/bin/env bash
# The ThreadSanitizer subset that CI runs after the main suite (docs/testing.md,
# "Sanitizers"): the cpu backend's thread pool (thread_pool_test) and the
# sweep's process pool (codesign_unit_test), built with the `tsan` preset's
# flags. The other thread-using suites run under TSan in the nightly `tsan` stage.
# Usage: scripts/tsan-subset.sh   (build dir: $EMBER_TSAN_BUILD_DIR, default build/tsan-subset)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_TSAN_BUILD_DIR:-build/tsan-subset}
tests=(thread_pool_test codesign_unit_test)

start=$(date +%s)
cmake --preset tsan -B "$build" >/dev/null
cmake --build "$build" --parallel 2 --target "${tests[@]}"
built=$(date +%s)

export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
status=0
for t in "${tests[@]}"; do
  bin=$(find "$build/tests" -maxdepth 2 -type f -name "$t" | head -1)
  if ! "$bin" --gtest_brief=1 >"$build/$t.log" 2>&1; then
    echo "---- FAILED under TSan: $t ($build/$t.log)"
    tail -40 "$build/$t.log"
    status=1
  fi
done
end=$(date +%s)
echo "tsan-subset: build $((built - start)) s, tests $((end - built)) s"
[ $status = 0 ] && echo "tsan-subset: ${tests[*]} passed"
exit $status
