#!/usr/bin/python3
"""Exports the NPU model tests' reduced-resolution models and calibration data.

Usage: gen_npu_models.py OUTDIR

The NPU backend is checked bit for bit against the reference backend on the int8 versions of the
end-to-end models (tests/models/NpuModelTests.cpp). The CNNs are simulated cycle by cycle, so CI
uses a 64x64 input instead of 224x224 (same architecture and weights as scripts/gen_models.py).
For each model M in resnet18_64, mobilenet_v2_64 and transformer_encoder, writes
  OUTDIR/M.onnx          the model
  OUTDIR/M.calib.npy     8 calibration samples along the batch axis (float32)
  OUTDIR/M.input.npy     one test input (float32), not among the calibration samples

and copies the shipped digits CNN (examples/models) as digits.onnx with the first held-out digit as
digits.input.npy and the shipped calibration set as digits.calib.npy.

Deterministic; skips all work when OUTDIR/.stamp names the same versions and every file exists.
Test-data generation only: nothing in the product runs Python.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models  # noqa: E402  (same architectures and weights)

GENERATOR_VERSION = "gen_npu_models v2"
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "models")
CALIBRATION_SAMPLES = 8

MODELS = {
    "resnet18_64": (gen_models.make_resnet18, (1, 3, 64, 64)),
    "mobilenet_v2_64": (gen_models.make_mobilenet_v2, (1, 3, 64, 64)),
    "transformer_encoder": (gen_models.make_transformer_encoder, None),
}


def files_of(out_dir, name):
    return [os.path.join(out_dir, name + s) for s in (".onnx", ".calib.npy", ".input.npy")]


def export(out_dir, name, factory, shape):
    model, default_shape, opset = factory()
    model.eval()
    shape = shape or default_shape
    generator = torch.Generator().manual_seed(gen_models.hash_name(name))
    samples = torch.randn(CALIBRATION_SAMPLES + 1, *shape[1:], generator=generator)
    onnx_path, calib_path, input_path = files_of(out_dir, name)
    tmp_path = onnx_path + ".tmp"
    # With gradients enabled PyTorch exports the non-fused transformer path (as gen_models.py).
    with torch.enable_grad():
        torch.onnx.export(model, (samples[:1],), tmp_path, opset_version=opset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
    np.save(calib_path, samples[:CALIBRATION_SAMPLES].numpy().astype(np.float32))
    np.save(input_path, samples[CALIBRATION_SAMPLES:].numpy().astype(np.float32))
    os.replace(tmp_path, onnx_path)
    print(f"gen_npu_models: {name}: input {list(shape)}")


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out_dir = os.path.abspath(sys.argv[1])
    stamp_path = os.path.join(out_dir, ".stamp")
    stamp = f"{GENERATOR_VERSION} torch {torch.__version__}\n"
    files = [p for name in list(MODELS) + ["digits"] for p in files_of(out_dir, name)]
    if os.path.exists(stamp_path) and all(os.path.exists(p) for p in files):
        with open(stamp_path) as f:
            if f.read() == stamp:
                os.utime(stamp_path)
                print(f"gen_npu_models: {out_dir} is up to date")
                return 0
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name, (factory, shape) in MODELS.items():
        export(out_dir, name, factory, shape)
    digits_onnx, digits_calib, digits_input = files_of(out_dir, "digits")
    with open(os.path.join(EXAMPLES, "digits.onnx"), "rb") as src, open(digits_onnx, "wb") as dst:
        dst.write(src.read())
    np.save(digits_calib, np.load(os.path.join(EXAMPLES, "digits.calibration.npy")).astype(np.float32))
    np.save(digits_input, np.load(os.path.join(EXAMPLES, "digits.heldout.x.npy"))[:1].astype(np.float32))
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
