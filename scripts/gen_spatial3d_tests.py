#!/usr/bin/python3
"""Exports the 3-D spatial op test cases (tests/spatial3d) with PyTorch and saves PyTorch's outputs.

Usage: gen_spatial3d_tests.py OUTDIR

For each case C (torch.nn.Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, BatchNorm3d,
InstanceNorm3d and a small R3D-style video network), writes
  OUTDIR/C.onnx         the module in eval mode, exported at opset 13
  OUTDIR/C.input.npy    its float32 input [N, C, D, H, W]
  OUTDIR/C.output.npy   PyTorch's float32 output for that input
LpPool and GlobalLpPool (which PyTorch does not export as such) are built with onnx.helper, their
outputs computed in float64 by numpy from the operator's definition (LP_CASES), same files;
and, for each case of INVALID (built with onnx.helper: attributes PyTorch would refuse), only
  OUTDIR/C.onnx         a model Ember must reject with a one-line error

Deterministic: every case has its own seed, on one thread. Skips all work when OUTDIR/.stamp
names the same generator and torch versions and every file exists.

Test-data generation only: nothing in the product runs Python.
"""

import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper
from torch import nn

GENERATOR_VERSION = "gen_spatial3d_tests v5"


def random_batchnorm(bn: nn.Module, generator: torch.Generator) -> None:
    """Non-trivial statistics and affine parameters (a fresh BatchNorm is an identity)."""
    n = bn.num_features
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(n, generator=generator) * 0.3)
        bn.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
        bn.weight.copy_(torch.rand(n, generator=generator) + 0.5)
        bn.bias.copy_(torch.randn(n, generator=generator) * 0.3)


class MiniR3D(nn.Module):
    """R3D / MC3 / R(2+1)D in miniature: a (3, 7, 7) stem, BatchNorm3d, MaxPool3d, a residual
    block with a strided downsample, a (2+1)-D factorised block and AdaptiveAvgPool3d."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU())
        self.pool = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))
        self.conv1 = nn.Sequential(nn.Conv3d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm3d(16), nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv3d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm3d(16))
        self.down = nn.Sequential(nn.Conv3d(8, 16, 1, 2, bias=False), nn.BatchNorm3d(16))
        self.spatial = nn.Sequential(nn.Conv3d(16, 12, (1, 3, 3), 1, (0, 1, 1), bias=False),
                                     nn.BatchNorm3d(12), nn.ReLU())
        self.temporal = nn.Conv3d(12, 16, (3, 1, 1), 1, (1, 0, 0), bias=False)
        self.head = nn.Sequential(nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = torch.relu(self.conv2(self.conv1(x)) + self.down(x))
        x = torch.relu(self.temporal(self.spatial(x)) + x)
        return self.head(x)


# name -> (module factory, input shape)
CASES = {
    "conv3d_padded": (lambda: nn.Conv3d(3, 4, 3, padding=1), (1, 3, 5, 6, 7)),
    "conv3d_strided_dilated": (lambda: nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(2, 1, 0),
                                                 dilation=(2, 1, 1)), (2, 4, 9, 7, 8)),
    "conv3d_groups_nobias": (lambda: nn.Conv3d(6, 4, (2, 3, 3), stride=(1, 2, 1), padding=(1, 0, 1),
                                               groups=2, bias=False), (1, 6, 5, 7, 6)),
    "conv3d_depthwise_cube": (lambda: nn.Conv3d(6, 6, 3, padding=1, groups=6), (1, 6, 6, 6, 6)),
    "convtranspose3d_strided": (lambda: nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1, output_padding=1),
                                (1, 4, 3, 4, 5)),
    "convtranspose3d_groups_dilated": (lambda: nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(3, 1, 2),
                                                                  padding=(0, 1, 1), output_padding=(1, 0, 1),
                                                                  dilation=(2, 1, 1), groups=2),
                                       (2, 4, 3, 4, 4)),
    "convtranspose3d_cropped": (lambda: nn.ConvTranspose3d(3, 2, (4, 2, 3), stride=(2, 2, 1), padding=(3, 0, 1),
                                                           bias=False), (1, 3, 4, 3, 5)),
    "maxpool3d_ceil": (lambda: nn.MaxPool3d((2, 3, 3), stride=2, padding=1, ceil_mode=True), (1, 3, 7, 8, 9)),
    "maxpool3d_dilated": (lambda: nn.MaxPool3d(3, stride=(1, 2, 2), padding=(0, 1, 1), dilation=(2, 1, 2)),
                          (2, 2, 8, 7, 9)),
    "avgpool3d_count_pad_ceil": (lambda: nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True,
                                                      count_include_pad=True), (1, 3, 6, 7, 8)),
    "avgpool3d_no_count_pad": (lambda: nn.AvgPool3d((3, 2, 3), stride=(2, 2, 1), padding=(1, 1, 1),
                                                    count_include_pad=False), (2, 2, 7, 6, 5)),
    "avgpool3d_depth_only": (lambda: nn.AvgPool3d((3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)), (1, 4, 7, 3, 5)),
    # D = 4 while H and W pool to 3 and 2: the output depth must come from the window, not a dim
    "maxpool3d_planar_only": (lambda: nn.MaxPool3d((1, 2, 2), stride=(1, 2, 2)), (2, 3, 4, 6, 5)),
    "batchnorm3d": (lambda: nn.BatchNorm3d(5), (2, 5, 3, 4, 6)),
    "instancenorm3d": (lambda: nn.InstanceNorm3d(4, affine=True), (2, 4, 3, 5, 4)),
    "mini_r3d": (MiniR3D, (1, 3, 8, 32, 32)),
}


def lp_reference(x: np.ndarray, kernel, strides, pads, p: int) -> np.ndarray:
    """LpPool by its definition: (sum over the window of |x|^p)^(1/p), the padding as zeros."""
    n = len(kernel)
    powered = np.abs(x.astype(np.float64)) ** p
    padded = np.pad(powered, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)])
    outs = [(x.shape[2 + i] + pads[i] + pads[i + n] - kernel[i]) // strides[i] + 1 for i in range(n)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    for index in np.ndindex(*outs):
        window = tuple(slice(index[i] * strides[i], index[i] * strides[i] + kernel[i]) for i in range(n))
        y[(Ellipsis,) + index] = padded[(Ellipsis,) + window].sum(axis=tuple(range(2, 2 + n)))
    return (y ** (1.0 / p)).astype(np.float32)


# name -> (op, input shape, attributes); GlobalLpPool reduces every spatial axis
LP_CASES = {
    "lppool1d_p1": ("LpPool", (2, 2, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1], p=1)),
    "lppool2d_p2": ("LpPool", (1, 3, 7, 8), dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=2)),
    "lppool3d_p3": ("LpPool", (1, 2, 5, 6, 4), dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2],
                                                    pads=[1, 1, 0, 0, 1, 1], p=3)),
    "globallppool2d_p2": ("GlobalLpPool", (2, 3, 4, 5), dict(p=2)),
    "globallppool3d_p3": ("GlobalLpPool", (1, 2, 3, 4, 5), dict(p=3)),
}


def export_lp(name: str, op: str, shape, attrs, outdir: str, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    node = helper.make_node(op, ["input"], ["output"], name=name, **attrs)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]),
              os.path.join(outdir, name + ".onnx"))
    if op == "LpPool":
        y = lp_reference(x, attrs["kernel_shape"], attrs["strides"], attrs["pads"], attrs["p"])
    else:
        p = attrs["p"]
        y = (np.sum(np.abs(x.astype(np.float64)) ** p, axis=tuple(range(2, x.ndim)), keepdims=True) ** (1 / p))
    np.save(os.path.join(outdir, name + ".input.npy"), x)
    np.save(os.path.join(outdir, name + ".output.npy"), y.astype(np.float32))


def invalid_model(op: str, x_shape, w_shape=None, **attrs) -> onnx.ModelProto:
    """One `op` node on input x (and constant filter w), float32, opset 13."""
    inputs = ["x"] + (["w"] if w_shape else [])
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w_shape, np.zeros(w_shape, np.float32).ravel())] \
        if w_shape else []
    node = helper.make_node(op, inputs, ["y"], name="bad", **attrs)
    graph = helper.make_graph([node], "invalid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


# name -> model; tests/spatial3d expects each to fail to import, naming the node
INVALID = {
    "invalid_conv3d_kernel_deeper_than_input": lambda: invalid_model("Conv", [1, 2, 2, 4, 4], [3, 2, 4, 3, 3]),
    "invalid_convtranspose3d_pads_crop_all": lambda: invalid_model("ConvTranspose", [1, 2, 1, 3, 3], [2, 2, 1, 1, 1],
                                                                   pads=[1, 0, 0, 0, 0, 0]),
    "invalid_maxpool_rank6": lambda: invalid_model("MaxPool", [1, 2, 2, 2, 2, 2], kernel_shape=[1, 1, 1, 1]),
}


def export(name: str, factory, shape, outdir: str, seed: int) -> None:
    torch.manual_seed(seed)
    module = factory()
    generator = torch.Generator().manual_seed(seed + 1)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm3d):
            random_batchnorm(m, generator)
        if isinstance(m, nn.InstanceNorm3d):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=generator) * 0.3)
    module.eval()
    x = torch.randn(*shape, generator=generator)
    with torch.no_grad():
        y = module(x)
    path = os.path.join(outdir, name)
    torch.onnx.export(module, x, path + ".onnx", input_names=["input"], output_names=["output"],
                      opset_version=13)
    np.save(path + ".input.npy", x.numpy().astype(np.float32))
    np.save(path + ".output.npy", y.numpy().astype(np.float32))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    stamp = os.path.join(outdir, ".stamp")
    version = f"{GENERATOR_VERSION} torch {torch.__version__}\n"
    files = [os.path.join(outdir, n + s) for n in list(CASES) + list(LP_CASES)
             for s in (".onnx", ".input.npy", ".output.npy")]
    files += [os.path.join(outdir, n + ".onnx") for n in INVALID]
    if os.path.exists(stamp) and open(stamp).read() == version and all(map(os.path.exists, files)):
        return 0
    torch.set_num_threads(1)
    for index, (name, (factory, shape)) in enumerate(CASES.items()):
        export(name, factory, shape, outdir, 3300 + 10 * index)
    for index, (name, (op, shape, attrs)) in enumerate(LP_CASES.items()):
        export_lp(name, op, shape, attrs, outdir, 3900 + index)
    for name, make in INVALID.items():
        onnx.save(make(), os.path.join(outdir, name + ".onnx"))
    with open(stamp, "w") as f:
        f.write(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
