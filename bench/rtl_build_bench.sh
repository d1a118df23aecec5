#!/bin/sh
# Verilator build cost of the RTL matrix engine (docs/npu/rtl.md, "Build"):
# verilates and compiles each shipped array size with the flags of
# rtl/CMakeLists.txt, in a scratch directory, and prints wall time, CPU time
# and peak memory of each step (GNU time). Usage: bench/rtl_build_bench.sh [JOBS]
set -eu
jobs=${1:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
inc=/usr/share/verilator/include
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $jobs job(s)"
for size in 16 32; do
  dir=$scratch/V$size
  /usr/bin/time -f "  verilate ${size}x${size}: %e s wall, %U s CPU, %M KB peak" \
    verilator --cc --trace -GROWS=$size -GCOLS=$size --x-assign fast --x-initial fast --unroll-count 4 \
    --prefix Vember_me_${size}x${size} --top ember_matrix_engine --Mdir "$dir" \
    "$root"/rtl/ember_matrix_engine.sv "$root"/rtl/ember_me_array.sv "$root"/rtl/ember_me_delay.sv
  lines=$(cat "$dir"/*.cpp | wc -l)
  # Fast (eval) sources at -O2, slow (constructors, trace setup) at -O0, as in CMake.
  cd "$dir"
  /usr/bin/time -f "  compile ${size}x${size} ($lines generated lines): %e s wall, %U s CPU, %M KB peak per process" \
    sh -c "ls *.cpp | xargs -P $jobs -I{} sh -c 'case {} in *Slow*) o=-O0;; *) o=-O2;; esac; \
      g++ -std=c++17 \$o -g0 -I. -I$inc -I$inc/vltstd -DVM_TRACE=1 -c {} -o {}.o'"
  cd - >/dev/null
done
# The Verilator runtime, compiled once for both models.
cd "$scratch"
/usr/bin/time -f "  compile Verilator runtime (verilated, vcd, threads): %e s wall, %U s CPU, %M KB peak per process" \
  sh -c "printf '%s\n' verilated verilated_vcd_c verilated_threads | xargs -P $jobs -I{} \
    g++ -std=c++17 -O2 -g0 -I$inc -I$inc/vltstd -DVM_TRACE=1 -c $inc/{}.cpp -o {}.o"
