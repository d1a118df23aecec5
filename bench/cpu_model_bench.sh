#!/usr/bin/env bash
# Model latency table of the cpu backend: Ember vs ONNX Runtime vs PyTorch,
# batch 1, on 1 and 2 threads, medians of RUNS timed runs after warm-up, all
# measured in this one run (interleaved per model and thread count).
#
# Usage: bench/cpu_model_bench.sh BUILD_DIR [RUNS]
# Needs: BUILD_DIR/bin/ember, the test models (target model_data),
# node with onnxruntime-node as scripts/install-deps.sh installs it (in
# $EMBER_NODE_DIR, default /opt/ember/node), /usr/bin/python3 with torch and torchvision.
set -euo pipefail
build=${1:?usage: cpu_model_bench.sh BUILD_DIR [RUNS]}
runs=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
ember=$build/bin/ember
models=$build/testdata/models
benchModels=$build/bench/models
# ONNX Runtime as scripts/install-deps.sh installs it (nothing downloads here).
node_dir=${EMBER_NODE_DIR:-/opt/ember/node}
mkdir -p "$benchModels"

if [ ! -d "$node_dir/node_modules/onnxruntime-node" ]; then
  echo "cpu_model_bench: no onnxruntime-node in $node_dir; run scripts/install-deps.sh" >&2
  exit 1
fi
[ -f "$benchModels/resnet50.onnx" ] || /usr/bin/python3 "$here/gen_bench_models.py" "$benchModels" >/dev/null

model_path() {
  case $1 in
    resnet50) echo "$benchModels/resnet50.onnx" ;;
    *) echo "$models/$1.onnx" ;;
  esac
}

ember_seconds() {  # model threads
  local json
  json=$(mktemp)
  EMBER_CPU_THREADS=$2 "$ember" run "$(model_path "$1")" --backend cpu --random-inputs --threads "$2" \
    --repeat "$runs" --report-json "$json" --quiet
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_seconds_median'])" "$json"
  rm -f "$json"
}

ort_seconds() {
  NODE_PATH=$node_dir/node_modules node "$here/cpu_ort_bench.js" "$(model_path "$1")" "$2" "$runs"
}

torch_seconds() {
  OMP_NUM_THREADS=$2 /usr/bin/python3 "$here/cpu_torch_bench.py" "$1" "$2" "$runs" 2>/dev/null
}

echo "| model | threads | Ember ms | ONNX Runtime ms | PyTorch ms | Ember / ORT | Ember / PyTorch |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for model in resnet18 resnet50 mobilenet_v2; do
  for threads in 1 2; do
    e=$(ember_seconds $model $threads)
    o=$(ort_seconds $model $threads)
    t=$(torch_seconds $model $threads)
    /usr/bin/python3 -c "
import sys
m, th, e, o, t = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f'| {m} | {th} | {e*1e3:.2f} | {o*1e3:.2f} | {t*1e3:.2f} | {e/o:.2f} | {e/t:.2f} |')" \
      $model $threads "$e" "$o" "$t"
  done
done
