#!/usr/bin/python3
"""Exports the benchmark-only models (random weights) with PyTorch.

Usage: gen_bench_models.py OUTDIR
Writes OUTDIR/resnet50.onnx and OUTDIR/densenet121.onnx (batch 1, 224x224,
opset 13), skipping files that exist. The test models (resnet18, mobilenet_v2,
transformer_encoder) come from scripts/gen_models.py.
Benchmark data only: nothing in the product runs Python.
"""
import os
import sys

import torch
import torchvision


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for name in ("resnet50", "densenet121"):
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            continue
        torch.manual_seed(5001)
        model = getattr(torchvision.models, name)(weights=None).eval()
        torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=13,
                          input_names=["input"], output_names=["output"])
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
