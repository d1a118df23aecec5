#!/usr/bin/env bash
# Installs every Debian package Ember's build, tests and benchmarks need.
# Idempotent: when everything is present it only runs dpkg-query and exits.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git clang-format clang-14 libclang-rt-14-dev
  clang-tidy-16   # scripts/clang-tidy-changed.sh, the clang-tidy step of .ci/run
  llvm-16-dev llvm-16-tools libzstd-dev
  libsystemc-dev verilator
  libyaml-cpp-dev libboost-dev libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  python3 python3-numpy python3-onnx python3-torch python3-torchvision python3-sklearn
  python3-dev pybind11-dev python3-pytest python3-matplotlib python3-pandas
  libopenblas-dev nodejs
  chromium libpng-dev
  slurmctld slurmd slurm-client munge   # slurm-wlm's daemons and clients: tests/slurm starts a one-node cluster
)

# onnxruntime-node, the difftest's ONNX Runtime oracle (tests/difftest), from
# npm into a fixed directory outside the source tree; its native library
# ships inside the package. Skipped when already there.
install_onnxruntime_node() {
  local dir=${EMBER_NODE_DIR:-/opt/ember/node}
  [ -d "$dir/node_modules/onnxruntime-node" ] && return 0
  echo "install-deps: installing onnxruntime-node into $dir"
  mkdir -p "$dir"
  (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund onnxruntime-node >/dev/null)
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_onnxruntime_node
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_onnxruntime_node
