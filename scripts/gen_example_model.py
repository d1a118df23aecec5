#!/usr/bin/python3
"""Exports the tiny CNN shipped in examples/models/ for the README demo.

Usage: gen_example_model.py [OUTDIR]   (default: examples/models next to this script's repo)

Writes OUTDIR/tiny_cnn.onnx (opset 13, input "input" 1x3x16x16, output "output" 1x10),
OUTDIR/tiny_cnn.input.npy and OUTDIR/tiny_cnn.output.npy (PyTorch's output, float32).
The outputs are checked in; rerun only when the model should change. Deterministic.
"""

import os
import sys

import numpy as np
import torch


class TinyCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, kernel_size=3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))  # 16x16 -> 8x8
        x = self.pool(torch.relu(self.conv2(x)))  # 8x8 -> 4x4
        return self.fc(torch.flatten(x, 1))


def main() -> int:
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) == 2 else os.path.join(repo, "examples", "models")
    os.makedirs(out_dir, exist_ok=True)

    torch.set_num_threads(1)
    torch.manual_seed(16)
    model = TinyCnn().eval()
    example = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(17))
    with torch.no_grad():
        golden = model(example)

    onnx_path = os.path.join(out_dir, "tiny_cnn.onnx")
    torch.onnx.export(model, (example,), onnx_path, opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    np.save(os.path.join(out_dir, "tiny_cnn.input.npy"), example.numpy().astype(np.float32))
    np.save(os.path.join(out_dir, "tiny_cnn.output.npy"), golden.numpy().astype(np.float32))
    print(f"gen_example_model: {onnx_path}: {os.path.getsize(onnx_path)} bytes, output {list(golden.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
