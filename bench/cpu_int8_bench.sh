#!/usr/bin/env bash
# int8 against f32 on the cpu backend: resnet18, resnet50 and mobilenet_v2,
# batch 1, 1 and 2 threads, medians of RUNS timed runs after warm-up. Each
# model is calibrated once on its test input (ember quantize, minmax,
# asymmetric) and run with --quantize. Prints the kernels that ran (f32 GEMM
# micro-kernel, int8 micro-kernel) and the load average before and after.
#
# Usage: bench/cpu_int8_bench.sh BUILD_DIR [RUNS]
# Needs: BUILD_DIR/bin/ember, the test models (target model_data) and
# BUILD_DIR/bench/models/resnet50.onnx (bench/gen_bench_models.py).
set -euo pipefail
shopt -s inherit_errexit  # a failed run inside $(...) stops the script
build=${1:?usage: cpu_int8_bench.sh BUILD_DIR [RUNS]}
runs=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
ember=$build/bin/ember
models=$build/testdata/models
benchModels=$build/bench/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$benchModels"
[ -f "$benchModels/resnet50.onnx" ] || /usr/bin/python3 "$here/gen_bench_models.py" "$benchModels" >/dev/null

model_path() {
  case $1 in
    resnet50) echo "$benchModels/resnet50.onnx" ;;
    *) echo "$models/$1.onnx" ;;
  esac
}
calibration_input() {  # resnet50 takes resnet18's 224x224 input
  case $1 in
    resnet50) echo "$models/resnet18.input.npy" ;;
    *) echo "$models/$1.input.npy" ;;
  esac
}

seconds() {  # model threads [ember run options...]
  local model=$1 threads=$2
  shift 2
  rm -f "$work/run.json"
  EMBER_CPU_THREADS=$threads "$ember" run "$(model_path "$model")" --backend cpu --random-inputs \
    --threads "$threads" --repeat "$runs" --report-json "$work/run.json" --quiet "$@"
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_seconds_median'])" "$work/run.json"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
EMBER_CPU_VERBOSE=1 "$ember" compile "$models/resnet18.onnx" --backend cpu --quiet 2>&1 | grep '^cpu:' | sed 's/^/kernels: /'
echo
echo "| model | threads | f32 ms | int8 ms | f32 / int8 |"
echo "| --- | ---: | ---: | ---: | ---: |"
for model in resnet18 resnet50 mobilenet_v2; do
  "$ember" quantize "$(model_path "$model")" --calibrate "$(calibration_input "$model")" -o "$work/$model.yaml" --quiet
  for threads in 1 2; do
    f=$(seconds "$model" "$threads")
    q=$(seconds "$model" "$threads" --quantize "$work/$model.yaml")
    /usr/bin/python3 -c "
import sys
m, th, f, q = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
print(f'| {m} | {th} | {f*1e3:.2f} | {q*1e3:.2f} | {f/q:.2f} |')" "$model" "$threads" "$f" "$q"
  done
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
