#!/usr/bin/python3
"""Trains the small digits CNN of the int8 accuracy test and exports it with its data.

Usage: gen_digits_model.py [OUTDIR]   (default: examples/models next to this script)

scikit-learn's digits data set (1,797 real 8x8 handwritten digits, pixel values 0..16) is split
70/30 (stratified, fixed seed). A small CNN (conv 8, conv 16, max pool, fc 32, fc 10) is trained
with PyTorch on the 70% and exported to ONNX with a symbolic batch dimension "N". Writes:

  OUTDIR/digits.onnx                 the trained model; input "pixels" f32 [N,1,8,8] = value/16
  OUTDIR/digits.train.x.npy          training split, uint8 pixel values 0..16 [1257,1,8,8]
  OUTDIR/digits.heldout.x.npy        held-out split, uint8 [540,1,8,8]
  OUTDIR/digits.heldout.y.npy        held-out labels, uint8 [540]
  OUTDIR/digits.calibration.npy      the first 128 training images as f32 (value/16) [128,1,8,8],
                                     ready for `ember quantize --calibrate`

Pixels are stored as uint8 to keep the checked-in files small (tens of KB); value/16 is exact in
f32, so readers recover the model's inputs bit for bit. Deterministic: fixed seeds, one thread.
Test-data generation only: nothing in the product runs Python.
"""

import os
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


class DigitsNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc1 = torch.nn.Linear(16 * 4 * 4, 32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "examples", "models")
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)

    digits = load_digits()
    images = digits.images.astype(np.uint8)  # 0..16
    labels = digits.target.astype(np.uint8)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.3, random_state=0, stratify=labels)
    x_train = x_train[:, None, :, :]
    x_test = x_test[:, None, :, :]

    def to_input(x):
        return torch.from_numpy(x.astype(np.float32) / 16.0)

    model = DigitsNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = to_input(x_train), torch.from_numpy(y_train.astype(np.int64))
    generator = torch.Generator().manual_seed(0)
    for epoch in range(40):
        model.train()
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), 64):
            idx = order[start:start + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(to_input(x_test)).argmax(1).numpy() == y_test).mean()
    print(f"held-out accuracy (PyTorch f32): {accuracy * 100:.2f}% on {len(y_test)} images")

    torch.onnx.export(model, to_input(x_test[:1]), os.path.join(outdir, "digits.onnx"),
                      input_names=["pixels"], output_names=["logits"],
                      dynamic_axes={"pixels": {0: "N"}, "logits": {0: "N"}}, opset_version=13)
    np.save(os.path.join(outdir, "digits.train.x.npy"), x_train)
    np.save(os.path.join(outdir, "digits.heldout.x.npy"), x_test)
    np.save(os.path.join(outdir, "digits.heldout.y.npy"), y_test)
    np.save(os.path.join(outdir, "digits.calibration.npy"), x_train[:128].astype(np.float32) / 16.0)


if __name__ == "__main__":
    main()
