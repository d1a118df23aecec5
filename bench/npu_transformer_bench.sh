#!/usr/bin/env bash
# The transformer models on the NPU (issue 18's bench rows; docs/npu/compiler.md,
# "Transformers"): for the encoder and the BERT-style model on npu-16x16-v3 and
# npu-64x64-v3, the cycles, the simulator's MAC utilisation, the useful-MAC
# utilisation (the ONNX model's MatMul/Gemm MACs / (cycles x R x C)), the share
# of layer cycles outside the matrix layers, the vector unit's busy share (ember
# sim --stats of the compiled bundle), the share of layer cycles in Softmax and
# LayerNorm, the fallback nodes, and the end-to-end latency with the host
# partitions measured and modelled.
#
# Usage: bench/npu_transformer_bench.sh BUILD_DIR [OUT_DIR]
#   Each model is calibrated once on its shipped input (ember quantize
#   --per-channel). Cycle figures are deterministic; host times are not.
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;; esac
build=$(cd "$1" && pwd)
out=${2:-$build/bench/transformer}
root=$(cd "$(dirname "$0")/.." && pwd)
ember=${EMBER:-$build/bin/ember}
models=$build/testdata/models
mkdir -p "$out"
for model in transformer_encoder bert_encoder; do
  [ -e "$models/$model.onnx" ] || { echo "npu_transformer_bench: $models/$model.onnx missing (build the test data first)" >&2; exit 1; }
  "$ember" quantize "$models/$model.onnx" --calibrate "$models/$model.input.npy" --per-channel \
    -o "$out/$model.profile.yaml" > /dev/null
  for config in npu-16x16-v3 npu-64x64-v3; do
    for host in measured modelled; do
      extra=()
      [ "$host" = modelled ] && extra=(--host-model)
      "$ember" run "$models/$model.onnx" --backend npu --config "$root/simulator/configs/$config.yaml" \
        --quantize "$out/$model.profile.yaml" --input "$models/$model.input.npy" --repeat 5 \
        "${extra[@]}" --report-json "$out/$model.$config.$host.json" > /dev/null
    done
    # The NPU partition alone on the simulator: its units' busy cycles (the vector unit's share).
    "$ember" compile "$models/$model.onnx" --backend npu --config "$root/simulator/configs/$config.yaml" \
      --quantize "$out/$model.profile.yaml" -o "$out/$model.$config.bundle" > /dev/null
    "$ember" sim "$out/$model.$config.bundle" --config "$root/simulator/configs/$config.yaml" --random-inputs \
      --stats "$out/$model.$config.stats.json" > /dev/null
  done
done
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$root/bench/npu_transformer_bench.py" "$out" "$models"
