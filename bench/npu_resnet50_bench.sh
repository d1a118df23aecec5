#!/usr/bin/env bash
# ResNet-50, batch 1, int8 on the simulated NPU: npu-16x16 and npu-64x64, each
# over the two switches: one or two weight buffers (-v2, ISA v2) and the vector
# unit on the compute queue or on its own queue (-q, -v2q: vector.queue
# separate with accumulator.banks 2, ISA v3), and -v3: -v2q with the bias as the
# gemms' initial accumulator value (matrix_engine.bias_init), the residual
# adds run in the convs' epilogues (compiler.fuse_residual_add), the first
# weights of each layer prefetched across the barrier, the stem on 2x2 pixel
# blocks and a batch's 1x1 convs as more gemm rows (compiler.prefetch_weights,
# dense_stem, batch_rows); -v3u is -v3 with the adds unfused, so the sweep
# shows what the fusion buys, -v3p is -v3 without the max pooling in the
# stem's epilogue (compiler.fuse_max_pool) and -v3o without the fused add out
# of place (compiler.residual_out_of_place). Then batch 4
# on the v3 configs (the model with its batch dimension set to 4, calibrated
# on the same four images), and ResNet-18 and MobileNetV2 (scripts/gen_models.py's
# test models, 224x224, when BUILD_DIR/testdata/models holds them) on
# npu-16x16, npu-64x64 and the v3 configs.
# Prints whole-network cycles, MAC utilisation (the simulator's count) and
# useful-MAC utilisation (the network's MACs / (cycles x R x C), also written
# to BUILD_DIR/bench/npu_resnet50/summary.json), the 64x64 speed-up, compile
# time (`ember compile`'s compile_seconds), host simulation time (`ember sim`'s
# host_seconds), the top layers by cycles, and ratios against peers measured
# in this run: ONNX Runtime's f32 CPU latency (2 threads; bench/cpu_ort_bench.js)
# and the CPU's FMA peak for the same MACs. The NPU latency is simulated cycles
# at the config's clock (1 GHz).
#
# Usage: bench/npu_resnet50_bench.sh BUILD_DIR [FMA_GFLOPS]
# Needs: BUILD_DIR/bin/ember with the npu backend, /usr/bin/python3 with numpy
# (and torch + torchvision to export resnet50.onnx once). ONNX Runtime is
# optional: node with onnxruntime-node as scripts/install-deps.sh installs it
# ($EMBER_NODE_DIR, default /opt/ember/node); without it only the FMA-peak ratio is printed.
# Writes only into BUILD_DIR/bench.
set -euo pipefail
build=$(cd "${1:?usage: npu_resnet50_bench.sh BUILD_DIR [FMA_GFLOPS]}" && pwd)
fma_gflops=${2:-200}  # docs/performance.md: AVX2 FMA peak ~200 GFLOP/s on 2 cores
here=$(cd "$(dirname "$0")" && pwd)
configs=$here/../simulator/configs
ember=$build/bin/ember
out=$build/bench/npu_resnet50
models=$build/bench/models
model=$models/resnet50.onnx
mkdir -p "$out" "$models"

[ -x "$ember" ] || { echo "npu_resnet50_bench: $ember not found (build the 'ember' target)" >&2; exit 1; }
[ -f "$model" ] || /usr/bin/python3 "$here/gen_bench_models.py" "$models" >&2

# Calibration: a few image-like samples, then the int8 profile.
[ -f "$out/calibration.npy" ] || /usr/bin/python3 "$here/npu_resnet50_bench.py" calibration "$out/calibration.npy" 4
if [ ! -f "$out/profile.yaml" ]; then
  "$ember" quantize "$model" --calibrate "$out/calibration.npy" -o "$out/profile.yaml" >&2
fi

# The switch sweep: weight buffers 1|2 x vector queue shared|separate. The
# shipped configs cover three corners; the fourth (one buffer, separate queue:
# -q) is the -v2q config with one weight buffer, written here.
mkdir -p "$out/configs"
for size in 16x16 64x64; do
  sed 's/^  weight_buffers: 2 .*/  weight_buffers: 1/; s/^name: npu-\(.*\)-v2q/name: npu-\1-q/' \
    "$configs/npu-$size-v2q.yaml" >"$out/configs/npu-$size-q.yaml"
  sed 's/^  fuse_residual_add: true .*/  fuse_residual_add: false/; s/^name: npu-\(.*\)-v3/name: npu-\1-v3u/' \
    "$configs/npu-$size-v3.yaml" >"$out/configs/npu-$size-v3u.yaml"
  sed 's/^  fuse_max_pool: true .*/  fuse_max_pool: false/; s/^name: npu-\(.*\)-v3/name: npu-\1-v3p/' \
    "$configs/npu-$size-v3.yaml" >"$out/configs/npu-$size-v3p.yaml"
  sed 's/^  residual_out_of_place: true .*/  residual_out_of_place: false/; s/^name: npu-\(.*\)-v3/name: npu-\1-v3o/' \
    "$configs/npu-$size-v3.yaml" >"$out/configs/npu-$size-v3o.yaml"
done

for size in 16x16 16x16-v2 16x16-q 16x16-v2q 16x16-v3u 16x16-v3p 16x16-v3o 16x16-v3 \
  64x64 64x64-v2 64x64-q 64x64-v2q 64x64-v3u 64x64-v3p 64x64-v3o 64x64-v3; do
  cfg=$configs/npu-$size.yaml
  [ -f "$cfg" ] || cfg=$out/configs/npu-$size.yaml
  dir=$out/$size
  mkdir -p "$dir"
  echo "== npu-$size: compile" >&2
  "$ember" compile "$model" --backend npu --config "$cfg" --quantize "$out/profile.yaml" -o "$dir/resnet50.bundle" \
    --report-json "$dir/compile.json" >&2
  echo "== npu-$size: run (compile + simulate, per-layer report)" >&2
  "$ember" run "$model" --backend npu --config "$cfg" --quantize "$out/profile.yaml" --random-inputs \
    --report-json "$dir/run.json" --quiet
  # Host simulation time of the bundle alone; --check also runs the static
  # program checks (tokens, SRAM races) on the whole network's program.
  echo "== npu-$size: ember sim --check" >&2
  "$ember" sim "$dir/resnet50.bundle" --config "$cfg" --random-inputs --check --stats "$dir/sim.json" --quiet
done

# Batch 4: the same network and images, the batch as the leading dimension.
model4=$models/resnet50_b4.onnx
[ -f "$model4" ] || /usr/bin/python3 "$here/npu_resnet50_bench.py" batch "$model" "$model4" 4
[ -f "$out/profile_b4.yaml" ] ||
  "$ember" quantize "$model4" --calibrate "$out/calibration.npy" -o "$out/profile_b4.yaml" >&2
for size in 16x16-v3 64x64-v3; do
  dir=$out/$size-b4
  mkdir -p "$dir"
  echo "== npu-$size, batch 4: run" >&2
  "$ember" run "$model4" --backend npu --config "$configs/npu-$size.yaml" --quantize "$out/profile_b4.yaml" \
    --random-inputs --report-json "$dir/run.json" --quiet
done

# ResNet-18 and MobileNetV2 (the test models at 224x224), calibrated on their test input.
testmodels=$build/testdata/models
for net in resnet18 mobilenet_v2; do
  [ -f "$testmodels/$net.onnx" ] || continue
  [ -f "$out/profile_$net.yaml" ] ||
    "$ember" quantize "$testmodels/$net.onnx" --calibrate "$testmodels/$net.input.npy" -o "$out/profile_$net.yaml" >&2
  for size in 16x16 16x16-v3 64x64 64x64-v3; do
    dir=$out/$net-$size
    mkdir -p "$dir"
    echo "== $net on npu-$size: run" >&2
    "$ember" run "$testmodels/$net.onnx" --backend npu --config "$configs/npu-$size.yaml" \
      --quantize "$out/profile_$net.yaml" --random-inputs --report-json "$dir/run.json" --quiet
  done
done

ort=0
if command -v node >/dev/null; then
  # ONNX Runtime as scripts/install-deps.sh installs it (nothing downloads here).
  node_dir=${EMBER_NODE_DIR:-/opt/ember/node}
  if [ -d "$node_dir/node_modules/onnxruntime-node" ]; then
    echo "== ONNX Runtime f32, 2 threads" >&2
    ort=$(NODE_PATH=$node_dir/node_modules node "$here/cpu_ort_bench.js" "$model" 2 10)
  fi
fi

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
/usr/bin/python3 "$here/npu_resnet50_bench.py" report "$out" "$ort" "$fma_gflops" "$model" "$testmodels"
echo
# Ember's per-layer cycles against SCALE-Sim's weight-stationary formula (docs/npu/compiler.md).
/usr/bin/python3 "$here/scalesim_compare.py" "$model" "$out" "$out/scalesim"
