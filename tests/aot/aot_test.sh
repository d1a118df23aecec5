#!/bin/bash
# The cpu backend's AOT bundle, as an application developer uses it
# (tests/aot/CMakeLists.txt runs it once per model): with the installed SDK
# alone, compile MODEL to model.o + model.h, build examples/aot with a plain C
# compiler against the prefix's CMake package, run it, and check that
#   - every output is bit-identical to the JIT's (`ember run --backend cpu`),
#   - the application binary links no LLVM library (ldd).
#
#   aot_test.sh PREFIX EXAMPLE_DIR WORK_DIR MODEL.onnx INPUT.npy [ember compile options...]
# With AOT_CALIBRATE=FILE.npy the model is first calibrated (ember quantize,
# with the same options) and compiled int8 (--quantize).
set -euo pipefail

prefix=$1 example=$2 work=$3 model=$4 input=$5
shift 5
ember="$prefix/bin/ember"
rm -rf "$work"
mkdir -p "$work/bundle" "$work/aot-out" "$work/jit-out"
if [ -n "${AOT_CALIBRATE:-}" ]; then
  "$ember" quantize "$model" --calibrate "$AOT_CALIBRATE" -o "$work/profile.yaml" --quiet "$@"
  set -- "$@" --quantize "$work/profile.yaml"
fi

"$ember" compile "$model" --backend cpu "$@" -o "$work/bundle/model.o" --header "$work/bundle/model.h" --quiet
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="${EMBER_TEST_CC:-cc}")
# Under a sanitizer preset the runtime library is instrumented: the
# application links the same sanitizer runtime (tests/CMakeLists.txt).
if [ -n "${EMBER_TEST_SANITIZE:-}" ]; then
  cmake_args+=("-DCMAKE_C_FLAGS=${EMBER_TEST_SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=${EMBER_TEST_SANITIZE}")
fi
cmake -S "$example" -B "$work/build" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DEMBER_AOT_DIR="$work/bundle"
cmake --build "$work/build"
app="$work/build/aot_example"

libs=$(ldd "$app")
if grep -i llvm <<< "$libs"; then
  echo "aot_test: $app links an LLVM library" >&2
  exit 1
fi
grep -q libember_cpu_runtime <<< "$libs" || { echo "aot_test: $app does not link the AOT runtime" >&2; exit 1; }

"$app" "$input" "$work/aot-out"
"$ember" run "$model" --backend cpu "$@" --input "$input" --output-dir "$work/jit-out" > /dev/null

# Each AOT output's raw bytes against the data of the JIT's .npy (its last N bytes).
count=0
for bin in "$work/aot-out"/*.bin; do
  name=$(basename "$bin" .bin)
  npy="$work/jit-out/$name.npy"
  [ -f "$npy" ] || { echo "aot_test: no JIT output $npy for $name" >&2; exit 1; }
  bytes=$(stat -c %s "$bin")
  tail -c "$bytes" "$npy" | cmp - "$bin" || { echo "aot_test: output '$name' differs from the JIT's" >&2; exit 1; }
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "aot_test: the application wrote no outputs" >&2; exit 1; }
echo "aot_test: $count output(s) bit-identical to the JIT's; no LLVM library linked"
