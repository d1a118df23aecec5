#!/usr/bin/env bash
# Prints issue 3's memory-planning table for resnet18, resnet50, mobilenet_v2,
# densenet121 and the transformer encoder (batch 1). Builds what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh default ir_memory_bench model_data
models=build/default/testdata/models
bench=build/default/bench-models
/usr/bin/python3 bench/gen_bench_models.py "$bench" >&2
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
build/default/bench/ir_memory_bench "$models/resnet18.onnx" "$bench/resnet50.onnx" "$models/mobilenet_v2.onnx" \
  "$bench/densenet121.onnx" "$models/transformer_encoder.onnx"
