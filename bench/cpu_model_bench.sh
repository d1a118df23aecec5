#!/usr/bin/env bash
# Model latency table of the cpu backend: Ember vs ONNX Runtime vs PyTorch,
# batch 1, on 1 and 2 threads, medians of RUNS timed runs after warm-up, all
# measured in this one run (interleaved per model and thread count). Then the
# int8 table: each model is calibrated once (ember quantize, asymmetric,
# minmax, per-channel weights) and written as an ONNX QDQ model (--emit-onnx);
# Ember int8 (cpu backend, --quantize) against ONNX Runtime running that QDQ
# model with its own int8 kernels, and against Ember f32 of the first table.
#
# Usage: bench/cpu_model_bench.sh BUILD_DIR [RUNS] [all|f32|int8]
# Needs: BUILD_DIR/bin/ember, the test models (target model_data),
# node with onnxruntime-node as scripts/install-deps.sh installs it (in
# $EMBER_NODE_DIR, default /opt/ember/node), /usr/bin/python3 with torch and torchvision.
set -euo pipefail
shopt -s inherit_errexit  # a failed run inside $(...) stops the script
build=${1:?usage: cpu_model_bench.sh BUILD_DIR [RUNS] [all|f32|int8]}
runs=${2:-20}
tables=${3:-all}
here=$(cd "$(dirname "$0")" && pwd)
ember=$build/bin/ember
models=$build/testdata/models
benchModels=$build/bench/models
# ONNX Runtime as scripts/install-deps.sh installs it (nothing downloads here).
node_dir=${EMBER_NODE_DIR:-/opt/ember/node}
mkdir -p "$benchModels"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A emberF32

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

calibration_input() {  # resnet50 takes resnet18's 224x224 input
  case $1 in
    resnet50) echo "$models/resnet18.input.npy" ;;
    *) echo "$models/$1.input.npy" ;;
  esac
}

# Per model, the 1-thread runs of every runtime are pinned to the same CPU:
# the one with the highest FMA peak just before (cpu_gemm_bench), or
# EMBER_BENCH_CPU. The two vCPUs of the VMs this was measured on differ by up
# to 25 % in speed, and which one is slow changes every few minutes (it
# shares its core with the host), so an unpinned 1-thread run measures
# whichever vCPU the scheduler picked, and a ratio can mix the two.
bench_cpu=
fastest_cpu() {
  if [ -n "${EMBER_BENCH_CPU:-}" ] || ! command -v taskset >/dev/null || [ ! -x "$build/bench/cpu_gemm_bench" ]; then
    echo "${EMBER_BENCH_CPU:-0}"
    return
  fi
  local cpu peak best=0 bestPeak=0 last=$(($(nproc) - 1))
  [ "$last" -gt 7 ] && last=7  # the first 8 CPUs are enough to find a free core
  for cpu in $(seq 0 "$last"); do
    peak=$(taskset -c "$cpu" "$build/bench/cpu_gemm_bench" --threads 1 --runs 1 32 2>/dev/null |
      sed -n 's/.*AVX2 \([0-9.]*\) GFLOP.*/\1/p')
    if [ -n "$peak" ] && awk -v a="$peak" -v b="$bestPeak" 'BEGIN { exit !(a > b) }'; then
      best=$cpu
      bestPeak=$peak
    fi
  done
  echo "$best"
}
pin() {  # threads command...
  local threads=$1
  shift
  if [ "$threads" = 1 ] && [ -n "$bench_cpu" ] && command -v taskset >/dev/null; then
    taskset -c "$bench_cpu" "$@"
  else
    "$@"
  fi
}
pinned=()

ember_seconds() {  # model threads [ember run options...]
  local model=$1 threads=$2 json
  shift 2
  json=$(mktemp)
  EMBER_CPU_THREADS=$threads pin "$threads" "$ember" run "$(model_path "$model")" --backend cpu --random-inputs \
    --threads "$threads" --repeat "$runs" --report-json "$json" --quiet "$@"
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_seconds_median'])" "$json"
  rm -f "$json"
}

ort_seconds() {  # model threads [model file]
  NODE_PATH=$node_dir/node_modules pin "$2" node "$here/cpu_ort_bench.js" "${3:-$(model_path "$1")}" "$2" "$runs"
}

torch_seconds() {
  OMP_NUM_THREADS=$2 pin "$2" /usr/bin/python3 "$here/cpu_torch_bench.py" "$1" "$2" "$runs" 2>/dev/null
}

flags=$(grep -m1 '^flags' /proc/cpuinfo)
isa=$(for f in avx2 fma avx512f avx512_vnni avx_vnni; do [[ " $flags " == *" $f "* ]] && printf '%s ' "$f"; done)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs; ISA: $isa"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [ "$tables" != int8 ]; then
echo "| model | threads | Ember ms | ONNX Runtime ms | PyTorch ms | Ember / ORT | Ember / PyTorch |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for model in resnet18 resnet50 mobilenet_v2; do
  bench_cpu=$(fastest_cpu)
  pinned+=("f32 $model: cpu$bench_cpu")
  for threads in 1 2; do
    e=$(ember_seconds $model $threads)
    emberF32[$model/$threads]=$e
    o=$(ort_seconds $model $threads)
    t=$(torch_seconds $model $threads)
    /usr/bin/python3 -c "
import sys
m, th, e, o, t = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f'| {m} | {th} | {e*1e3:.2f} | {o*1e3:.2f} | {t*1e3:.2f} | {e/o:.2f} | {e/t:.2f} |')" \
      $model $threads "$e" "$o" "$t"
  done
done
fi

if [ "$tables" != f32 ]; then
  echo
  echo "| model | threads | Ember int8 ms | ORT int8 (QDQ) ms | Ember f32 ms | Ember int8 / ORT int8 | Ember f32 / Ember int8 |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  for model in resnet18 resnet50 mobilenet_v2; do
    "$ember" quantize "$(model_path "$model")" --calibrate "$(calibration_input "$model")" --per-channel \
      -o "$work/$model.yaml" --emit-onnx "$work/$model.qdq.onnx" --quiet
    bench_cpu=$(fastest_cpu)
    pinned+=("int8 $model: cpu$bench_cpu")
    for threads in 1 2; do
      q=$(ember_seconds "$model" "$threads" --quantize "$work/$model.yaml")
      o=$(ort_seconds "$model" "$threads" "$work/$model.qdq.onnx")
      f=${emberF32[$model/$threads]:-$(ember_seconds "$model" "$threads")}
      /usr/bin/python3 -c "
import sys
m, th, q, o, f = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f'| {m} | {th} | {q*1e3:.2f} | {o*1e3:.2f} | {f*1e3:.2f} | {q/o:.2f} | {f/q:.2f} |')" \
        "$model" "$threads" "$q" "$o" "$f"
    done
  done
fi
echo
echo "1-thread runs pinned to the fastest vCPU (FMA peak) at each model's start: $(IFS=,; echo "${pinned[*]}" | sed 's/,/, /g')"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
