#!/usr/bin/env bash
# The README's main command: installs dependencies, builds, compiles the
# shipped model and runs it, printing its outputs and the report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default ember
model=examples/models/tiny_cnn.onnx
out=build/default/demo
mkdir -p "$out"
build/default/bin/ember run "$model" --backend reference \
  --input examples/models/tiny_cnn.input.npy --output-dir "$out" --report-json "$out/report.json"
echo "outputs written to $out; report: $out/report.json"
