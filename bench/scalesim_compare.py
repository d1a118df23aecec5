#!/usr/bin/python3
"""Ember's NPU against SCALE-Sim's compute-cycle formula on ResNet-50 (batch 1).

  scalesim_compare.py MODEL.onnx BENCH_DIR [OUT_DIR]

MODEL.onnx is the torchvision ResNet-50 the NPU bench runs (bench/gen_bench_models.py);
BENCH_DIR is bench/npu_resnet50_bench.sh's output directory (BUILD_DIR/bench/npu_resnet50),
whose CONFIG/run.json files hold Ember's per-layer cycles (`ember run --report-json`).

The script
  * derives the topology from the model's Conv and Gemm nodes (53 convs + fc, 4.089 G MACs)
    and writes it as SCALE-Sim's topology CSV (layer name, padded IFMAP height and width,
    filter height and width, channels, filters, stride) in OUT_DIR/resnet50.csv, with one
    SCALE-Sim config per array size (OUT_DIR/scale_16x16.cfg, scale_64x64.cfg: weight
    stationary, CALC interface bandwidth, i.e. SCALE-Sim's no-stall mode), so anyone with
    SCALE-Sim can rerun it;
  * computes SCALE-Sim's weight-stationary compute cycles per layer with the formula its
    authors document for a systolic array of R rows and C columns:
        cycles = folds * (OH*OW + 2R + C - 2) - 1,
        folds  = ceil(KH*KW*Cin / R) * ceil(Cout / C)
    (each fold: R cycles to load the weights, OH*OW input rows streamed, R + C - 2 cycles of
    skew to fill and drain; Samajdar et al., "A Systematic Methodology for Characterizing
    Scalability of DNN Accelerators using SCALE-Sim", ISPASS 2020, and
    github.com/scalesim-project/scale-sim-v2, compute/systolic_compute_ws.py). SCALE-Sim is
    not a dependency of this project (Debian packages only), so the formula is evaluated
    here; it is exactly what SCALE-Sim reports as compute cycles when no SRAM/DRAM stall
    occurs. Like SCALE-Sim it has no grouped convs, no requantization, pooling, residual
    adds or DRAM, and the fc is a 1x1 conv on a 1x1 image;
  * prints per layer Ember's cycles (npu-16x16*, npu-64x64* found in BENCH_DIR) beside the
    formula's, and the whole network: SCALE-Sim's sum over the 54 layers against Ember's
    total (which also includes requantization, pooling, residual adds and DRAM) and the
    ratio (goals: <= 0.92 on 16x16, <= 0.76 on 64x64).
"""
import configparser
import json
import math
import os
import sys

GOALS = {16: 0.92, 64: 0.76}


def conv_layers(model_path):
    """[(name, ih_padded, iw_padded, kh, kw, cin, cout, stride, oh, ow, macs)] of Conv and Gemm nodes."""
    import onnx
    from onnx import shape_inference
    model = shape_inference.infer_shapes(onnx.load(model_path))
    g = model.graph
    shapes = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        shapes[v.name] = [d.dim_value if d.dim_value > 0 else 1 for d in v.type.tensor_type.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    layers = []
    for n in g.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Conv":
            if attrs.get("group", 1) != 1:
                sys.exit(f"scalesim_compare: {n.name}: grouped conv has no SCALE-Sim topology row")
            cout, cin, kh, kw = shapes[n.input[1]]
            _, _, ih, iw = shapes[n.input[0]]
            _, _, oh, ow = shapes[n.output[0]]
            pads = attrs.get("pads", [0, 0, 0, 0])
            stride = attrs.get("strides", [1, 1])[0]
            layers.append((n.name, ih + pads[0] + pads[2], iw + pads[1] + pads[3], kh, kw, cin, cout, stride, oh, ow,
                           oh * ow * kh * kw * cin * cout))
        elif n.op_type in ("Gemm", "MatMul"):
            k = shapes[n.input[0]][-1]
            cout = shapes[n.output[0]][-1]
            layers.append((n.name, 1, 1, 1, 1, k, cout, 1, 1, 1, k * cout))
    return layers


def scalesim_ws_cycles(layer, rows, cols):
    _, _, _, kh, kw, cin, cout, _, oh, ow, _ = layer
    folds = math.ceil(kh * kw * cin / rows) * math.ceil(cout / cols)
    return folds * (oh * ow + 2 * rows + cols - 2) - 1


def write_scalesim_inputs(layers, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "resnet50.csv"), "w") as f:
        f.write("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n")
        for name, ih, iw, kh, kw, cin, cout, stride, *_ in layers:
            f.write(f"{name.strip('/').replace('/', '_')}, {ih}, {iw}, {kh}, {kw}, {cin}, {cout}, {stride},\n")
    for size in GOALS:
        cfg = configparser.ConfigParser()
        cfg.optionxform = str
        cfg["general"] = {"run_name": f"ember_resnet50_{size}x{size}"}
        cfg["architecture_presets"] = {
            "ArrayHeight": str(size), "ArrayWidth": str(size), "IfmapSramSzkB": "1024", "FilterSramSzkB": "1024",
            "OfmapSramSzkB": "1024", "IfmapOffset": "0", "FilterOffset": "10000000", "OfmapOffset": "20000000",
            "Dataflow": "ws", "Bandwidth": "64", "MemoryBanks": "1"}
        cfg["run_presets"] = {"InterfaceBandwidth": "CALC"}
        with open(os.path.join(out_dir, f"scale_{size}x{size}.cfg"), "w") as f:
            cfg.write(f)


def ember_runs(bench_dir):
    """{config name: run.json} for every npu-16x16* / npu-64x64* directory of the bench (batch 1:
    the -b4 runs are another workload)."""
    runs = {}
    for name in sorted(os.listdir(bench_dir)):
        path = os.path.join(bench_dir, name, "run.json")
        batch1 = not name.endswith("-b4")
        if (name.startswith("16x16") or name.startswith("64x64")) and batch1 and os.path.isfile(path):
            with open(path) as f:
                run = json.load(f)
            if "cycles" in run:
                runs[name] = run
    return runs


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    model_path, bench_dir = sys.argv[1], sys.argv[2]
    out_dir = sys.argv[3] if len(sys.argv) == 4 else os.path.join(bench_dir, "scalesim")
    layers = conv_layers(model_path)
    write_scalesim_inputs(layers, out_dir)
    runs = ember_runs(bench_dir)
    total_macs = sum(l[-1] for l in layers)
    print(f"topology: {len(layers)} layers ({sum(1 for l in layers if l[3] * l[4] * l[1] > 1)} convs + fc), "
          f"{total_macs / 1e9:.3f} G MACs; SCALE-Sim inputs in {out_dir}")
    print("SCALE-Sim cycles: the WS formula folds*(OH*OW + 2R + C - 2) - 1 (no-stall compute cycles)\n")
    summary = {"network_macs": total_macs, "sizes": {}}
    for size in GOALS:
        names = [n for n in runs if n.startswith(f"{size}x{size}")]
        scale = [scalesim_ws_cycles(l, size, size) for l in layers]
        header = " | ".join(f"npu-{n} | ratio" for n in names)
        print(f"### {size}x{size}\n")
        print(f"| layer | shape | folds | SCALE-Sim | {header} |")
        print("| --- | --- | ---: | ---: |" + " ---: | ---: |" * len(names))
        per_layer = {n: {l["name"]: l["cycles"] for l in runs[n].get("layers", [])} for n in names}
        for layer, sc in zip(layers, scale):
            name, _, _, kh, kw, cin, cout, stride, oh, ow, _ = layer
            folds = math.ceil(kh * kw * cin / size) * math.ceil(cout / size)
            cells = []
            for n in names:
                e = per_layer[n].get(name)
                cells.append(f"{e} | {e / sc:.2f}" if e is not None else "- | -")
            print(f"| {name} | {oh}x{ow}x{cout} <- {kh}x{kw}x{cin} s{stride} | {folds} | {sc} | {' | '.join(cells)} |")
        # The same per shape (ResNet repeats its blocks): count, sums, ratios.
        shapes = {}
        for layer, sc in zip(layers, scale):
            name, _, _, kh, kw, cin, cout, stride, oh, ow, _ = layer
            key = f"{oh}x{ow}x{cout} <- {kh}x{kw}x{cin} s{stride}"
            entry = shapes.setdefault(key, [0, 0] + [0] * len(names))
            entry[0] += 1
            entry[1] += sc
            for i, n in enumerate(names):
                entry[2 + i] += per_layer[n].get(name, 0)
        print(f"\n| shape | layers | SCALE-Sim | {header} |")
        print("| --- | ---: | ---: |" + " ---: | ---: |" * len(names))
        for key, entry in sorted(shapes.items(), key=lambda kv: -kv[1][1]):
            cells = " | ".join(f"{e} | {e / entry[1]:.2f}" for e in entry[2:])
            print(f"| {key} | {entry[0]} | {entry[1]} | {cells} |")
        total = sum(scale)
        util = total_macs / (total * size * size)
        print(f"\nSCALE-Sim {size}x{size}: {total} cycles, useful-MAC utilisation {100 * util:.1f} %")
        summary["sizes"][size] = {"scalesim_cycles": total, "scalesim_useful_mac_utilization": util, "ember": {}}
        for n in names:
            run = runs[n]
            conv_sum = sum(per_layer[n].get(l[0], 0) for l in layers)
            ratio = run["cycles"] / total
            verdict = "meets" if ratio <= GOALS[size] else "misses"
            print(f"npu-{n}: {run['cycles']} cycles in all ({conv_sum} in the convs and fc), "
                  f"{100 * total_macs / (run['cycles'] * size * size):.1f} % useful; "
                  f"{ratio:.3f}x SCALE-Sim ({verdict} the goal <= {GOALS[size]}x); convs and fc alone "
                  f"{conv_sum / total:.3f}x")
            summary["sizes"][size]["ember"]["npu-" + n] = {"cycles": run["cycles"], "conv_fc_cycles": conv_sum,
                                                          "ratio": ratio}
        print()
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
