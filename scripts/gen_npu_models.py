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

It also exports the zoo models of ZOO (tests/models/zoo_models.py, same weights as
`gen_models.py --zoo`) as zoo_M, with per-input files (a zoo model may have several inputs):
  OUTDIR/zoo_M.onnx             the model
  OUTDIR/zoo_M.calib.NAME.npy   8 calibration samples of input NAME along the batch axis
  OUTDIR/zoo_M.in.NAME.npy      one test value of input NAME, not among the calibration samples
Float inputs are drawn from N(0, 1); int64 inputs (token ids, attention masks) are the zoo
example's values permuted along the last axis, so they stay valid ids and masks.

Deterministic; skips all work when OUTDIR/.stamp names the same versions and every file exists.
Test-data generation only: nothing in the product runs Python.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models  # noqa: E402  (same architectures and weights)
import zoo_models  # noqa: E402  (on the path gen_models set: tests/models)

GENERATOR_VERSION = "gen_npu_models v3"
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "models")
CALIBRATION_SAMPLES = 8

MODELS = {
    "resnet18_64": (gen_models.make_resnet18, (1, 3, 64, 64)),
    "mobilenet_v2_64": (gen_models.make_mobilenet_v2, (1, 3, 64, 64)),
    "transformer_encoder": (gen_models.make_transformer_encoder, None),
}


# The zoo models quantized for the npu: CNNs, attention and recurrent models (tests/models/CMakeLists.txt
# calibrates each, NpuModelTests.cpp runs each).
ZOO = ["unet", "audio_conv1d", "regnet_y", "efficientnet_v2", "resnext", "mobilenet_v3", "convnext", "lraspp", "fcn",
       "deeplabv3", "r3d", "vit", "maxvit", "swin", "mha", "gpt", "bert", "lstm_gru"]


def zoo_files_of(out_dir, name):
    zoo = zoo_models.ZOO[name]()
    base = os.path.join(out_dir, "zoo_" + name)
    return [base + ".onnx"] + [base + f".{kind}.{input}.npy" for input in zoo.input_names for kind in ("calib", "in")]


def export_zoo(out_dir, name):
    zoo = zoo_models.ZOO[name]()
    generator = torch.Generator().manual_seed(gen_models.hash_name("zoo_npu_" + name))
    base = os.path.join(out_dir, "zoo_" + name)
    for input_name, example in zip(zoo.input_names, zoo.inputs):
        if example.dtype == torch.int64:
            samples = torch.cat([example[..., torch.randperm(example.shape[-1], generator=generator)]
                                 for _ in range(CALIBRATION_SAMPLES + 1)])
        else:
            samples = torch.randn((CALIBRATION_SAMPLES + 1) * example.shape[0], *example.shape[1:],
                                  generator=generator)
        batch = example.shape[0]
        np.save(f"{base}.calib.{input_name}.npy", samples[:CALIBRATION_SAMPLES * batch].numpy())
        np.save(f"{base}.in.{input_name}.npy", samples[CALIBRATION_SAMPLES * batch:].numpy())
    tmp_path = base + ".onnx.tmp"
    with torch.enable_grad():
        torch.onnx.export(zoo.model, zoo.inputs, tmp_path, opset_version=zoo.opset, input_names=zoo.input_names,
                          output_names=["output"], do_constant_folding=True)
    os.replace(tmp_path, base + ".onnx")
    print(f"gen_npu_models: zoo_{name}: inputs {[list(v.shape) for v in zoo.inputs]}")


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
    stamp = f"{GENERATOR_VERSION} torch {torch.__version__} zoo {gen_models.zoo_stamp_text()}"
    files = [p for name in list(MODELS) + ["digits"] for p in files_of(out_dir, name)]
    files += [p for name in ZOO for p in zoo_files_of(out_dir, name)]
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
    for name in ZOO:
        export_zoo(out_dir, name)
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
