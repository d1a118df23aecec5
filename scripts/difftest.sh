#!/usr/bin/env bash
# Differential random-model tester (docs/testing.md): generates N random
# models from seed S with their oracle outputs (PyTorch / ONNX Runtime),
# replays them through Ember with difftest_runner, minimises each failing
# case into tests/difftest/regressions/ and prints the summary.
#
# Usage: scripts/difftest.sh --seed S --count N [--backend reference|cpu|npu|PLUGIN]... [--backend-path DIR]
#          [--keep DIR] [--dir DIR] [--no-minimize] [--runner PATH] [--jobs J] [--int8-every K]
#          [--regressions DIR] [--with-known-bugs] [--draw OP]
#   --keep DIR     generate into DIR and keep it (default: a temporary directory)
#   --dir DIR      generate into DIR, replacing what is there, and keep it (ctest uses this)
#   --jobs J       run the cases in J runner processes (default 1)
#   --int8-every K the int8 npu check on every K-th compared case (default 1: all)
#   --regressions DIR  where minimised failures go (default tests/difftest/regressions)
#   --with-known-bugs  also draw the op variants of tests/difftest/known_wrong_answers.txt
# Needs /usr/bin/python3 (numpy, onnx, torch), node with onnxruntime-node in
# $EMBER_NODE_DIR (default /opt/ember/node; scripts/install-deps.sh) and
# difftest_runner (default build/default/tests/difftest/difftest_runner).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seed=1 count=100 dir="" keep=0 minimize=1 jobs=1 int8_every=1 gen_args=()
regressions=$root/tests/difftest/regressions
runner=${EMBER_BUILD_DIR:-$root/build/default}/tests/difftest/difftest_runner
known=$root/tests/difftest/known_errors.txt
backend_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --backend) backend_args+=(--backend "$2"); shift 2 ;;
    --backend-path) backend_args+=(--backend-path "$2"); shift 2 ;;
    --keep) dir=$2; keep=1; shift 2 ;;
    --dir) dir=$2; keep=1; shift 2 ;;
    --no-minimize) minimize=0; shift ;;
    --runner) runner=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --int8-every) int8_every=$2; shift 2 ;;
    --regressions) regressions=$2; shift 2 ;;
    --with-known-bugs) gen_args+=(--with-known-bugs); shift ;;
    --draw) gen_args+=(--draw "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "difftest.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$runner" ] || { echo "difftest.sh: $runner not built (ember-build difftest_runner)" >&2; exit 2; }
if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/difftest.XXXXXX)
else
  rm -rf "$dir"
  mkdir -p "$dir"
fi
cleanup() { [ "$keep" = 1 ] || rm -rf "$dir"; }
trap cleanup EXIT

start=$(date +%s.%N)
/usr/bin/python3 "$root/tests/difftest/generate.py" --seed "$seed" --count "$count" --out "$dir/cases" "${gen_args[@]}"
gen_end=$(date +%s.%N)

# Shard the cases over J runner processes; each writes its own log.
mapfile -t cases < "$dir/cases/cases.txt"
status=0
pids=()
for ((j = 0; j < jobs; ++j)); do
  shard=()
  for ((i = j; i < ${#cases[@]}; i += jobs)); do shard+=("$dir/cases/${cases[i]}"); done
  [ ${#shard[@]} -gt 0 ] || continue
  "$runner" "${backend_args[@]}" --int8-every "$int8_every" --known-errors "$known" "${shard[@]}" > "$dir/runner.$j.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
end=$(date +%s.%N)
cat "$dir"/runner.*.log | grep -v '^difftest:\|^checks run:' || true
grep -h '^difftest:' "$dir"/runner.*.log

if [ "$status" != 0 ] && [ "$minimize" = 1 ]; then
  # One minimisation per failing case, for its first failing check.
  grep -h '^FAIL ' "$dir"/runner.*.log | awk '!seen[$2]++ { print $2, $3 }' | while read -r name check; do
    echo "minimising $name ($check)"
    /usr/bin/python3 "$root/tests/difftest/minimize.py" --case "$dir/cases/$name" --check "$check" \
      --runner "$runner" --out "$regressions" || true
  done
fi
/usr/bin/python3 - "$count" "$start" "$gen_end" "$end" <<'EOF'
import sys
n, start, gen, end = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"difftest.sh: {n} models: generation {gen - start:.1f} s, runner {end - gen:.1f} s, "
      f"total {end - start:.1f} s ({100 * (end - start) / max(n, 1):.1f} s per 100 models)")
EOF
exit "$status"
