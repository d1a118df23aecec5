"""The difftest operator table: for every op of the spec language, how to
draw its parameters, infer its result, and build it as PyTorch code or as
ONNX nodes. This file holds the base class and helpers; the ops live in
ops_elementwise.py, ops_nn.py, ops_reduce.py and ops_tensor.py.

An op is resolved against the shapes of its operands (`infer`): parameters
that depend on shapes (slice fractions, gather indices, group counts) are
clamped or reduced to valid values there, so a spec whose input shapes were
shrunk by the minimiser still builds when it can; `Invalid` says it cannot.
Weights come from the op's own seed and the resolved shapes, so both
builders see the same numbers.
"""

import os

import numpy as np


class Invalid(Exception):
    """The op cannot be built on these operand shapes."""


F, I64, BOOL = "f", "i", "b"


class Val:
    """A value's static type during building: shape tuple and dtype letter."""

    def __init__(self, shape, dtype=F, separated=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        # separated: a graph input whose values sit far from integers and from
        # each other, so discontinuous ops (floor, argmax, comparisons) are
        # stable under rounding differences.
        self.separated = separated

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1


MAX_ELEMENTS = 6144


def _known_wrong_answers():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_wrong_answers.txt")
    with open(path) as f:
        return {line.split("#")[0].strip() for line in f} - {""}


# Op variants with reported, unfixed wrong answers (known_wrong_answers.txt):
# not drawn; generate.py --with-known-bugs empties the set.
KNOWN_WRONG = _known_wrong_answers()


def check_size(shape):
    if any(d <= 0 for d in shape):
        raise Invalid("empty dimension")
    if int(np.prod(shape)) > MAX_ELEMENTS:
        raise Invalid("too large")
    return tuple(shape)


def broadcast(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise Invalid("shapes do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def wrng(p, salt=0):
    return np.random.default_rng(int(p.get("seed", 0)) * 7919 + salt)


def normal(p, shape, scale=1.0, salt=0):
    return (wrng(p, salt).standard_normal(shape) * scale).astype(np.float32)


def uniform(p, shape, lo, hi, salt=0):
    return wrng(p, salt).uniform(lo, hi, shape).astype(np.float32)


def const_shape(lhs_shape, keep, rank):
    """A broadcast-compatible shape: the last `rank` dims of lhs, with the
    axes where keep is 0 set to 1."""
    rank = min(rank, len(lhs_shape))
    tail = lhs_shape[len(lhs_shape) - rank:]
    return tuple(d if k else 1 for d, k in zip(tail, (keep + [1] * rank)[:rank]))


def axis_of(axis, rank):
    if rank == 0:
        raise Invalid("rank 0")
    return axis % rank


# ---------------------------------------------------------------------------
# Base


class Op:
    name = ""
    builders = ("torch", "onnx")
    min_opset = 7
    separated_only = False  # discontinuous: operand must be a separated input
    dtypes = (F,)  # accepted dtype of operand 0
    ranks = range(0, 7)
    weight = 1.0

    def applicable(self, a, builder, opset):
        return (builder in self.builders and opset >= self.min_opset and a.dtype in self.dtypes and
                a.rank in self.ranks and (a.separated or not self.separated_only))

    def draw(self, g, a):
        """Parameters for operand `a` (and extra operand refs): (extra_refs, p) or None."""
        return [], {}

    def infer(self, p, ins):
        """(result Val, resolved params, weights dict)."""
        raise NotImplementedError

    def torch(self, r, w, *xs):
        raise NotImplementedError

    def onnx(self, r, w, e, *names):
        raise NotImplementedError



def _t():
    import torch
    import torch.nn.functional as tf
    return torch, tf


# Draw order (the generator's op choice depends on it, so a seed keeps its models).
ORDER = ["Binary", "Variadic", "PRelu", "WhereCompare", "CastRoundTrip", "MatMul", "Gemm", "Conv", "ConvTranspose", "Pool",
         "GlobalPool", "Resize", "Upsample", "BatchNorm", "InstanceNorm", "LayerNorm", "Softmax", "Reduce", "ArgReduce",
         "TopK", "Transpose", "Reshape", "Concat", "Slice", "Split", "Pad", "Tile", "Expand", "Gather", "DepthSpace",
         "ShapeOps", "Mod", "InverseTrig", "NanInf", "GatherElements", "ScatterElements", "GatherScatterND", "Trilu",
         "EyeLikeAdd", "OneHotMatMul", "Hardmax", "ReverseSequence", "Lrn", "TrainingDropout", "Einsum", "IntArith",
         "Rnn"]
# Ops imported later, drawn from specgen's second random stream (LATE_RATE) so
# that a seed that draws none of them keeps its spec; append only.
LATE_ORDER = ["GridSample", "ResizeCubic", "BatchNormTraining", "LayerNormStats", "Mvn", "Det", "Loss", "CumSum",
              "Compress", "MaxUnpool", "Window", "Dft", "Stft", "IntPow", "RnnOnnx", "F64Chain",
              "Spatial3d", "ValueDependentConst", "QuantRoundTrip", "QLinearOps", "ResizeDown", "MaxPoolIndices",
              "RoiAlign", "MaskedSoftmax", "ResidualConv", "ConvBnRelu", "AttentionGelu",
              "ConvPoolMatMul", "StemConv", "StemConvPool"]


def all_ops():
    """Every op of the spec language by name: the unary ops, ORDER, then LATE_ORDER."""
    import ops_elementwise
    import ops_nn
    import ops_reduce
    import ops_tensor
    unaries = ops_elementwise.unary_ops()
    others = {type(op).__name__: op for module in (ops_elementwise, ops_nn, ops_reduce, ops_tensor)
              for op in module.ops()}
    import ops_bounded
    late = {type(op).__name__: op for module in (ops_elementwise, ops_nn, ops_reduce, ops_tensor, ops_bounded)
            if hasattr(module, "late_ops") for op in module.late_ops()}
    assert set(others) == set(ORDER), set(others) ^ set(ORDER)
    assert set(late) == set(LATE_ORDER), set(late) ^ set(LATE_ORDER)
    return {op.name: op for op in unaries + [others[name] for name in ORDER] + [late[name] for name in LATE_ORDER]}


def late_op_names():
    """The spec names of LATE_ORDER's ops, in that order."""
    names = list(all_ops())
    return names[len(names) - len(LATE_ORDER):]
