#!/usr/bin/python3
"""Hardware-compiler co-design from Python, notebook style (docs/python.md).

Quantizes the shipped digits CNN to int8, sweeps the NPU's array size and
scratchpad SRAM, and plots latency against energy with matplotlib.

    PYTHONPATH=build/default/python /usr/bin/python3 examples/python/codesign_sweep.py -o sweep-py
    # --quick: 2 array sizes x 2 SRAM sizes (seconds) instead of 3 x 3
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
MODELS = os.path.join(REPO, "examples", "models")

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("-o", "--output-dir", default="codesign-sweep-py", help="where the sweep and the PNG go")
parser.add_argument("--quick", action="store_true", help="a 2 x 2 sweep instead of 3 x 3")
parser.add_argument("-j", "--jobs", type=int, default=2, help="points simulated at once")
args = parser.parse_args()
os.makedirs(args.output_dir, exist_ok=True)

# 1. Quantize: calibrate the f32 model on 128 held-out digits, save the profile.
model = ember.load(os.path.join(MODELS, "digits.onnx"), dims={"N": 1})
profile = model.quantize(np.load(os.path.join(MODELS, "digits.calibration.npy")))
profile_path = os.path.join(args.output_dir, "digits.profile.yaml")
profile.save(profile_path)
print(f"{profile}; saved {profile_path}")

# 2. Sweep the array size (each with a datapath to match) and the scratchpad;
#    at 2 KiB a large array finds no tiling that fits: that point fails, the rest run.
arrays = [8, 16, 32] if not args.quick else [8, 16]
srams_kib = [2, 4, 16] if not args.quick else [2, 16]
spec = {
    "name": "digits-array-sram",
    "backend": "npu",
    "base_config": os.path.join(REPO, "simulator", "configs", "npu-16x16.yaml"),
    "models": [{"path": os.path.join(MODELS, "digits.onnx"), "profile": profile_path, "dims": ["N=1"]}],
    "axes": {
        "array": [{"label": f"{n}x{n}", "matrix_engine.rows": n, "matrix_engine.cols": n, "vector.lanes": n,
                   "scratchpad.bank_width_bytes": n, "accumulator.port_width_bytes": 4 * n} for n in arrays],
        "scratchpad.size_kib": srams_kib,
    },
}
results = ember.sweep(spec, jobs=args.jobs, output_dir=os.path.join(args.output_dir, "sweep"))
ok = [r for r in results if r["status"] == "ok"]
for r in results:
    print(f"{r['config']:>40}  {r['status']:>6}  {r['latency_us'] or 0:8.2f} us  {(r['energy_pj'] or 0) / 1e6:8.3f} uJ"
          f"  {r['error'] or ''}")

# 3. Latency against energy: one colour per array size, one marker per SRAM size.
fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
markers = dict(zip(srams_kib, "osD^v"))
colors = dict(zip([f"{n}x{n}" for n in arrays], plt.cm.viridis(np.linspace(0.1, 0.8, len(arrays)))))
for r in ok:
    ax.scatter(r["latency_us"], r["energy_pj"] / 1e6, color=colors[r["array"]],
               marker=markers[r["scratchpad.size_kib"]], s=60, edgecolor="black", linewidth=0.5)
for array, color in colors.items():
    ax.scatter([], [], color=color, label=f"array {array}")
for kib, marker in markers.items():
    ax.scatter([], [], color="grey", marker=marker, label=f"SRAM {kib} KiB")
ax.set_xlabel("latency (µs)")
ax.set_ylabel("energy (µJ)")
ax.set_title("digits CNN, int8 on the Ember NPU")
ax.grid(True, alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
png = os.path.join(args.output_dir, "latency_vs_energy.png")
fig.savefig(png)
print(f"{len(ok)} of {len(results)} points ok; wrote {png}")
