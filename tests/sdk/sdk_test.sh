#!/bin/bash
# The SDK as a vendor sees it (tests/sdk/CMakeLists.txt runs each step as a
# ctest test): install the SDK to a prefix, then build out-of-tree plugins
# against that prefix alone with a fresh CMake, load them into the installed
# `ember`, run a model and the conformance kit.
#
#   sdk_test.sh install         BUILD_DIR PREFIX
#   sdk_test.sh build-example   PREFIX SOURCE_DIR WORK_DIR
#   sdk_test.sh run-example     PREFIX WORK_DIR MODEL INPUT EXPECTED NPY_ALLCLOSE
#   sdk_test.sh conform-example PREFIX WORK_DIR [ONNX_NODE_DATA_DIR]
#   sdk_test.sh new-backend     PREFIX WORK_DIR
#   sdk_test.sh fallback-app    PREFIX SOURCE_DIR WORK_DIR MODEL
#   sdk_test.sh installed-extras PREFIX BUILD_DIR SAME.npy OTHER.npy
#   sdk_test.sh guide           GUIDE.md SOURCE_ROOT   (verbatim blocks match the example)
#   sdk_test.sh toy-report      EMBER PLUGIN_DIR MODEL INPUT WORK_DIR   (the toy's own counter and column)
set -euo pipefail

step=$1
shift
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ -n "${EMBER_TEST_CXX:-}" ] && cmake_args+=("-DCMAKE_CXX_COMPILER=${EMBER_TEST_CXX}")
command -v ccache > /dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# A sanitizer build's static libraries need its runtime in the vendor's link.
if [ -n "${EMBER_TEST_SANITIZE:-}" ]; then
  cmake_args+=("-DCMAKE_CXX_FLAGS=${EMBER_TEST_SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=${EMBER_TEST_SANITIZE}"
               "-DCMAKE_SHARED_LINKER_FLAGS=${EMBER_TEST_SANITIZE}")
fi

case "$step" in
  install)
    build=$1 prefix=$2
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix" --component Ember
    for f in bin/ember include/ember/Plugin.h include/ember/Ops.def lib/libember_runtime.a \
             lib/cmake/Ember/EmberConfig.cmake lib/cmake/Ember/EmberConfigVersion.cmake \
             lib/cmake/Ember/EmberTargets.cmake lib/cmake/Ember/EmberPlugin.cmake; do
      [ -e "$prefix/$f" ] || { echo "sdk_test: $prefix/$f was not installed" >&2; exit 1; }
    done
    "$prefix/bin/ember" --version
    ;;
  build-example)
    prefix=$1 source=$2 work=$3
    rm -rf "$work"
    # A fresh configure that sees only the installed prefix (no build tree).
    cmake -S "$source" -B "$work" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$work"
    ls "$work"/lib*.so
    # The plugin exports its entry point and nothing else.
    for plugin in "$work"/lib*.so; do
      exported=$(nm -D --defined-only "$plugin" | awk '{print $NF}')
      [ "$exported" = ember_backend_plugin ] ||
        { echo "sdk_test: $plugin exports more than ember_backend_plugin:" $exported >&2; exit 1; }
    done
    ;;
  run-example)
    prefix=$1 work=$2 model=$3 input=$4 expected=$5 allclose=$6
    ember="$prefix/bin/ember"
    "$ember" backends --backend-path "$work" | grep -q '^toy ' || { echo "sdk_test: 'toy' not listed" >&2; exit 1; }
    EMBER_BACKEND_PATH="$work" "$ember" backends | grep -q '^toy ' ||
      { echo "sdk_test: 'toy' not found through EMBER_BACKEND_PATH" >&2; exit 1; }
    out="$work/run-output"
    rm -rf "$out"
    "$ember" run "$model" --backend toy --backend-path "$work" --input "$input" --output-dir "$out" |
      tee "$work/run-output.txt"
    # The toy's device report (its own counter and column) printed by the installed tool.
    grep -Eq '^fast_instructions: +[0-9]+ instructions$' "$work/run-output.txt" ||
      { echo "sdk_test: the toy's counter is not in the report" >&2; exit 1; }
    outputs=("$out"/*.npy)
    [ ${#outputs[@]} -eq 1 ] || { echo "sdk_test: expected one output in $out" >&2; exit 1; }
    "$allclose" "$expected" "${outputs[0]}" 1e-4 1e-5
    ;;
  toy-report)
    ember=$1 plugins=$2 model=$3 input=$4 work=$5
    mkdir -p "$work"
    "$ember" run "$model" --backend toy --backend-path "$plugins" --input "$input" \
      --report-json "$work/report.json" | tee "$work/report.txt"
    expect() {  # FILE REGEX WHAT
      grep -Eq "$2" "$1" || { echo "sdk_test: toy-report: $3 missing from $1" >&2; exit 1; }
    }
    expect "$work/report.txt" '^fast_instructions: +[1-9][0-9]* instructions$' "the counter"
    expect "$work/report.txt" '^layer +op +kernel$' "the column's header"
    expect "$work/report.txt" ' (toy|fused|reference)$' "a layer's kernel"
    expect "$work/report.json" '"fast_instructions": [1-9]' "the counter's key"
    expect "$work/report.json" '"kernel": "(toy|fused|reference|copy)"' "the column's key"
    ;;
  conform-example)
    prefix=$1 work=$2 onnx=${3:-}
    extra=()
    [ -n "$onnx" ] && [ -d "$onnx" ] && extra=(--onnx-data "$onnx")
    "$prefix/bin/ember" conformance --backend toy --backend-path "$work" --isolate --report "$work/conformance.json" \
      "${extra[@]}"
    grep -q '"failed": 0' "$work/conformance.json"
    ;;
  new-backend)
    prefix=$1 work=$2
    ember="$prefix/bin/ember"
    rm -rf "$work"
    "$ember" new-backend my_accel "$work/src"
    cmake -S "$work/src" -B "$work/build" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$work/build"
    "$ember" backends --backend-path "$work/build" | grep -q '^my_accel ' ||
      { echo "sdk_test: 'my_accel' not listed" >&2; exit 1; }
    "$ember" conformance --backend my_accel --backend-path "$work/build" --report "$work/conformance.json" --quiet
    grep -q '"passed": 0' "$work/conformance.json"
    grep -q '"failed": 0' "$work/conformance.json"
    # Writing over an existing skeleton is refused without --force.
    if "$ember" new-backend my_accel "$work/src" 2> "$work/err.txt"; then
      echo "sdk_test: new-backend overwrote existing files" >&2
      exit 1
    fi
    grep -q 'already exists' "$work/err.txt"
    ;;
  guide)
    # Every fenced block after "<!-- verbatim: PATH -->" must appear in PATH as is.
    guide=$1 root=$2 checked=0 path="" block="" inside=0 line=""
    while IFS= read -r line || [ -n "$line" ]; do
      if [ $inside -eq 0 ] && [[ "$line" =~ ^\<!--\ verbatim:\ ([^ ]+)\ --\>$ ]]; then
        path=${BASH_REMATCH[1]}
      elif [ -n "$path" ] && [ $inside -eq 0 ] && [[ "$line" == '```'* ]]; then
        inside=1 block=""
      elif [ $inside -eq 1 ] && [[ "$line" == '```' ]]; then
        content=$(cat "$root/$path")
        if [[ "$content" != *"$block"* ]]; then
          echo "sdk_test: $guide: a block marked verbatim is not in $path:" >&2
          printf '%s\n' "$block" | head -5 >&2
          exit 1
        fi
        checked=$((checked + 1)) inside=0 path=""
      elif [ $inside -eq 1 ]; then
        block+="${block:+$'\n'}$line"
      fi
    done < "$guide"
    [ $checked -gt 0 ] || { echo "sdk_test: $guide has no verbatim blocks" >&2; exit 1; }
    echo "sdk_test: $checked verbatim blocks of $guide match the sources"
    ;;
  fallback-app)
    # A host application built against the prefix alone: its plugin refuses
    # Relu and the installed reference backend runs it (tests/sdk/fallback_app).
    prefix=$1 source=$2 work=$3 model=$4
    rm -rf "$work"
    cmake -S "$source" -B "$work" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$work"
    "$work/fallback_app" "$work/libember_backend_acme.so" "$model"
    ;;
  installed-extras)
    # Docs, the conformance kit's ONNX node data, and `ember npy-diff`.
    prefix=$1 build=$2 same=$3 other=$4
    for f in share/doc/ember/backend-guide.md share/doc/ember/cli.md lib/libember_backend_reference.a \
             include/ember/OpAttrs.h; do
      [ -e "$prefix/$f" ] || { echo "sdk_test: $prefix/$f was not installed" >&2; exit 1; }
    done
    # The generated attribute structs compile against the installed headers alone.
    printf '%s\n' '#include <ember/Graph.h>' '#include <ember/OpAttrs.h>' \
      'std::vector<int64_t> strides(const ember::Node& n) { return n.attrs<ember::ConvAttrs>().strides; }' |
      "${EMBER_TEST_CXX:-c++}" -std=c++20 -fsyntax-only -I"$prefix/include" -x c++ - ||
      { echo "sdk_test: the installed ember/OpAttrs.h does not compile" >&2; exit 1; }
    if [ -d "$build/testdata/onnx/node" ]; then
      [ -e "$prefix/share/ember/onnx-node/test_abs/model.onnx" ] ||
        { echo "sdk_test: the ONNX node data was not installed under share/ember/onnx-node" >&2; exit 1; }
      # Whole outputs first, then grep: grep -q closing the pipe early would
      # fail the writer under pipefail.
      conformance=$("$prefix/bin/ember" conformance --backend reference --quiet --filter onnx/test_abs \
        --onnx-data "$prefix/share/ember/onnx-node")
      grep -q ' passed, 0 failed' <<< "$conformance" ||
        { echo "sdk_test: conformance on the installed ONNX data did not pass: $conformance" >&2; exit 1; }
    fi
    help=$("$prefix/bin/ember" npy-diff --help)
    grep -q '^usage: ember npy-diff EXPECTED.npy GOT.npy' <<< "$help"
    agree=$("$prefix/bin/ember" npy-diff "$same" "$same")
    grep -q 'the arrays agree' <<< "$agree"
    if "$prefix/bin/ember" npy-diff "$same" "$other" > /dev/null 2>&1; then
      echo "sdk_test: npy-diff accepted two different arrays" >&2
      exit 1
    fi
    ;;
  *)
    echo "sdk_test: unknown step '$step'" >&2
    exit 2
    ;;
esac
