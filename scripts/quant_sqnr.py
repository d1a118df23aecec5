#!/usr/bin/python3
"""Measures the SQNR of int8 against f32 outputs for the larger test models, per schema.

Usage: quant_sqnr.py EMBER MODELDIR [WORKDIR] [MODEL...]

MODELDIR holds M.onnx and M.input.npy from scripts/gen_models.py (resnet18, mobilenet_v2,
transformer_encoder). For each model: calibrate with `ember quantize` on 8 inputs drawn like the
test input (standard normal, fixed seed), then run the f32 model and the int8 model on
M.input.npy with `ember run` (reference backend) and print
SQNR = 10 log10(sum y^2 / sum (y - y_int8)^2) as a Markdown table.
Measurement only: nothing in the product runs Python.
"""

import os
import subprocess
import sys

import numpy as np

CONFIGS = [
    ("asymmetric", "minmax", False),
    ("asymmetric", "minmax", True),
    ("symmetric", "minmax", True),
    ("symmetric-power2", "minmax", True),
    ("asymmetric", "percentile", True),
    ("asymmetric", "kl", True),
]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + result.stderr)
    return result


def output_of(out_dir):
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    return np.load(os.path.join(out_dir, files[0])).astype(np.float64)


def main():
    ember, model_dir = sys.argv[1], sys.argv[2]
    work = sys.argv[3] if len(sys.argv) > 3 else "/tmp/ember_quant_sqnr"
    models = sys.argv[4:] or ["resnet18", "mobilenet_v2", "transformer_encoder"]
    os.makedirs(work, exist_ok=True)
    print("| model | schema | calibration | weights | SQNR (dB) | float nodes |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for name in models:
        onnx = os.path.join(model_dir, name + ".onnx")
        x = np.load(os.path.join(model_dir, name + ".input.npy"))
        rng = np.random.default_rng(1234)
        calib = rng.standard_normal((8 * x.shape[0],) + x.shape[1:]).astype(np.float32)
        calib_path = os.path.join(work, name + ".calib.npy")
        np.save(calib_path, calib)
        input_path = os.path.join(model_dir, name + ".input.npy")
        f32_dir = os.path.join(work, name + ".f32")
        run([ember, "run", onnx, "--input", input_path, "--output-dir", f32_dir, "--quiet"])
        reference = output_of(f32_dir)
        for schema, method, per_channel in CONFIGS:
            tag = f"{name}.{schema}.{method}.{'pc' if per_channel else 'pt'}"
            profile = os.path.join(work, tag + ".yaml")
            cmd = [ember, "quantize", onnx, "--calibrate", calib_path, "-o", profile, "--schema", schema,
                   "--calibration", method, "--quiet"]
            if per_channel:
                cmd.append("--per-channel")
            run(cmd)
            out_dir = os.path.join(work, tag)
            report = os.path.join(work, tag + ".json")
            run([ember, "run", onnx, "--input", input_path, "--quantize", profile, "--output-dir", out_dir,
                 "--report-json", report, "--quiet"])
            y = output_of(out_dir)
            noise = np.sum((reference - y) ** 2)
            sqnr = 10 * np.log10(np.sum(reference ** 2) / max(noise, 1e-30))
            import json
            floats = len(json.load(open(report))["float_nodes"])
            print(f"| {name} | {schema} | {method} | {'per-channel' if per_channel else 'per-tensor'} | "
                  f"{sqnr:.1f} | {floats} |", flush=True)


if __name__ == "__main__":
    main()
