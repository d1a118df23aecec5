#!/usr/bin/env bash
# The README's main command: installs dependencies, builds, then compiles the
# shipped digits CNN for the Ember NPU (int8, npu-16x16), simulates it and
# prints its outputs and the per-layer performance report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default ember
ember=build/default/bin/ember
model=examples/models/digits.onnx
config=simulator/configs/npu-16x16.yaml
out=build/default/demo
mkdir -p "$out"

echo "== calibrating int8 quantization on the shipped calibration set"
"$ember" quantize "$model" --dim N=1 --calibrate examples/models/digits.calibration.npy -o "$out/digits.profile.yaml"

echo "== compiling for the NPU ($config) into a bundle"
"$ember" compile "$model" --dim N=1 --backend npu --config "$config" --quantize "$out/digits.profile.yaml" \
  -o "$out/digits.bundle" --quiet
echo "wrote $out/digits.bundle (run it alone with: $ember sim $out/digits.bundle --config $config --random-inputs)"

echo "== compiling and simulating in-process (the held-out digit is a 1)"
"$ember" run "$model" --dim N=1 --backend npu --config "$config" --quantize "$out/digits.profile.yaml" \
  --input examples/models/digits.input.npy --output-dir "$out" \
  --report-json "$out/report.json" --trace "$out/trace.json"
echo "outputs in $out; report: $out/report.json; timeline (Perfetto): $out/trace.json"
