#!/usr/bin/env bash
# A model split over several npu-16x16 chips (docs/multichip.md): ResNet-50
# int8, batch 8 (8 micro-batches of one image), on 1, 2 and 4 chips of a ring
# (32 GB/s, 500 ns per link), pipelined and data parallel, with `ember
# multichip`, the chips and links co-simulated in one SystemC elaboration.
# Prints throughput and its speed-up over one chip, the first image's
# latency, chip and link utilisation, and how far the event schedule of the
# same stage cycles is from the co-simulation; then the 4-chip pipeline
# co-simulated again at link bandwidths from 0.05 to 32 GB/s, showing where
# it becomes link-bound; then 4 chips data parallel on one shared DRAM of 1,
# 2 and 4 times a chip's own DRAM bandwidth (16 GB/s), the chips contending
# for it. Every run times the host partitions (the input's Transpose and
# Quantize, the output's Dequantize) on each chip's modelled host, with the
# host-link transfers (ember/HostModel.h defaults). Cycle figures are
# deterministic; host seconds depend on the machine's load.
#
# Usage: bench/npu_multichip_bench.sh BUILD_DIR [MODEL] [BATCH]
#   MODEL: resnet50 (default) or resnet18 (the test model at 224x224, when the
#   machine is too loaded for ResNet-50). BATCH: default 8.
# Needs: BUILD_DIR/bin/ember, /usr/bin/python3 with numpy (and torch +
# torchvision to export resnet50.onnx once). Writes only into BUILD_DIR/bench.
# EMBER=PATH runs another ember binary (e.g. a copy while the tree is rebuilt).
set -euo pipefail
build=$(cd "${1:?usage: npu_multichip_bench.sh BUILD_DIR [resnet50|resnet18] [BATCH]}" && pwd)
net=${2:-resnet50}
batch=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
configs=$here/../simulator/configs
ember=${EMBER:-$build/bin/ember}  # EMBER: another binary (a copy, while the build tree is rebuilt)
out=$build/bench/npu_multichip/$net-b$batch
mkdir -p "$out"
[ -x "$ember" ] || { echo "npu_multichip_bench: $ember not found (build the 'ember' target)" >&2; exit 1; }

case $net in
  resnet50)
    models=$build/bench/models
    model=$models/resnet50.onnx
    [ -f "$model" ] || { mkdir -p "$models" && /usr/bin/python3 "$here/gen_bench_models.py" "$models" >&2; }
    calib=$out/calibration.npy
    [ -f "$calib" ] || /usr/bin/python3 "$here/npu_resnet50_bench.py" calibration "$calib" 4
    ;;
  resnet18)
    model=$build/testdata/models/resnet18.onnx
    calib=$build/testdata/models/resnet18.input.npy
    [ -f "$model" ] || { echo "npu_multichip_bench: $model not found (build model_data)" >&2; exit 1; }
    ;;
  *) echo "npu_multichip_bench: unknown model '$net' (resnet50 or resnet18)" >&2; exit 2 ;;
esac
profile=$out/profile.yaml
[ -f "$profile" ] || "$ember" quantize "$model" --calibrate "$calib" -o "$profile" >&2

# The systems: 1, 2 and 4 npu-16x16 chips on a 32 GB/s, 500 ns ring; and
# the 4-chip ring on a shared DRAM of 16, 32 and 64 GB/s (a chip's own: 16
# bytes per cycle at 1 GHz).
for n in 1 2 4; do
  {
    echo "name: ring$n-npu16"
    echo "chips: {count: $n, config: $configs/npu-16x16.yaml}"
    [ "$n" -gt 1 ] && echo "interconnect: {topology: ring, bandwidth_gb_per_s: 32, latency_ns: 500}"
  } >"$out/ring$n.yaml"
done
shared_gbps="16 32 64"
for gbps in $shared_gbps; do
  { cat "$out/ring4.yaml"; echo "dram: {kind: shared, size_mib: 4096, bandwidth_gb_per_s: $gbps}"; } \
    >"$out/ring4-shared$gbps.yaml"
done

sweep=0.05,0.1,0.125,0.15,0.2,0.25,1,4,32
run() {  # system split [extra options]
  local system=$1 split=$2
  shift 2
  echo "== $net batch $batch on $system, $split" >&2
  "$ember" multichip "$model" --system "$out/ring$system.yaml" --split "$split" --quantize "$profile" \
    --batch "$batch" --random-inputs --output-dir "$out/outputs-$system-$split" \
    --report-json "$out/$system-$split.json" --quiet "$@"
}
run 1 data
run 2 pipeline
run 2 data
run 4 pipeline --sweep-link-bandwidth "$sweep"
run 4 data
for gbps in $shared_gbps; do run "4-shared$gbps" data; done

# Outputs must not depend on the split.
for result in "$out"/outputs-{2,4}*-*; do
  for f in "$out"/outputs-1-data/*.npy; do
    cmp -s "$f" "$result/$(basename "$f")" || { echo "npu_multichip_bench: $result/$(basename "$f") differs" >&2; exit 1; }
  done
done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out" "$net" "$batch" "$shared_gbps" <<'PY'
import json, sys
out, net, batch, shared = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
def load(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)
base = load("1-data")
print(f"{net} int8, batch {batch}, npu-16x16 chips on a 32 GB/s 500 ns ring (outputs identical on every split)")
print("| chips | split | images/s | speed-up | steady images/s | latency (first image) | chip busy (min-max) | host time per image | busiest link | link bytes | schedule vs co-sim (latency, images/s) | host s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name in ["1-data", "2-pipeline", "2-data", "4-pipeline", "4-data"]:
    r = load(name)
    chips, split = name.split("-")
    busy = [c["utilization"] for c in r["chips"]]
    links = [l["utilization"] for l in r["links"]]
    link_bytes = sum(l["bytes"] for l in r["links"])
    split_name = "one chip" if chips == "1" else split
    assert r["co_simulated"], f"{name}: not co-simulated"
    est = r["schedule_estimate"]
    host_us = sum(s["host_us_per_micro_batch"] for s in r["stages"]) / (1 if split == "pipeline" else len(r["stages"]))
    print(f"| {chips} | {split_name} | {r['throughput_images_per_s']:.1f} | "
          f"{r['throughput_images_per_s'] / base['throughput_images_per_s']:.2f}x | "
          f"{r['steady_throughput_images_per_s']:.1f} | {r['latency_us'] / 1e3:.2f} ms | "
          f"{100 * min(busy):.0f}-{100 * max(busy):.0f}% | {host_us:.1f} us | {100 * max(links or [0]):.1f}% | {link_bytes} | "
          f"{est['latency_difference_percent']:+.2f}%, {est['throughput_difference_percent']:+.2f}% | "
          f"{r['host_seconds']:.1f} |")
p = load("4-pipeline")
print()
print("4-chip pipeline stages:")
for s in p["stages"]:
    print(f"  {s['name']} on {s['chip']}: {s['nodes']} nodes {s['first_node']} .. {s['last_node']}, "
          f"{s['cycles_per_micro_batch']:.0f} cycles per image (estimate {s['estimated_cycles']})"
          + (f", host partitions {', '.join(s['host_partitions'])} ({s['host_us_per_micro_batch']:.1f} us per image)"
             if s["host_partitions"] else ""))
print()
print("4-chip pipeline over link bandwidth (same split, co-simulated at each):")
print("| GB/s per link | images/s | steady images/s | latency | busiest link | bound by |")
print("| --- | --- | --- | --- | --- | --- |")
for point in p["bandwidth_sweep"]:
    print(f"| {point['bandwidth_gb_per_s']:g} | {point['throughput_images_per_s']:.1f} | "
          f"{point['steady_throughput_images_per_s']:.1f} | {point['latency_us'] / 1e3:.2f} ms | "
          f"{100 * point['busiest_link_utilization']:.1f}% | {point['bound_by']} |")
print()
own = load("4-data")
print("4 chips data parallel, DRAM per chip (16 GB/s each) against one shared DRAM (co-simulated contention):")
print("| DRAM | images/s | vs DRAM per chip | latency (first image) | shared DRAM busy (bytes) | DRAM stall cycles per chip (of which the shared DRAM's) |")
print("| --- | --- | --- | --- | --- | --- |")
def stalls(r):
    return ", ".join(f"{c.get('dram_stall_cycles', 0)} ({c.get('shared_dram_wait_cycles', 0)})" for c in r["chips"])
print(f"| per chip, 4 x 16 GB/s | {own['throughput_images_per_s']:.1f} | 1.00x | {own['latency_us'] / 1e3:.2f} ms | - | "
      f"{stalls(own)} |")
for gbps in shared:
    r = load(f"4-shared{gbps}-data")
    d = r["dram"]
    print(f"| shared, {gbps} GB/s | {r['throughput_images_per_s']:.1f} | "
          f"{r['throughput_images_per_s'] / own['throughput_images_per_s']:.2f}x | {r['latency_us'] / 1e3:.2f} ms | "
          f"{100 * d['utilization']:.1f}% ({d['bytes']} B) | {stalls(r)} |")
PY
