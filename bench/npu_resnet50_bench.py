#!/usr/bin/python3
"""Helpers of bench/npu_resnet50_bench.sh (benchmark data and reporting only).

  npu_resnet50_bench.py calibration OUT.npy [SAMPLES]
      writes SAMPLES (default 4) image-like f32 inputs [SAMPLES,3,224,224]:
      smooth random colour fields plus texture, normalised like ImageNet inputs
      (mean 0, std about 1 per channel), from a fixed seed.
  npu_resnet50_bench.py report BENCH_DIR ORT_SECONDS FMA_GFLOPS MODEL.onnx [TESTMODELS_DIR]
      prints the benchmark's summary from BENCH_DIR/{16x16,64x64}{,-v2,-q,-v2q,-v3u,-v3p,-v3o,-v3}/
      {compile,run,sim}.json and writes BENCH_DIR/summary.json: per config the cycles,
      mac_utilization (the simulator's count: every MAC the array performs, junk rows
      included) and useful_mac_utilization (the network's MACs, counted from the ONNX
      model's Conv and Gemm/MatMul shapes, / (cycles x R x C)); then the batch-4 runs
      (BENCH_DIR/{16x16,64x64}-v3-b4/run.json, MODEL's resnet50_b4.onnx sibling) and
      ResNet-18 and MobileNetV2 (BENCH_DIR/NET-CONFIG/run.json, TESTMODELS_DIR/NET.onnx)
      under "other_models".
  npu_resnet50_bench.py batch MODEL.onnx OUT.onnx N
      writes MODEL with the batch dimension of its input and output set to N.
"""
import json
import os
import sys

import numpy as np


def calibration(out, samples):
    rng = np.random.default_rng(5001)
    images = []
    for _ in range(samples):
        # Low-frequency colour field (upsampled 7x7 noise) + fine texture.
        coarse = rng.normal(size=(3, 7, 7)).astype(np.float32)
        field = np.kron(coarse, np.ones((32, 32), dtype=np.float32))
        texture = rng.normal(scale=0.35, size=(3, 224, 224)).astype(np.float32)
        image = field + texture
        image = (image - image.mean(axis=(1, 2), keepdims=True)) / image.std(axis=(1, 2), keepdims=True)
        images.append(image)
    np.save(out, np.stack(images).astype(np.float32))


def load(path):
    with open(path) as f:
        return json.load(f)


def network_macs(model_path):
    """MACs of the model's Conv, Gemm and MatMul nodes at batch 1 (ONNX shape inference)."""
    import onnx
    from onnx import shape_inference
    model = shape_inference.infer_shapes(onnx.load(model_path))
    g = model.graph
    shapes = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        dims = v.type.tensor_type.shape.dim
        shapes[v.name] = [d.dim_value if d.dim_value > 0 else 1 for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    macs = 0
    for n in g.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]  # [Cout, Cin/group, KH, KW]
            out = shapes[n.output[0]]  # [N, Cout, OH, OW]
            macs += int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            a, out = shapes[n.input[0]], shapes[n.output[0]]
            macs += int(np.prod(out)) * a[-1]
    return macs


def batch_model(model_path, out_path, batch):
    """The model with its input's and output's leading dimension set to `batch` (torchvision's
    ResNet flattens with Flatten, so nothing else holds the batch)."""
    import onnx
    model = onnx.load(model_path)
    for v in list(model.graph.input) + list(model.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = batch
    onnx.save(model, out_path)


def other_rows(bench_dir, testmodels_dir, batch4_model):
    """Batch 4 on the v3 configs, then ResNet-18 and MobileNetV2, as table rows."""
    rows = []
    if os.path.exists(batch4_model):
        macs = network_macs(batch4_model)
        for name, size in (("16x16-v3", 16), ("64x64-v3", 64)):
            path = os.path.join(bench_dir, name + "-b4", "run.json")
            if os.path.exists(path):
                rows.append(("resnet50 batch 4", "npu-" + name, size, macs, load(path)))
    for net in ("resnet18", "mobilenet_v2"):
        model = os.path.join(testmodels_dir, net + ".onnx")
        if not os.path.exists(model):
            continue
        macs = network_macs(model)
        for name, size in (("16x16", 16), ("16x16-v3", 16), ("64x64", 64), ("64x64-v3", 64)):
            path = os.path.join(bench_dir, f"{net}-{name}", "run.json")
            if os.path.exists(path):
                rows.append((net, "npu-" + name, size, macs, load(path)))
    return rows


# The configs of the switch sweep (npu_resnet50_bench.sh writes -q, -v3u, -v3p and -v3o).
SUFFIXES = ("", "-v2", "-q", "-v2q", "-v3u", "-v3p", "-v3o", "-v3")


def report(bench_dir, ort_seconds, fma_gflops, model_path, testmodels_dir=""):
    useful = network_macs(model_path)
    configs = {name + suffix: (size, size) for name, size in (("16x16", 16), ("64x64", 64))
               for suffix in SUFFIXES}
    rows = {}
    for name in configs:
        d = os.path.join(bench_dir, name)
        rows[name] = {"compile": load(os.path.join(d, "compile.json")), "run": load(os.path.join(d, "run.json")),
                      "sim": load(os.path.join(d, "sim.json"))}
    for name, r in rows.items():
        if "cycles" not in r["run"]:
            sys.exit(f"npu-{name}: the model did not run on the NPU (partitions {r['run'].get('partitions')}, "
                     f"{len(r['run'].get('fallback_nodes', []))} fallback nodes)")
    print(f"network MACs (Conv, Gemm, MatMul of {os.path.basename(model_path)}): {useful / 1e9:.3f} G\n")
    print("| config | cycles | latency @ clock | MAC utilisation | useful-MAC utilisation | MACs | DRAM MB "
          "| compile s | host simulation s | fallback nodes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    latency = {}
    summary = {"network_macs": useful, "configs": {}}
    for name, r in rows.items():
        run, sim, comp = r["run"], r["sim"], r["compile"]
        clock = sim.get("clock_ghz", 1.0)
        latency[name] = run["cycles"] / (clock * 1e9)
        dram = (run.get("dram_read_bytes", 0) + run.get("dram_write_bytes", 0)) / 1e6
        rr, cc = configs[name]
        useful_util = useful / (run["cycles"] * rr * cc)
        summary["configs"]["npu-" + name] = {
            "cycles": run["cycles"], "mac_utilization": run["mac_utilization"],
            "useful_mac_utilization": useful_util, "compile_seconds": comp["compile_seconds"],
            "host_seconds": sim["host_seconds"]}
        print(f"| npu-{name} | {run['cycles']} | {latency[name] * 1e3:.2f} ms @ {clock:g} GHz "
              f"| {100 * run['mac_utilization']:.1f}% | {100 * useful_util:.1f}% | {run['macs'] / 1e9:.2f} G | {dram:.1f} "
              f"| {comp['compile_seconds']:.2f} | {sim['host_seconds']:.2f} | {len(run.get('fallback_nodes', []))} |")
    extra = other_rows(bench_dir, testmodels_dir, os.path.join(os.path.dirname(model_path), "resnet50_b4.onnx"))
    if extra:
        print("\n| model | config | cycles | MAC utilisation | useful-MAC utilisation | compile s | host simulation s |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    summary["other_models"] = []
    for model, config, size, macs, run in extra:
        useful_util = macs / (run["cycles"] * size * size)
        summary["other_models"].append({"model": model, "config": config, "network_macs": macs, "cycles": run["cycles"],
                                        "useful_mac_utilization": useful_util,
                                        "compile_seconds": run.get("compile_seconds", 0),
                                        "host_seconds": run.get("host_seconds", 0)})
        print(f"| {model} | {config} | {run['cycles']} | {100 * run['mac_utilization']:.1f}% | {100 * useful_util:.1f}% "
              f"| {run.get('compile_seconds', 0):.2f} | {run.get('host_seconds', 0):.2f} |")
    with open(os.path.join(bench_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    for suffix in SUFFIXES:
        speedup = latency["16x16" + suffix] / latency["64x64" + suffix]
        print(f"\nspeed-up of npu-64x64{suffix} over npu-16x16{suffix}: {speedup:.2f}x (cycles, same clock)")
    print("\nthe switch sweep (cycles saved against the config without the feature):")
    for size in ("16x16", "64x64"):
        for base, feature, label in (("", "-v2", "two weight buffers"), ("-q", "-v2q", "two weight buffers"),
                                     ("", "-q", "the vector queue"), ("-v2", "-v2q", "the vector queue"),
                                     ("-v2q", "-v3u", "the bias as initial value"),
                                     ("-v3u", "-v3", "the residual add in the conv epilogue"),
                                     ("-v3p", "-v3", "the max pooling in the conv epilogue"),
                                     ("-v3o", "-v3", "the fused residual add out of place")):
            before = rows[size + base]["run"]["cycles"]
            saved = before - rows[size + feature]["run"]["cycles"]
            print(f"{label} on npu-{size}{base} -> npu-{size}{feature}: {saved} cycles saved "
                  f"({100 * saved / before:.1f}%)")
    macs = rows["16x16"]["run"]["macs"]
    fma_seconds = 2 * macs / (fma_gflops * 1e9)
    for name in rows:
        print(f"npu-{name} vs the CPU's FMA peak ({fma_gflops:g} GFLOP/s, {fma_seconds * 1e3:.1f} ms for the same "
              f"MACs): {fma_seconds / latency[name]:.2f}x")
        if ort_seconds > 0:
            print(f"npu-{name} vs ONNX Runtime f32 on this CPU (2 threads, {ort_seconds * 1e3:.1f} ms, measured now): "
                  f"{ort_seconds / latency[name]:.2f}x")
    for name, r in rows.items():
        layers = sorted(r["run"].get("layers", []), key=lambda l: -l["cycles"])
        total = max(1, r["run"]["cycles"])
        print(f"\nnpu-{name}: top layers by cycles ({len(layers)} layers)")
        print("| layer | op | shape | cycles | share | MAC util | DRAM KB | dominant stall |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
        for l in layers[:10]:
            stalls = l.get("stall_cycles", {})
            stall = max(stalls, key=stalls.get) if stalls and max(stalls.values()) > 0 else "-"
            print(f"| {l['name']} | {l['op']} | {l.get('shape', '')} | {l['cycles']} | {100 * l['cycles'] / total:.1f}% "
                  f"| {100 * l['mac_utilization']:.1f}% | {l['dram_bytes'] / 1e3:.0f} | {stall} |")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "calibration":
        calibration(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4)
        return 0
    if len(sys.argv) in (6, 7) and sys.argv[1] == "report":
        report(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6] if len(sys.argv) == 7 else "")
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "batch":
        batch_model(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
