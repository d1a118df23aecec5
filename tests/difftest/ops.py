"""The difftest operator table: for every op of the spec language, how to
draw its parameters, infer its result, and build it as PyTorch code or as
ONNX nodes.

An op is resolved against the shapes of its operands (`infer`): parameters
that depend on shapes (slice fractions, gather indices, group counts) are
clamped or reduced to valid values there, so a spec whose input shapes were
shrunk by the minimiser still builds when it can; `Invalid` says it cannot.
Weights come from the op's own seed and the resolved shapes, so both
builders see the same numbers.
"""

import math
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


# ---------------------------------------------------------------------------
# Elementwise unary


def _t():
    import torch
    import torch.nn.functional as tf
    return torch, tf


class Unary(Op):
    weight = 0.3  # there are many; together about as likely as a binary op
    # name: (torch(x, r), onnx(e, x, r) -> name, param drawer)
    table = {}

    def __init__(self, name, builders, torch_fn, onnx_fn, params=None, min_opset=7, separated=False):
        self.name = name
        self.builders = builders
        self.torch_fn = torch_fn
        self.onnx_fn = onnx_fn
        self.params = params or (lambda rng: {})
        self.min_opset = min_opset
        self.separated_only = separated

    def draw(self, g, a):
        return [], self.params(g.rng)

    def infer(self, p, ins):
        a = ins[0]
        return Val(a.shape), dict(p), {}

    def torch(self, r, w, x):
        return self.torch_fn(x, r)

    def onnx(self, r, w, e, x):
        return self.onnx_fn(e, x, r)


def _clip_onnx(e, x, lo, hi):
    if e.opset >= 11:
        return e.node("Clip", [x, e.scalar(lo), e.scalar(hi)])
    return e.node("Clip", [x], min=float(lo), max=float(hi))


def _clip_min_onnx(e, x, lo):
    if e.opset >= 11:
        return e.node("Clip", [x, e.scalar(lo)])
    return e.node("Clip", [x], min=float(lo))


def _unaries():
    torch, tf = _t()
    T, O, TO = ("torch",), ("onnx",), ("torch", "onnx")
    u = []

    def simple(name, torch_fn, onnx_type, **kw):
        u.append(Unary(name, TO, lambda x, r: torch_fn(x), lambda e, x, r: e.node(onnx_type, [x]), **kw))

    simple("relu", torch.relu, "Relu")
    simple("sigmoid", torch.sigmoid, "Sigmoid")
    simple("tanh", torch.tanh, "Tanh")
    simple("abs", torch.abs, "Abs")
    simple("neg", torch.neg, "Neg")
    simple("erf", torch.erf, "Erf")
    simple("sin", torch.sin, "Sin")
    simple("cos", torch.cos, "Cos")
    # While Softplus's f32 precision bug is open (known_wrong_answers.txt), its
    # input is clamped to >= -5, where log(1 + exp(x)) keeps 1e-5.
    guard = lambda rng: {"guard": int("softplus" in KNOWN_WRONG)}
    u.append(Unary("softplus", TO, lambda x, r: tf.softplus(torch.clamp(x, min=-5.0) if r.get("guard") else x),
                   lambda e, x, r: e.node("Softplus", [_clip_min_onnx(e, x, -5.0) if r.get("guard") else x]), guard))
    simple("softsign", tf.softsign, "Softsign")
    simple("floor", torch.floor, "Floor", separated=True)
    simple("ceil", torch.ceil, "Ceil", separated=True)
    simple("sign", torch.sign, "Sign", separated=True)
    # Guarded domains: exp of a clipped value, log/sqrt/reciprocal of a positive one.
    u.append(Unary("exp", TO, lambda x, r: torch.exp(torch.clamp(x, -10, 10)),
                   lambda e, x, r: e.node("Exp", [_clip_onnx(e, x, -10, 10)])))
    u.append(Unary("log", TO, lambda x, r: torch.log(torch.abs(x) + 1),
                   lambda e, x, r: e.node("Log", [e.node("Add", [e.node("Abs", [x]), e.scalar(1.0)])])))
    u.append(Unary("sqrt", TO, lambda x, r: torch.sqrt(torch.abs(x) + 0.01),
                   lambda e, x, r: e.node("Sqrt", [e.node("Add", [e.node("Abs", [x]), e.scalar(0.01)])])))
    u.append(Unary("reciprocal", TO, lambda x, r: torch.reciprocal(torch.abs(x) + 0.5),
                   lambda e, x, r: e.node("Reciprocal", [e.node("Add", [e.node("Abs", [x]), e.scalar(0.5)])])))
    alpha = lambda rng: {"alpha": float(rng.choice([0.01, 0.2, 1.0, 1.7]))}
    u.append(Unary("leaky_relu", TO, lambda x, r: tf.leaky_relu(x, r["alpha"]),
                   lambda e, x, r: e.node("LeakyRelu", [x], alpha=r["alpha"]), alpha))
    u.append(Unary("elu", TO, lambda x, r: tf.elu(x, r["alpha"]),
                   lambda e, x, r: e.node("Elu", [x], alpha=r["alpha"]), alpha))
    u.append(Unary("celu", TO, lambda x, r: tf.celu(x, r["alpha"]),
                   lambda e, x, r: e.node("Celu", [x], alpha=r["alpha"]), alpha, min_opset=12))
    u.append(Unary("selu", TO, lambda x, r: tf.selu(x), lambda e, x, r: e.node("Selu", [x])))
    u.append(Unary("hardsigmoid", TO, lambda x, r: tf.hardsigmoid(x),
                   lambda e, x, r: e.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5)))
    u.append(Unary("hardswish", TO, lambda x, r: tf.hardswish(x),
                   lambda e, x, r: e.node("HardSwish", [x]), min_opset=14))
    u.append(Unary("hardtanh", T, lambda x, r: tf.hardtanh(x, -r["lim"], r["lim"]), None,
                   lambda rng: {"lim": float(rng.choice([0.5, 1.0, 6.0]))}))
    u.append(Unary("gelu", T, lambda x, r: tf.gelu(x, approximate=r["approx"]), None,
                   lambda rng: {"approx": str(rng.choice(["none", "tanh"]))}))
    u.append(Unary("mish", T, lambda x, r: tf.mish(x), None))
    u.append(Unary("silu", T, lambda x, r: tf.silu(x), None))
    bounds = lambda rng: {"lo": float(rng.choice([-1.0, -0.5, 0.0])), "hi": float(rng.choice([0.5, 1.0, 6.0]))}
    u.append(Unary("clip", TO, lambda x, r: torch.clamp(x, r["lo"], r["hi"]),
                   lambda e, x, r: _clip_onnx(e, x, r["lo"], r["hi"]), bounds))
    u.append(Unary("tan", O, None, lambda e, x, r: e.node("Tan", [_clip_onnx(e, x, -1.2, 1.2)])))
    u.append(Unary("sinh", O, None, lambda e, x, r: e.node("Sinh", [_clip_onnx(e, x, -5, 5)])))
    u.append(Unary("cosh", O, None, lambda e, x, r: e.node("Cosh", [_clip_onnx(e, x, -5, 5)])))
    u.append(Unary("thresholded_relu", O, None, lambda e, x, r: e.node("ThresholdedRelu", [x], alpha=r["alpha"]),
                   lambda rng: {"alpha": float(rng.choice([0.1, 0.5, 1.0]))}, min_opset=10, separated=True))
    u.append(Unary("shrink", O, None, lambda e, x, r: e.node("Shrink", [x], lambd=r["lambd"], bias=r["bias"]),
                   lambda rng: {"lambd": float(rng.choice([0.1, 0.5])), "bias": float(rng.choice([0.0, 0.2]))},
                   min_opset=9, separated=True))
    u.append(Unary("identity", O, None, lambda e, x, r: e.node("Identity", [x])))
    u.append(Unary("round", TO, lambda x, r: torch.round(x), lambda e, x, r: e.node("Round", [x]), min_opset=11,
                   separated=True))
    u.append(Unary("dropout", O, None, lambda e, x, r: e.node("Dropout", [x])))
    return u


# ---------------------------------------------------------------------------
# Elementwise binary with numpy broadcasting


class Binary(Op):
    """lhs (op) rhs, rhs a constant of a broadcast shape or another value."""
    name = "binary"
    weight = 5.0
    kinds = ["add", "sub", "mul", "div", "pow", "max", "min"]

    def draw(self, g, a):
        kind = str(g.rng.choice(self.kinds))
        p = {"kind": kind, "seed": g.seed(), "swap": int(g.rng.random() < 0.3)}
        other = g.pick_other(a) if g.rng.random() < 0.45 and kind != "pow" else None
        if other is not None:
            return [other], p
        p["crank"] = int(g.rng.integers(0, a.rank + 1))
        p["keep"] = [int(v) for v in (g.rng.random(6) < 0.5)]
        return [], p

    def infer(self, p, ins):
        a = ins[0]
        r = dict(p)
        w = {}
        if len(ins) == 2:
            out = broadcast(a.shape, ins[1].shape)
        else:
            cs = const_shape(a.shape, p["keep"], p["crank"])
            if p["kind"] == "pow":
                w["c"] = uniform(p, cs, 0.5, 2.0) if wrng(p, 1).random() < 0.5 else \
                    np.full(cs, float(wrng(p, 2).choice([2.0, 3.0, 0.5, -1.0])), np.float32)
            elif p["kind"] == "div":
                w["c"] = uniform(p, cs, 0.5, 2.0) * np.where(wrng(p, 3).random(cs) < 0.5, -1, 1).astype(np.float32)
            else:
                w["c"] = normal(p, cs)
            out = broadcast(a.shape, cs)
        return Val(check_size(out)), r, w

    def _operands(self, r, w, xs, guard_div, abs_plus):
        a = xs[0]
        b = xs[1] if len(xs) == 2 else w["c"]
        if r["kind"] == "pow":
            a = abs_plus(a)
        if r["kind"] == "div" and len(xs) == 2:
            b = guard_div(b)
        return (b, a) if r["swap"] and r["kind"] not in ("div", "pow") else (a, b)

    def torch(self, r, w, *xs):
        torch, _ = _t()
        a, b = self._operands(r, w, xs, lambda v: torch.abs(v) + 0.5, lambda v: torch.abs(v) + 0.5)
        return {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
                "max": torch.maximum, "min": torch.minimum}[r["kind"]](a, b)

    def onnx(self, r, w, e, *names):
        def abs_plus(v):
            return e.node("Add", [e.node("Abs", [v]), e.scalar(0.5)])
        a, b = self._operands(r, {"c": e.init(w["c"])} if "c" in w else w, names, abs_plus, abs_plus)
        return e.node({"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "max": "Max",
                       "min": "Min"}[r["kind"]], [a, b])


class Variadic(Op):
    """ONNX Sum/Mean/Max/Min over 2-3 operands (constants of broadcast shapes)."""
    name = "variadic"
    builders = ("onnx",)

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["Sum", "Mean", "Max", "Min"])), "seed": g.seed(),
                    "n": int(g.rng.integers(1, 3)), "keep": [int(v) for v in (g.rng.random(12) < 0.5)],
                    "crank": int(g.rng.integers(0, a.rank + 1))}

    def infer(self, p, ins):
        w = {}
        shapes = [ins[0].shape]
        for i in range(p["n"]):
            cs = const_shape(ins[0].shape, p["keep"][i * 6:(i + 1) * 6], p["crank"])
            w[f"c{i}"] = normal(p, cs, salt=i)
            shapes.append(cs)
        return Val(broadcast(*shapes)), dict(p), w

    def onnx(self, r, w, e, x):
        return e.node(r["kind"], [x] + [e.init(w[f"c{i}"]) for i in range(r["n"])])


class PRelu(Op):
    name = "prelu"
    ranks = range(2, 7)

    def draw(self, g, a):
        return [], {"seed": g.seed()}

    def infer(self, p, ins):
        c = ins[0].shape[1]
        return Val(ins[0].shape), dict(p), {"slope": uniform(p, (c,), -0.5, 0.5)}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.prelu(x, w["slope"])

    def onnx(self, r, w, e, x):
        rank = len(e.shape_of(x))
        return e.node("PRelu", [x, e.init(w["slope"].reshape((-1,) + (1,) * (rank - 2)))])


class WhereCompare(Op):
    """Comparisons and logic on floor(separated input) against integer
    constants (exact, so no rounding flip), feeding Where or a Cast."""
    name = "where"
    separated_only = True
    weight = 1.5

    def draw(self, g, a):
        p = {"seed": g.seed(), "cmp": str(g.rng.choice(["Greater", "Less", "Equal", "GreaterOrEqual",
                                                         "LessOrEqual"])),
             "logic": str(g.rng.choice(["none", "And", "Or", "Xor", "Not"])),
             "cmp2": str(g.rng.choice(["Greater", "Less", "Equal"])),
             "opset": g.opset, "mode": str(g.rng.choice(["where", "where", "cast"])), "keep": [int(v) for v in g.rng.random(6) < 0.5],
             "crank": int(g.rng.integers(0, a.rank + 1))}
        x = g.pick_float(exclude=a) if p["mode"] == "where" else None
        return ([x] if x else []), p

    def infer(self, p, ins):
        a = ins[0]
        if p["cmp"].endswith("OrEqual") and p.get("opset", 99) < 12:
            p = dict(p, cmp=p["cmp"][:-len("OrEqual")])
        if p.get("opset", 99) < 11:  # Equal on floats needs opset 11
            p = dict(p, cmp="Less" if p["cmp"] == "Equal" else p["cmp"], cmp2="Less" if p["cmp2"] == "Equal" else
                     p["cmp2"])
        cs = const_shape(a.shape, p["keep"], p["crank"])
        ints = lambda salt: np.floor(wrng(p, salt).uniform(-2, 3, cs)).astype(np.float32)
        w = {"k1": ints(1), "k2": ints(2)}
        shape = broadcast(a.shape, cs)
        if p["mode"] == "where":
            if len(ins) > 1:
                shape = broadcast(shape, ins[1].shape)
            w["y"] = normal(p, (shape[-1],) if shape else ())
        return Val(check_size(shape)), dict(p), w

    def torch(self, r, w, a, x=None):
        torch, _ = _t()
        f = torch.floor(a)
        ops = {"Greater": torch.gt, "Less": torch.lt, "Equal": torch.eq, "GreaterOrEqual": torch.ge,
               "LessOrEqual": torch.le}
        c = ops[r["cmp"]](f, w["k1"])
        if r["logic"] == "Not":
            c = ~c
        elif r["logic"] != "none":
            c2 = ops[r["cmp2"]](f, w["k2"])
            c = {"And": torch.logical_and, "Or": torch.logical_or, "Xor": torch.logical_xor}[r["logic"]](c, c2)
        if r["mode"] == "cast":
            return c.to(a.dtype)
        return torch.where(c, x if x is not None else a, w["y"])

    def onnx(self, r, w, e, a, x=None):
        f = e.node("Floor", [a])
        c = e.node(r["cmp"], [f, e.init(w["k1"])])
        if r["logic"] == "Not":
            c = e.node("Not", [c])
        elif r["logic"] != "none":
            c = e.node(r["logic"], [c, e.node(r["cmp2"], [f, e.init(w["k2"])])])
        if r["mode"] == "cast":
            return e.node("Cast", [c], to=1)
        return e.node("Where", [c, x if x is not None else a, e.init(w["y"])])


class CastRoundTrip(Op):
    """float -> int32/int64 (truncation, on separated data) -> float."""
    name = "cast"
    separated_only = True

    def draw(self, g, a):
        return [], {"to": str(g.rng.choice(["int32", "int64"])), "like": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        return x.to(getattr(torch, r["to"])).to(x.dtype)

    def onnx(self, r, w, e, x):
        code = {"int32": 6, "int64": 7}[r["to"]]
        i = e.node("Cast", [x], to=code)
        if r["like"] and e.opset >= 15:
            return e.node("CastLike", [i, x])
        return e.node("Cast", [i], to=1)


# ---------------------------------------------------------------------------
# Linear algebra


class MatMul(Op):
    name = "matmul"
    ranks = range(1, 7)
    weight = 2.0

    def applicable(self, a, builder, opset):
        return super().applicable(a, builder, opset) and (a.rank >= 2 or builder == "onnx")

    def draw(self, g, a):
        p = {"seed": g.seed(), "n": int(g.rng.choice([1, 3, 8, 16])),
             "batch": int(g.rng.random() < 0.3), "vec": int(a.rank >= 2 and g.rng.random() < 0.1)}
        return [], p

    def infer(self, p, ins):
        a = ins[0].shape
        k = a[-1]
        if p["vec"] and len(a) >= 2:
            wshape = (k,)
            out = a[:-1]
        elif p["batch"] and len(a) >= 3:
            wshape = (a[-3], k, p["n"])
            out = a[:-1] + (p["n"],)
        else:
            wshape = (k, p["n"])
            out = a[:-1] + (p["n"],)
        return Val(check_size(out)), dict(p), {"w": normal(p, wshape, 1 / math.sqrt(k))}

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.matmul(x, w["w"])

    def onnx(self, r, w, e, x):
        return e.node("MatMul", [x, e.init(w["w"])])


class Gemm(Op):
    name = "gemm"
    ranks = (2,)
    weight = 3.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "n": int(g.rng.choice([1, 5, 8, 16])), "ta": int(g.rng.random() < 0.3),
                    "tb": int(g.rng.random() < 0.5), "alpha": float(g.rng.choice([1.0, 0.5, 2.0])),
                    "beta": float(g.rng.choice([1.0, 0.0, -1.5])), "cshape": str(g.rng.choice(["n", "1n", "m1",
                                                                                                "mn", "s", "none"]))}

    def infer(self, p, ins):
        m, k = ins[0].shape[::-1] if p["ta"] else ins[0].shape
        n = p["n"]
        w = {"b": normal(p, (n, k) if p["tb"] else (k, n), 1 / math.sqrt(k))}
        cs = {"n": (n,), "1n": (1, n), "m1": (m, 1), "mn": (m, n), "s": (), "none": None}[p["cshape"]]
        if cs is not None:
            w["c"] = normal(p, cs, salt=1)
        return Val((m, n)), dict(p), w

    def torch(self, r, w, x):
        _, tf = _t()
        if r["ta"]:
            x = x.t()
        b = w["b"] if r["tb"] else w["b"].t()
        return tf.linear(x, b, w["c"] if "c" in w and r["cshape"] == "n" else None)

    def onnx(self, r, w, e, x):
        ins = [x, e.init(w["b"])] + ([e.init(w["c"])] if "c" in w else [])
        if "c" not in w and e.opset < 11:
            ins.append(e.init(np.zeros((r["n"],), np.float32)))
        return e.node("Gemm", ins, alpha=r["alpha"], beta=r["beta"], transA=r["ta"], transB=r["tb"])


# ---------------------------------------------------------------------------
# Spatial (NCHW, rank 4; rank 3 for the 1-D forms)


def _has_empty_window(size, k, s, pb, d, out):
    """Whether a pooling window lies entirely in the padding (ONNX leaves its
    value open: ONNX Runtime gives the lowest float, Ember -inf)."""
    return any(all(not 0 <= o * s - pb + j * d < size for j in range(k)) for o in range(out))


def _spatial_out(size, k, s, pb, pe, d, ceil=False):
    eff = d * (k - 1) + 1
    num = size + pb + pe - eff
    if num < 0:
        raise Invalid("window larger than input")
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= size + pb:
        o -= 1
    return o


class Conv(Op):
    name = "conv"
    ranks = (3, 4)
    weight = 3.0

    def draw(self, g, a):
        k = int(g.rng.choice([1, 1, 2, 3, 3, 5]))
        return [], {"seed": g.seed(), "o": int(g.rng.choice([1, 2, 3, 4, 8, 16])), "k": k,
                    "kw": int(g.rng.choice([k, k, 1, 3])), "s": int(g.rng.choice([1, 1, 2])),
                    "d": int(g.rng.choice([1, 1, 1, 2])), "pad": [int(v) for v in g.rng.integers(0, 3, 4)],
                    "sym": int(g.builder == "torch" or g.rng.random() < 0.5),
                    "groups": str(g.rng.choice(["1", "1", "dw", "2"])), "bias": int(g.rng.random() < 0.8),
                    "auto": str(g.rng.choice(["NOTSET"] * 4 + ["SAME_UPPER", "SAME_LOWER", "VALID"]))
                    if g.builder == "onnx" else "NOTSET"}

    def resolve(self, p, shape):
        c = shape[1]
        spatial = shape[2:]
        one_d = len(spatial) == 1
        kh, kw = (1, p["k"]) if one_d else (p["k"], p["kw"])
        g = {"1": 1, "dw": c, "2": 2 if c % 2 == 0 else 1}[p["groups"]]
        o = p["o"] if g == 1 else g * max(1, p["o"] // max(1, g // 2) if p["groups"] == "dw" else p["o"] // 2)
        o = max(o, 1)
        pads = [min(v, (kh if i % 2 == 0 else kw) // 2) for i, v in enumerate(p["pad"])]
        pt, pl, pb, pr = pads
        if p["sym"]:
            pb, pr = pt, pl
        if one_d:
            pt = pb = 0
        d = 1 if p["auto"].startswith("SAME") else p["d"]  # ORT: no dilation with SAME padding
        return dict(p, c=c, kh=kh, kw=kw, g=g, o=o, d=d, pads=[pt, pl, pb, pr], one_d=one_d)

    def infer(self, p, ins):
        shape = ins[0].shape
        r = self.resolve(p, shape)
        h, w_ = (1, shape[2]) if r["one_d"] else shape[2:]
        s, d = p["s"], r["d"]
        if r["auto"] == "NOTSET":
            oh = _spatial_out(h, r["kh"], s, r["pads"][0], r["pads"][2], d)
            ow = _spatial_out(w_, r["kw"], s, r["pads"][1], r["pads"][3], d)
        elif r["auto"] == "VALID":
            oh = _spatial_out(h, r["kh"], s, 0, 0, d)
            ow = _spatial_out(w_, r["kw"], s, 0, 0, d)
        else:
            oh, ow = -(-h // s), -(-w_ // s)
        out = (shape[0], r["o"]) + ((ow,) if r["one_d"] else (oh, ow))
        fan_in = (r["c"] // r["g"]) * r["kh"] * r["kw"]
        fshape = (r["o"], r["c"] // r["g"]) + ((r["kw"],) if r["one_d"] else (r["kh"], r["kw"]))
        w = {"f": normal(p, fshape, 1 / math.sqrt(fan_in))}
        if p["bias"]:
            w["b"] = normal(p, (r["o"],), 0.1, salt=1)
        return Val(check_size(out)), r, w

    def torch(self, r, w, x):
        _, tf = _t()
        if r["one_d"]:
            return tf.conv1d(x, w["f"], w.get("b"), r["s"], r["pads"][1], r["d"], r["g"])
        return tf.conv2d(x, w["f"], w.get("b"), r["s"], (r["pads"][0], r["pads"][1]), r["d"], r["g"])

    def onnx(self, r, w, e, x):
        ins = [x, e.init(w["f"])] + ([e.init(w["b"])] if "b" in w else [])
        n = 1 if r["one_d"] else 2
        attrs = {"strides": [r["s"]] * n, "dilations": [r["d"]] * n, "group": r["g"]}
        if r["auto"] != "NOTSET":
            attrs["auto_pad"] = r["auto"]
        else:
            pt, pl, pb, pr = r["pads"]
            attrs["pads"] = [pl, pr] if r["one_d"] else [pt, pl, pb, pr]
        return e.node("Conv", ins, **attrs)


class ConvTranspose(Op):
    name = "conv_transpose"
    ranks = (4,)
    weight = 2.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "o": int(g.rng.choice([1, 2, 4, 8])), "k": int(g.rng.choice([1, 2, 3, 4])),
                    "s": int(g.rng.choice([1, 2, 2, 3])), "pad": int(g.rng.integers(0, 2)),
                    "op": int(g.rng.integers(0, 2)), "d": int(g.rng.choice([1, 1, 2])),
                    "groups": str(g.rng.choice(["1", "1", "2"])), "bias": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        g = 2 if p["groups"] == "2" and c % 2 == 0 else 1
        o = max(1, p["o"] // g) * g
        k, s, d = p["k"], p["s"], p["d"]
        pad = min(p["pad"], (d * (k - 1)) // 2)
        op = min(p["op"], s - 1)  # ONNX allows < max(stride, dilation); ONNX Runtime only < stride
        out = lambda i: (i - 1) * s - 2 * pad + d * (k - 1) + 1 + op
        oshape = (n, o, out(h), out(w_))
        w = {"f": normal(p, (c, o // g, k, k), 1 / math.sqrt(c * k * k / g / max(1, s * s)))}
        if p["bias"]:
            w["b"] = normal(p, (o,), 0.1, salt=1)
        return Val(check_size(oshape)), dict(p, g=g, o=o, pad=pad, op=op), w

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.conv_transpose2d(x, w["f"], w.get("b"), r["s"], r["pad"], r["op"], r["g"], r["d"])

    def onnx(self, r, w, e, x):
        ins = [x, e.init(w["f"])] + ([e.init(w["b"])] if "b" in w else [])
        return e.node("ConvTranspose", ins, strides=[r["s"]] * 2, pads=[r["pad"]] * 4, dilations=[r["d"]] * 2,
                      output_padding=[r["op"]] * 2, group=r["g"])


class Pool(Op):
    name = "pool"
    ranks = (3, 4)
    weight = 2.5

    def draw(self, g, a):
        k = int(g.rng.choice([1, 2, 2, 3]))
        return [], {"kind": str(g.rng.choice(["max", "avg"])), "k": k, "kw": int(g.rng.choice([k, k, 1, 2])),
                    "s": int(g.rng.choice([1, 2, 2])), "pad": [int(v) for v in g.rng.integers(0, 2, 4)],
                    "sym": int(g.builder == "torch" or g.rng.random() < 0.5),
                    "ceil": int(g.opset >= 10 and g.rng.random() < 0.3), "cip": int(g.rng.random() < 0.5),
                    "d": int(g.rng.choice([1, 1, 2])) if g.opset >= 10 else 1}

    def infer(self, p, ins):
        shape = ins[0].shape
        one_d = len(shape) == 3
        kh, kw = (1, p["k"]) if one_d else (p["k"], p["kw"])
        d = p["d"] if p["kind"] == "max" else 1
        pads = [min(v, (kh if i % 2 == 0 else kw) // 2) for i, v in enumerate(p["pad"])]
        if p["sym"]:
            pads[2], pads[3] = pads[0], pads[1]
        if one_d:
            pads[0] = pads[2] = 0
        h, w_ = (1, shape[2]) if one_d else shape[2:]
        oh = _spatial_out(h, kh, p["s"], pads[0], pads[2], d, p["ceil"])
        ow = _spatial_out(w_, kw, p["s"], pads[1], pads[3], d, p["ceil"])
        if _has_empty_window(h, kh, p["s"], pads[0], d, oh) or _has_empty_window(w_, kw, p["s"], pads[1], d, ow):
            raise Invalid("a window entirely in the padding")
        out = shape[:2] + ((ow,) if one_d else (oh, ow))
        return Val(check_size(out)), dict(p, kh=kh, kw=kw, d=d, pads=pads, one_d=one_d), {}

    def torch(self, r, w, x):
        _, tf = _t()
        if r["one_d"]:
            if r["kind"] == "max":
                return tf.max_pool1d(x, r["kw"], r["s"], r["pads"][1], r["d"], bool(r["ceil"]))
            return tf.avg_pool1d(x, r["kw"], r["s"], r["pads"][1], bool(r["ceil"]), bool(r["cip"]))
        k, pad = (r["kh"], r["kw"]), (r["pads"][0], r["pads"][1])
        if r["kind"] == "max":
            return tf.max_pool2d(x, k, r["s"], pad, r["d"], bool(r["ceil"]))
        return tf.avg_pool2d(x, k, r["s"], pad, bool(r["ceil"]), bool(r["cip"]))

    def onnx(self, r, w, e, x):
        n = 1 if r["one_d"] else 2
        pt, pl, pb, pr = r["pads"]
        attrs = {"kernel_shape": [r["kw"]] if r["one_d"] else [r["kh"], r["kw"]], "strides": [r["s"]] * n,
                 "pads": [pl, pr] if r["one_d"] else [pt, pl, pb, pr]}
        if e.opset >= 10:
            attrs["ceil_mode"] = r["ceil"]
        if r["kind"] == "max":
            if r["d"] > 1:
                attrs["dilations"] = [r["d"]] * n
            return e.node("MaxPool", [x], **attrs)
        return e.node("AveragePool", [x], count_include_pad=r["cip"], **attrs)


class GlobalPool(Op):
    name = "global_pool"
    ranks = (3, 4)

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["max", "avg"]))}

    def infer(self, p, ins):
        s = ins[0].shape
        return Val(s[:2] + (1,) * (len(s) - 2)), dict(p), {}

    def torch(self, r, w, x):
        _, tf = _t()
        f = {("max", 3): tf.adaptive_max_pool1d, ("avg", 3): tf.adaptive_avg_pool1d,
             ("max", 4): tf.adaptive_max_pool2d, ("avg", 4): tf.adaptive_avg_pool2d}[(r["kind"], x.dim())]
        return f(x, 1)

    def onnx(self, r, w, e, x):
        return e.node("GlobalMaxPool" if r["kind"] == "max" else "GlobalAveragePool", [x])


class Resize(Op):
    name = "resize"
    ranks = (4,)
    weight = 1.5
    min_opset = 11

    def draw(self, g, a):
        if g.builder == "torch":
            mode = str(g.rng.choice(["nearest", "bilinear", "bilinear_ac"]))
        else:
            mode = str(g.rng.choice(["nearest", "linear"]))
        return [], {"mode": mode, "sh": float(g.rng.choice([1.0, 2.0, 2.0, 3.0, 0.5])),
                    "sw": float(g.rng.choice([2.0, 2.0, 1.5, 0.5])), "by_size": int(g.rng.random() < 0.4),
                    "ctm": str(g.rng.choice([m for m in ["half_pixel", "pytorch_half_pixel", "align_corners",
                                                         "asymmetric", "tf_half_pixel_for_nn"] if m not in KNOWN_WRONG])),
                    "nm": str(g.rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])),
                    "sizes_for_ac": int("align_corners_scales" in KNOWN_WRONG)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        r = dict(p)
        aligned = p["mode"] == "bilinear_ac" or (p["mode"] == "linear" and p["ctm"] == "align_corners")
        if aligned and p.get("sizes_for_ac"):
            r["by_size"] = 1  # see known_wrong_answers.txt: align_corners with scales
        if p["mode"] != "nearest" and r["ctm"] == "tf_half_pixel_for_nn":
            r["ctm"] = "half_pixel"
        if p["mode"] != "nearest":
            r["nm"] = "round_prefer_floor"
        sw = p["sw"] if p["by_size"] or p["mode"] == "nearest" or r["ctm"] != "align_corners" else p["sw"]
        oh, ow = int(math.floor(h * p["sh"])), int(math.floor(w_ * sw))
        if oh < 1 or ow < 1:
            raise Invalid("resize to nothing")
        r["sizes"] = [n, c, oh, ow]
        return Val(check_size((n, c, oh, ow))), r, {}

    def torch(self, r, w, x):
        _, tf = _t()
        size = r["sizes"][2:] if r["by_size"] else None
        scale = None if r["by_size"] else (r["sh"], r["sw"])
        if r["mode"] == "nearest":
            return tf.interpolate(x, size=size, scale_factor=scale, mode="nearest")
        return tf.interpolate(x, size=size, scale_factor=scale, mode="bilinear",
                              align_corners=r["mode"] == "bilinear_ac")

    def onnx(self, r, w, e, x):
        roi = e.init(np.zeros((0,), np.float32))
        empty = e.init(np.zeros((0,), np.float32))
        if r["by_size"]:
            ins = [x, roi, empty, e.init(np.array(r["sizes"], np.int64))]
        else:
            ins = [x, roi, e.init(np.array([1, 1, r["sh"], r["sw"]], np.float32))]
        return e.node("Resize", ins, mode=r["mode"], coordinate_transformation_mode=r["ctm"],
                      nearest_mode=r["nm"])


# ---------------------------------------------------------------------------
# Normalisations


class Upsample(Op):
    """The opset 9/10 forms: Upsample-9 and Resize-10 (scales input;
    asymmetric coordinates, nearest rounds down)."""
    name = "upsample"
    builders = ("onnx",)
    ranks = (3, 4)
    min_opset = 9

    def applicable(self, a, builder, opset):
        return super().applicable(a, builder, opset) and opset <= 10

    def draw(self, g, a):
        modes = ["nearest", "nearest", "linear"] if a.rank == 4 else ["nearest"]  # ORT: linear is 2-D/4-D only
        return [], {"mode": str(g.rng.choice(modes)),
                    "sh": float(g.rng.choice([1.0, 2.0, 3.0, 1.5])), "sw": float(g.rng.choice([2.0, 2.0, 1.5, 1.0]))}

    def infer(self, p, ins):
        s = ins[0].shape
        scales = [1.0, 1.0] + ([p["sh"], p["sw"]] if len(s) == 4 else [p["sw"]])
        out = tuple(int(math.floor(d * k)) for d, k in zip(s, scales))
        return Val(check_size(out)), dict(p, scales=scales), {}

    def onnx(self, r, w, e, x):
        scales = e.init(np.array(r["scales"], np.float32))
        return e.node("Upsample" if e.opset < 10 else "Resize", [x, scales], mode=r["mode"])


class BatchNorm(Op):
    name = "batchnorm"
    ranks = (2, 3, 4)
    weight = 2.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "eps": float(g.rng.choice([1e-5, 1e-3]))}

    def infer(self, p, ins):
        c = ins[0].shape[1]
        w = {"scale": uniform(p, (c,), 0.5, 1.5, 1), "bias": normal(p, (c,), 0.1, 2),
             "mean": normal(p, (c,), 0.1, 3), "var": uniform(p, (c,), 0.5, 1.5, 4)}
        return Val(ins[0].shape), dict(p), w

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.batch_norm(x, w["mean"], w["var"], w["scale"], w["bias"], False, 0.0, r["eps"])

    def onnx(self, r, w, e, x):
        return e.node("BatchNormalization", [x] + [e.init(w[k]) for k in ("scale", "bias", "mean", "var")],
                      epsilon=r["eps"])


class InstanceNorm(Op):
    name = "instancenorm"
    ranks = (3, 4)

    def draw(self, g, a):
        return [], {"seed": g.seed()}

    def infer(self, p, ins):
        s = ins[0].shape
        if int(np.prod(s[2:])) < 2:
            raise Invalid("instance norm over one element")
        c = s[1]
        return Val(s), dict(p), {"scale": uniform(p, (c,), 0.5, 1.5, 1), "bias": normal(p, (c,), 0.1, 2)}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.instance_norm(x, weight=w["scale"], bias=w["bias"], eps=1e-5)

    def onnx(self, r, w, e, x):
        return e.node("InstanceNormalization", [x, e.init(w["scale"]), e.init(w["bias"])], epsilon=1e-5)


class LayerNorm(Op):
    name = "layernorm"
    ranks = range(1, 7)
    min_opset = 17  # the ONNX op; torch exports a decomposition below 17
    weight = 2.0

    def applicable(self, a, builder, opset):
        return Op.applicable(self, a, builder, 7 if builder == "torch" else opset) and self.min_opset <= (
            99 if builder == "torch" else opset)

    def draw(self, g, a):
        return [], {"seed": g.seed(), "k": int(g.rng.integers(1, 3))}

    def infer(self, p, ins):
        s = ins[0].shape
        k = min(p["k"], len(s))
        norm = s[len(s) - k:]
        if int(np.prod(norm)) < 2:
            raise Invalid("layer norm over one element")
        return Val(s), dict(p, k=k, norm=list(norm)), {"scale": uniform(p, norm, 0.5, 1.5, 1),
                                                          "bias": normal(p, norm, 0.1, 2)}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.layer_norm(x, r["norm"], w["scale"], w["bias"], 1e-5)

    def onnx(self, r, w, e, x):
        return e.node("LayerNormalization", [x, e.init(w["scale"]), e.init(w["bias"])], axis=-r["k"], epsilon=1e-5)


class Softmax(Op):
    name = "softmax"
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(-a.rank, a.rank)), "log": int(g.rng.random() < 0.4)}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p, axis=axis_of(p["axis"], ins[0].rank)), {}

    def torch(self, r, w, x):
        _, tf = _t()
        return (tf.log_softmax if r["log"] else tf.softmax)(x, r["axis"])

    def onnx(self, r, w, e, x):
        return e.node("LogSoftmax" if r["log"] else "Softmax", [x], axis=r["axis"])


# ---------------------------------------------------------------------------
# Reductions


class Reduce(Op):
    name = "reduce"
    ranks = range(1, 7)
    weight = 2.0
    kinds = ["sum", "mean", "max", "min", "prod", "sumsquare", "l1", "l2", "logsumexp", "logsum"]

    def draw(self, g, a):
        kinds = [k for k in self.kinds if k not in KNOWN_WRONG]
        return [], {"kind": str(g.rng.choice(kinds)), "axes": [int(v) for v in g.rng.random(6) < 0.4],
                    "keep": int(g.rng.random() < 0.5), "first": int(g.rng.integers(0, 6))}

    def infer(self, p, ins):
        s = ins[0].shape
        axes = [i for i in range(len(s)) if p["axes"][i]] or [p["first"] % len(s)]
        if p["kind"] == "prod" and int(np.prod([s[i] for i in axes])) > 8:
            raise Invalid("product over too many elements")
        out = tuple((1 if i in axes else d) for i, d in enumerate(s) if p["keep"] or i not in axes)
        return Val(out), dict(p, axes=axes, out=list(out)), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        ax, k = r["axes"], bool(r["keep"])
        kind = r["kind"]
        if kind == "sum":
            return x.sum(ax, keepdim=k)
        if kind == "mean":
            return x.mean(ax, keepdim=k)
        if kind == "max":
            return torch.amax(x, ax, keepdim=k)
        if kind == "min":
            return torch.amin(x, ax, keepdim=k)
        if kind == "prod":
            for a in ax:
                x = x.prod(a, keepdim=True)
            return x if k else x.reshape(r["out"])
        if kind == "sumsquare":
            return (x * x).sum(ax, keepdim=k)
        if kind == "l1":
            return torch.norm(x, 1, ax, keepdim=k)
        if kind == "l2":
            return torch.norm(x, 2, ax, keepdim=k)
        if kind == "logsumexp":
            return torch.logsumexp(x, ax, keepdim=k)
        return torch.log((torch.abs(x) + 0.5).sum(ax, keepdim=k))

    def onnx(self, r, w, e, x):
        kind = r["kind"]
        op = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
              "prod": "ReduceProd", "sumsquare": "ReduceSumSquare", "l1": "ReduceL1", "l2": "ReduceL2",
              "logsumexp": "ReduceLogSumExp", "logsum": "ReduceLogSum"}[kind]
        if kind == "logsum":
            x = e.node("Add", [e.node("Abs", [x]), e.scalar(0.5)])
        if op == "ReduceSum" and e.opset >= 13:
            return e.node(op, [x, e.init(np.array(r["axes"], np.int64))], keepdims=r["keep"])
        return e.node(op, [x], axes=r["axes"], keepdims=r["keep"])


class ArgReduce(Op):
    name = "argmax"
    separated_only = True
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"min": int(g.rng.random() < 0.5), "axis": int(g.rng.integers(-a.rank, a.rank)),
                    "keep": int(g.rng.random() < 0.5),
                    "last": int(g.builder == "onnx" and g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = axis_of(p["axis"], len(s))
        out = tuple((1 if i == ax else d) for i, d in enumerate(s) if p["keep"] or i != ax)
        return Val(out, I64), dict(p, axis=ax), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        return (torch.argmin if r["min"] else torch.argmax)(x, r["axis"], keepdim=bool(r["keep"]))

    def onnx(self, r, w, e, x):
        attrs = {"axis": r["axis"], "keepdims": r["keep"]}
        if r["last"] and e.opset >= 12:
            attrs["select_last_index"] = 1
        return e.node("ArgMin" if r["min"] else "ArgMax", [x], **attrs)


class TopK(Op):
    name = "topk"
    separated_only = True
    ranks = range(1, 7)
    min_opset = 10

    def draw(self, g, a):
        return [], {"k": int(g.rng.integers(1, 5)), "axis": int(g.rng.integers(-a.rank, a.rank)),
                    "largest": int(g.opset < 11 or g.rng.random() < 0.7), "which": int(g.rng.random() < 0.4)}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = axis_of(p["axis"], len(s))
        k = min(p["k"], s[ax])
        out = tuple(k if i == ax else d for i, d in enumerate(s))
        return Val(out, I64 if p["which"] else F), dict(p, axis=ax, k=k), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        v, i = torch.topk(x, r["k"], r["axis"], bool(r["largest"]), True)
        return i if r["which"] else v

    def onnx(self, r, w, e, x):
        attrs = {"largest": r["largest"]} if e.opset >= 11 else {}  # opset 10: always the largest
        outs = e.node("TopK", [x, e.init(np.array([r["k"]], np.int64))], n_out=2, axis=r["axis"], **attrs)
        return outs[r["which"]]


# ---------------------------------------------------------------------------
# Data movement


def _perm_with_equal_swap(rng, shape):
    """A permutation; half the time one that only moves axes of equal size,
    so the shape does not change while the layout does."""
    rank = len(shape)
    equal = [(i, j) for i in range(rank) for j in range(i + 1, rank) if shape[i] == shape[j] and shape[i] > 1]
    if equal and rng.random() < 0.5:
        i, j = equal[int(rng.integers(0, len(equal)))]
        perm = list(range(rank))
        perm[i], perm[j] = perm[j], perm[i]
        return perm
    return [int(v) for v in rng.permutation(rank)]


class Transpose(Op):
    name = "transpose"
    ranks = range(2, 7)
    weight = 1.5
    dtypes = (F, I64)

    def draw(self, g, a):
        return [], {"perm": _perm_with_equal_swap(g.rng, a.shape)}

    def infer(self, p, ins):
        s = ins[0].shape
        if sorted(p["perm"]) != list(range(len(s))):
            raise Invalid("perm does not match rank")
        return Val(tuple(s[i] for i in p["perm"]), ins[0].dtype), dict(p), {}

    def torch(self, r, w, x):
        return x.permute(*r["perm"])

    def onnx(self, r, w, e, x):
        return e.node("Transpose", [x], perm=r["perm"])


class Reshape(Op):
    name = "reshape"
    ranks = range(1, 7)
    weight = 3.0
    dtypes = (F, I64)

    def draw(self, g, a):
        modes = ["merge", "split", "flatten", "unsqueeze", "squeeze", "shape_of"]
        return [], {"mode": str(g.rng.choice(modes)), "axis": int(g.rng.integers(0, 6)),
                    "factor": int(g.rng.choice([2, 3, 4])), "special": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = list(ins[0].shape)
        rank = len(s)
        ax = p["axis"] % max(rank, 1)
        mode = p["mode"]
        if mode == "merge":
            if rank < 2:
                raise Invalid("merge needs rank 2")
            ax = min(ax, rank - 2)
            out = s[:ax] + [s[ax] * s[ax + 1]] + s[ax + 2:]
        elif mode == "split":
            if rank >= 6 or s[ax] % p["factor"]:
                raise Invalid("not divisible")
            out = s[:ax] + [p["factor"], s[ax] // p["factor"]] + s[ax + 1:]
        elif mode in ("flatten", "shape_of"):
            ax = 1 if mode == "shape_of" else ax
            if ax > rank:
                raise Invalid("axis")
            out = [int(np.prod(s[:ax]))] + [int(np.prod(s[ax:]))]
        elif mode == "unsqueeze":
            if rank >= 6:
                raise Invalid("rank 6")
            ax = p["axis"] % (rank + 1)
            out = s[:ax] + [1] + s[ax:]
        else:
            ones = [i for i, d in enumerate(s) if d == 1]
            if not ones:
                raise Invalid("no unit dim")
            ax = ones[p["axis"] % len(ones)]
            out = s[:ax] + s[ax + 1:]
        return Val(tuple(out), ins[0].dtype), dict(p, ax=ax, out=out), {}

    def torch(self, r, w, x):
        mode = r["mode"]
        if mode == "flatten":
            return x.flatten(1) if r["ax"] == 1 and x.dim() > 1 else x.reshape(r["out"])
        if mode == "shape_of":
            return x.reshape(x.shape[0], -1)
        if mode == "unsqueeze":
            return x.unsqueeze(r["ax"])
        if mode == "squeeze":
            return x.squeeze(r["ax"])
        return x.reshape(r["out"])

    def onnx(self, r, w, e, x):
        mode = r["mode"]
        axes = lambda: e.init(np.array([r["ax"]], np.int64))
        if mode == "flatten":
            return e.node("Flatten", [x], axis=r["ax"])
        if mode == "unsqueeze":
            return e.node("Unsqueeze", [x, axes()]) if e.opset >= 13 else e.node("Unsqueeze", [x], axes=[r["ax"]])
        if mode == "squeeze":
            return e.node("Squeeze", [x, axes()]) if e.opset >= 13 else e.node("Squeeze", [x], axes=[r["ax"]])
        if mode == "shape_of":
            # x.view(x.size(0), -1) as exporters write it: the leading dim read by Shape.
            shape = e.node("Shape", [x])
            head = e.node("Slice", [shape, e.init(np.array([0], np.int64)), e.init(np.array([1], np.int64))]) \
                if e.opset >= 10 else e.node("Slice", [shape], starts=[0], ends=[1], axes=[0])
            return e.node("Reshape", [x, e.node("Concat", [head, e.init(np.array([-1], np.int64))], axis=0)])
        out = list(r["out"])
        if r["special"]:
            s = e.shape_of(x)
            if len(s) == len(out):
                out = [0 if a == b else a for a, b in zip(out, s)]  # 0 copies the input dim
            out[int(np.argmax(out))] = -1
        return e.node("Reshape", [x, e.init(np.array(out, np.int64))])


class Concat(Op):
    name = "concat"
    ranks = range(1, 7)
    weight = 2.0

    def draw(self, g, a):
        ax = int(g.rng.integers(0, a.rank))
        others = g.pick_concat_partners(a, ax)
        return others, {"axis": ax, "seed": g.seed(), "cdim": int(g.rng.integers(1, 4)),
                        "const": int(not others or g.rng.random() < 0.3), "neg": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        total = s[ax]
        for v in ins[1:]:
            if len(v.shape) != len(s) or any(a != b for i, (a, b) in enumerate(zip(v.shape, s)) if i != ax):
                raise Invalid("concat shapes")
            total += v.shape[ax]
        w = {}
        if p["const"]:
            cs = s[:ax] + (p["cdim"],) + s[ax + 1:]
            w["c"] = normal(p, cs)
            total += p["cdim"]
        return Val(check_size(s[:ax] + (total,) + s[ax + 1:])), dict(p, ax=ax), w

    def torch(self, r, w, *xs):
        torch, _ = _t()
        return torch.cat(list(xs) + ([w["c"]] if "c" in w else []), r["ax"] - (len(xs[0].shape) if r["neg"] else 0))

    def onnx(self, r, w, e, *xs):
        rank = len(e.shape_of(xs[0]))
        return e.node("Concat", list(xs) + ([e.init(w["c"])] if "c" in w else []),
                      axis=r["ax"] - (rank if r["neg"] and e.opset >= 11 else 0))


class Slice(Op):
    name = "slice"
    ranks = range(1, 7)
    weight = 2.0
    dtypes = (F, I64)

    def draw(self, g, a):
        n = a.rank
        steps = [1, 1, 1, 2, 3] if g.opset >= 10 else [1]
        return [], {"start": [float(v) for v in g.rng.uniform(0, 0.6, n)],
                    "end": [float(v) for v in g.rng.uniform(0.5, 1.01, n)],
                    "step": [int(v) for v in g.rng.choice(steps, n)],
                    "active": [int(v) for v in g.rng.random(n) < 0.6],
                    "neg": int(g.builder == "onnx" and g.opset >= 10 and g.rng.random() < 0.3),
                    "big_end": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = ins[0].shape
        axes, starts, ends, steps, out = [], [], [], [], list(s)
        for i, d in enumerate(s):
            if i >= len(p["active"]) or not p["active"][i]:
                continue
            b = min(int(p["start"][i] * d), d - 1)
            en = max(b + 1, min(d, int(math.ceil(p["end"][i] * d))))
            st = p["step"][i]
            if p["neg"] and i % 2 == 0:
                # Reverse: from en-1 down to b (exclusive b-1).
                axes.append(i), starts.append(en - 1), ends.append(b - 1 if b > 0 else -d - 1), steps.append(-st)
            else:
                axes.append(i), starts.append(b), ends.append(2 ** 62 if p["big_end"] and en == d else en)
                steps.append(st)
            out[i] = -(-(en - b) // st)
        if not axes:
            raise Invalid("no axis")
        return Val(tuple(out), ins[0].dtype), dict(p, axes=axes, starts=starts, ends=ends, steps=steps), {}

    def torch(self, r, w, x):
        idx = [slice(None)] * x.dim()
        for a, b, en, st in zip(r["axes"], r["starts"], r["ends"], r["steps"]):
            idx[a] = slice(b, en, st)
        return x[tuple(idx)]

    def onnx(self, r, w, e, x):
        if e.opset < 10:
            return e.node("Slice", [x], starts=r["starts"], ends=r["ends"], axes=r["axes"])
        arr = lambda v: e.init(np.array(v, np.int64))
        return e.node("Slice", [x, arr(r["starts"]), arr(r["ends"]), arr(r["axes"]), arr(r["steps"])])


class Split(Op):
    name = "split"
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(0, a.rank)), "parts": int(g.rng.choice([2, 3])),
                    "which": int(g.rng.integers(0, 3)), "uneven": int(g.rng.random() < 0.4)}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        d = s[ax]
        n = min(p["parts"], d)
        if n < 2:
            raise Invalid("cannot split one element")
        if p["uneven"] or d % n:
            sizes = [1] * (n - 1) + [d - (n - 1)]
        else:
            sizes = [d // n] * n
        which = p["which"] % n
        out = s[:ax] + (sizes[which],) + s[ax + 1:]
        return Val(out), dict(p, ax=ax, sizes=sizes, which=which), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.split(x, r["sizes"], r["ax"])[r["which"]]

    def onnx(self, r, w, e, x):
        n = len(r["sizes"])
        sizes = np.array(r["sizes"], np.int64)
        if e.opset >= 13:
            outs = e.node("Split", [x, e.init(sizes)], n_out=n, axis=r["ax"])
        else:
            outs = e.node("Split", [x], n_out=n, axis=r["ax"], split=r["sizes"])
        return outs[r["which"]]


class Pad(Op):
    name = "pad"
    ranks = range(1, 7)

    def draw(self, g, a):
        mode = str(g.rng.choice(["constant", "constant", "reflect", "edge"]))
        if g.builder == "torch" and mode != "constant" and not (3 <= a.rank <= 5):
            mode = "constant"
        return [], {"mode": mode, "pads": [int(v) for v in g.rng.integers(-1 if g.builder == "onnx" else 0, 3, 12)],
                    "value": float(g.rng.choice([0.0, 1.5, -2.0])),
                    "torch_dims": int(g.builder == "torch" and mode != "constant")}

    def infer(self, p, ins):
        s = ins[0].shape
        rank = len(s)
        pads = [p["pads"][i] for i in range(rank)] + [p["pads"][6 + i] for i in range(rank)]
        if p["mode"] != "constant":
            pads = [max(0, v) for v in pads]
            if p["mode"] == "reflect":
                pads = [min(v, s[i % rank] - 1) for i, v in enumerate(pads)]
            # torch pads reflect/replicate only the trailing dims (all but N, C).
            if p.get("torch_dims"):
                pads = [0 if i % rank < 2 else v for i, v in enumerate(pads)]
        pads = [max(v, -(s[i % rank] // 2)) for i, v in enumerate(pads)]
        out = tuple(d + pads[i] + pads[rank + i] for i, d in enumerate(s))
        return Val(check_size(out)), dict(p, pads=pads), {}

    def torch(self, r, w, x):
        _, tf = _t()
        rank = x.dim()
        tp = []
        for i in reversed(range(rank)):
            tp += [r["pads"][i], r["pads"][rank + i]]
        mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}[r["mode"]]
        if mode != "constant":
            tp = tp[:2 * (rank - 2)]
            return tf.pad(x, tp, mode)
        return tf.pad(x, tp, mode, r["value"])

    def onnx(self, r, w, e, x):
        if e.opset >= 11:
            return e.node("Pad", [x, e.init(np.array(r["pads"], np.int64)), e.scalar(r["value"])], mode=r["mode"])
        return e.node("Pad", [x], pads=r["pads"], mode=r["mode"], value=r["value"])


class Tile(Op):
    name = "tile"
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"reps": [int(v) for v in g.rng.choice([1, 1, 2, 3], 6)]}

    def infer(self, p, ins):
        s = ins[0].shape
        reps = p["reps"][:len(s)]
        return Val(check_size(tuple(d * k for d, k in zip(s, reps)))), dict(p, reps=reps), {}

    def torch(self, r, w, x):
        return x.repeat(*r["reps"])

    def onnx(self, r, w, e, x):
        return e.node("Tile", [x, e.init(np.array(r["reps"], np.int64))])


class Expand(Op):
    name = "expand"
    ranks = range(0, 7)

    def draw(self, g, a):
        return [], {"sizes": [int(v) for v in g.rng.integers(2, 5, 6)], "prepend": int(g.rng.integers(0, 3))}

    def infer(self, p, ins):
        s = ins[0].shape
        prepend = min(p["prepend"], 6 - len(s))
        out = tuple(p["sizes"][i] for i in range(prepend)) + tuple(
            p["sizes"][(prepend + i) % 6] if d == 1 else d for i, d in enumerate(s))
        if out == s:
            raise Invalid("nothing to expand")
        return Val(check_size(out)), dict(p, out=list(out), prepend=prepend), {}

    def torch(self, r, w, x):
        return x.expand(*r["out"])

    def onnx(self, r, w, e, x):
        return e.node("Expand", [x, e.init(np.array(r["out"], np.int64))])


class Gather(Op):
    name = "gather"
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(0, a.rank)), "seed": g.seed(),
                    "ishape": str(g.rng.choice(["scalar", "vec", "vec", "mat"])),
                    "neg": int(g.builder == "onnx" and g.opset >= 11 and g.rng.random() < 0.5),
                    "n": int(g.rng.integers(1, 5))}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        ishape = {"scalar": (), "vec": (p["n"],), "mat": (2, p["n"])}[p["ishape"]]
        if len(s) - 1 + len(ishape) > 6:
            raise Invalid("rank")
        idx = wrng(p).integers(0, s[ax], ishape).astype(np.int64)
        if p["neg"]:
            idx = idx - s[ax] * (wrng(p, 1).random(ishape) < 0.5)
        out = s[:ax] + ishape + s[ax + 1:]
        return Val(check_size(out)), dict(p, ax=ax), {"idx": idx}

    def torch(self, r, w, x):
        torch, _ = _t()
        idx = w["idx"]
        if idx.dim() == 0:
            return x.select(r["ax"], int(idx))
        if idx.dim() == 1:
            return torch.index_select(x, r["ax"], idx)
        sel = [slice(None)] * r["ax"] + [idx]
        return x[tuple(sel)]

    def onnx(self, r, w, e, x):
        return e.node("Gather", [x, e.init(w["idx"])], axis=r["ax"])


class DepthSpace(Op):
    name = "depth_space"
    ranks = (4,)
    weight = 2.0

    def draw(self, g, a):
        n, c, h, w = a.shape
        onnx_modes = ["d2s_crd", "d2s_dcr", "s2d"] if g.opset >= 11 else ["d2s_dcr", "s2d"]
        modes = [m for m in (onnx_modes if g.builder == "onnx" else ["d2s_crd"])
                 if (m == "s2d" and h % 2 == 0 and w % 2 == 0) or (m != "s2d" and c % 4 == 0)]
        if not modes:
            return None
        mode = str(g.rng.choice(modes))
        b = 3 if (mode != "s2d" and c % 9 == 0) or (mode == "s2d" and h % 3 == 0 and w % 3 == 0 and
                                                     g.rng.random() < 0.3) else 2
        return [], {"mode": mode, "b": b}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        b = p["b"]
        if p["mode"] == "s2d":
            if h % b or w_ % b:
                raise Invalid("not divisible")
            out = (n, c * b * b, h // b, w_ // b)
        else:
            if c % (b * b):
                raise Invalid("not divisible")
            out = (n, c // (b * b), h * b, w_ * b)
        return Val(out), dict(p), {}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.pixel_shuffle(x, r["b"])

    def onnx(self, r, w, e, x):
        if r["mode"] == "s2d":
            return e.node("SpaceToDepth", [x], blocksize=r["b"])
        if e.opset < 11:
            return e.node("DepthToSpace", [x], blocksize=r["b"])
        return e.node("DepthToSpace", [x], blocksize=r["b"], mode="CRD" if r["mode"] == "d2s_crd" else "DCR")


class ShapeOps(Op):
    """Constant-producing ONNX ops that Ember folds at import: Shape, Size,
    ConstantOfShape and Range, added to the value."""
    name = "shape_ops"
    builders = ("onnx",)
    min_opset = 11
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["range", "const_of_shape", "size"]))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        s = e.shape_of(x)
        shape = e.node("Shape", [x])
        if r["kind"] == "range":
            last = e.node("Gather", [shape, e.init(np.array(len(s) - 1, np.int64))], axis=0)
            rng = e.node("Range", [e.init(np.array(0, np.int64)), last, e.init(np.array(1, np.int64))])
            return e.node("Add", [x, e.node("Mul", [e.node("Cast", [rng], to=1), e.scalar(0.25)])])
        if r["kind"] == "const_of_shape":
            c = e.node("ConstantOfShape", [shape], value=("tensor", np.array([0.5], np.float32)))
            return e.node("Mul", [x, c])
        size = e.node("Cast", [e.node("Size", [x])], to=1)
        return e.node("Div", [x, size])


# ---------------------------------------------------------------------------
# Ops added by model coverage part 1 (Mod, Round, inverse trigonometric,
# IsNaN/IsInf, Gather/ScatterElements, GatherND/ScatterND, Trilu, EyeLike,
# OneHot, Hardmax, ReverseSequence, LRN, training Dropout, Einsum).


class Mod(Op):
    """Mod of a separated input by integer constants: never near a multiple,
    so truncation cannot flip. fmod 1 on floats, fmod 0 on int64."""
    name = "mod"
    builders = ("onnx",)
    separated_only = True
    min_opset = 10

    def draw(self, g, a):
        return [], {"fmod": int(g.rng.integers(0, 2)), "seed": g.seed(), "crank": int(g.rng.integers(0, a.rank + 1)),
                    "keep": [int(v) for v in g.rng.random(6) < 0.5]}

    def infer(self, p, ins):
        cs = const_shape(ins[0].shape, p["keep"], p["crank"])
        c = wrng(p).choice([2.0, 3.0, -2.0, -3.0, 5.0], cs).astype(np.float32)
        return Val(broadcast(ins[0].shape, cs)), dict(p), {"c": c}

    def onnx(self, r, w, e, x):
        if r["fmod"]:
            return e.node("Mod", [x, e.init(w["c"])], fmod=1)
        xi = e.node("Cast", [x], to=7)
        return e.node("Cast", [e.node("Mod", [xi, e.init(w["c"].astype(np.int64))], fmod=0)], to=1)


class InverseTrig(Op):
    name = "inverse_trig"
    weight = 1.5

    def draw(self, g, a):
        fns = ["Asin", "Acos", "Atan"] + (["Asinh", "Acosh", "Atanh"] if g.builder == "onnx" else [])  # torch 1.13
        return [], {"fn": str(g.rng.choice(fns))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        fn = getattr(torch, r["fn"].lower())
        if r["fn"] in ("Asin", "Acos", "Atanh"):
            return fn(torch.tanh(x) * 0.9)
        if r["fn"] == "Acosh":
            return fn(torch.abs(x) + 1.0)
        return fn(x)

    def onnx(self, r, w, e, x):
        if r["fn"] in ("Asin", "Acos", "Atanh"):
            x = e.node("Mul", [e.node("Tanh", [x]), e.scalar(0.9)])
        elif r["fn"] == "Acosh":
            x = e.node("Add", [e.node("Abs", [x]), e.scalar(1.0)])
        return e.node(r["fn"], [x])


class NanInf(Op):
    """x through IsNaN/IsInf (no input is NaN or infinite, so the value is x)."""
    name = "isnan_isinf"
    builders = ("onnx",)
    min_opset = 10

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["IsNaN", "IsInf"])), "pos": int(g.rng.integers(0, 2)),
                    "neg": int(g.rng.integers(0, 2))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        if r["kind"] == "IsNaN":
            return e.node("Where", [e.node("IsNaN", [x]), e.scalar(0.0), x])
        flag = e.node("IsInf", [x], detect_positive=r["pos"], detect_negative=r["neg"])
        return e.node("Add", [x, e.node("Cast", [flag], to=1)])


class GatherElements(Op):
    name = "gather_elements"
    ranks = range(1, 7)
    min_opset = 11

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(0, a.rank)), "seed": g.seed(), "n": int(g.rng.integers(1, 5)),
                    "shrink": [int(v) for v in g.rng.random(6) < 0.3], "neg": int(g.builder == "onnx")}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        ishape = tuple(p["n"] if i == ax else (max(1, d // 2) if p["shrink"][i] else d) for i, d in enumerate(s))
        idx = wrng(p).integers(0, s[ax], ishape).astype(np.int64)
        if p["neg"]:
            idx = idx - s[ax] * (wrng(p, 1).random(ishape) < 0.5)
        return Val(check_size(ishape)), dict(p, ax=ax), {"idx": idx}

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.gather(x, r["ax"], w["idx"])

    def onnx(self, r, w, e, x):
        return e.node("GatherElements", [x, e.init(w["idx"])], axis=r["ax"] - (len(e.shape_of(x)) if r["neg"] else 0))


def _unique_line_indices(p, ishape, ax, dim):
    """Indices of shape ishape whose values along `ax` are distinct (a
    permutation prefix per line), so a scatter writes each element once."""
    rng = wrng(p, 5)
    moved = np.moveaxis(np.zeros(ishape, np.int64), ax, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    for row in flat:
        row[:] = rng.permutation(dim)[:len(row)]
    return np.moveaxis(flat.reshape(moved.shape), -1, ax)


class ScatterElements(Op):
    name = "scatter_elements"
    ranks = range(1, 7)
    min_opset = 11

    def draw(self, g, a):
        red = str(g.rng.choice(["none", "none", "add", "mul"])) if g.builder == "onnx" and g.opset >= 16 else "none"
        return [], {"axis": int(g.rng.integers(0, a.rank)), "seed": g.seed(), "red": red,
                    "frac": float(g.rng.uniform(0.3, 1.0)), "shrink": [int(v) for v in g.rng.random(6) < 0.3]}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        ishape = tuple(max(1, int(d * p["frac"])) if i == ax else (max(1, d // 2) if p["shrink"][i] else d)
                       for i, d in enumerate(s))
        if p["red"] == "none":
            idx = _unique_line_indices(p, ishape, ax, s[ax])
        else:
            idx = wrng(p, 2).integers(0, s[ax], ishape).astype(np.int64)
        upd = normal(p, ishape, salt=3) if p["red"] != "mul" else uniform(p, ishape, 0.5, 1.5, 3)
        return Val(s), dict(p, ax=ax), {"idx": idx, "upd": upd}

    def torch(self, r, w, x):
        return x.scatter(r["ax"], w["idx"], w["upd"])

    def onnx(self, r, w, e, x):
        attrs = {"axis": r["ax"]}
        if r["red"] != "none":
            attrs["reduction"] = r["red"]
        return e.node("ScatterElements", [x, e.init(w["idx"]), e.init(w["upd"])], **attrs)


class GatherScatterND(Op):
    name = "gather_scatter_nd"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 12

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["GatherND", "ScatterND"])), "seed": g.seed(),
                    "k": int(g.rng.integers(1, 4)), "m": int(g.rng.integers(1, 5)),
                    "batch": int(g.rng.random() < 0.3),
                    "red": str(g.rng.choice(["none", "none", "add", "mul"])) if g.opset >= 16 else "none"}

    def infer(self, p, ins):
        s = ins[0].shape
        r = dict(p)
        rank = len(s)
        b = 1 if p["batch"] and p["kind"] == "GatherND" and rank >= 2 else 0
        k = min(p["k"], rank - b)
        if k < 1:
            raise Invalid("rank")
        rng = wrng(p)
        if p["kind"] == "ScatterND":
            cells = int(np.prod(s[:k]))
            m = min(p["m"], cells)
            flat = rng.permutation(cells)[:m] if p["red"] == "none" else rng.integers(0, cells, m)
            idx = np.stack(np.unravel_index(flat, s[:k]), axis=-1).astype(np.int64)
            ushape = (m,) + s[k:]
            upd = normal(p, ushape, salt=1) if p["red"] != "mul" else uniform(p, ushape, 0.5, 1.5, 1)
            return Val(s), dict(r, k=k), {"idx": idx, "upd": upd}
        ishape = s[:b] + (p["m"], k)
        idx = np.stack([rng.integers(0, s[b + j], ishape[:-1]) for j in range(k)], axis=-1).astype(np.int64)
        out = s[:b] + (p["m"],) + s[b + k:]
        if len(out) > 6:
            raise Invalid("rank")
        return Val(check_size(out)), dict(r, k=k, b=b), {"idx": idx}

    def onnx(self, r, w, e, x):
        if r["kind"] == "GatherND":
            return e.node("GatherND", [x, e.init(w["idx"])], batch_dims=r["b"])
        attrs = {"reduction": r["red"]} if r["red"] != "none" else {}
        return e.node("ScatterND", [x, e.init(w["idx"]), e.init(w["upd"])], **attrs)


class Trilu(Op):
    name = "trilu"
    builders = ("onnx",)
    ranks = range(2, 7)
    min_opset = 14

    def draw(self, g, a):
        return [], {"upper": int(g.rng.integers(0, 2)), "k": int(g.rng.integers(-2, 3)),
                    "with_k": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        ins = [x] + ([e.init(np.array(r["k"], np.int64))] if r["with_k"] else [])
        return e.node("Trilu", ins, upper=r["upper"])


class EyeLikeAdd(Op):
    name = "eyelike"
    builders = ("onnx",)
    ranks = (2,)
    min_opset = 9

    def draw(self, g, a):
        return [], {"k": int(g.rng.integers(-1, 2))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        return e.node("Add", [x, e.node("EyeLike", [x], k=r["k"])])


class OneHotMatMul(Op):
    """x [..., K] @ OneHot(indices [K], depth N, [off, on]): a column gather."""
    name = "onehot"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 11

    def draw(self, g, a):
        return [], {"seed": g.seed(), "depth": int(g.rng.integers(1, 6)), "axis": int(g.rng.choice([-1, 1])),
                    "off": float(g.rng.choice([0.0, -0.5])), "on": float(g.rng.choice([1.0, 2.0]))}

    def infer(self, p, ins):
        s = ins[0].shape
        idx = wrng(p).integers(-p["depth"], p["depth"], (s[-1],)).astype(np.int64)
        return Val(check_size(s[:-1] + (p["depth"],))), dict(p), {"idx": idx}

    def onnx(self, r, w, e, x):
        oh = e.node("OneHot", [e.init(w["idx"]), e.init(np.array([r["depth"]], np.int64)),
                               e.init(np.array([r["off"], r["on"]], np.float32))], axis=r["axis"])
        return e.node("MatMul", [x, oh])


class Hardmax(Op):
    name = "hardmax"
    builders = ("onnx",)
    separated_only = True
    ranks = range(1, 7)

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(-a.rank, a.rank))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p, axis=axis_of(p["axis"], ins[0].rank)), {}

    def onnx(self, r, w, e, x):
        return e.node("Hardmax", [x], axis=r["axis"])


class ReverseSequence(Op):
    name = "reverse_sequence"
    builders = ("onnx",)
    ranks = range(2, 7)
    min_opset = 10

    def draw(self, g, a):
        return [], {"batch": int(g.rng.integers(0, 2)), "seed": g.seed()}

    def infer(self, p, ins):
        s = ins[0].shape
        b, t = p["batch"], 1 - p["batch"]
        lens = wrng(p).integers(1, s[t] + 1, (s[b],)).astype(np.int64)
        return Val(s), dict(p, b=b, t=t), {"lens": lens}

    def onnx(self, r, w, e, x):
        return e.node("ReverseSequence", [x, e.init(w["lens"])], batch_axis=r["b"], time_axis=r["t"])


class Lrn(Op):
    name = "lrn"
    builders = ("onnx",)
    ranks = (4,)

    def draw(self, g, a):
        return [], {"size": int(g.rng.choice([1, 3, 5])), "alpha": float(g.rng.choice([1e-4, 0.01, 0.5])),
                    "beta": float(g.rng.choice([0.75, 0.5])), "bias": float(g.rng.choice([1.0, 2.0]))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        return e.node("LRN", [x], size=r["size"], alpha=r["alpha"], beta=r["beta"], bias=r["bias"])


class TrainingDropout(Op):
    """Dropout with training_mode true and ratio 0: an identity."""
    name = "training_dropout"
    builders = ("onnx",)
    min_opset = 12

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        return e.node("Dropout", [x, e.scalar(0.0), e.init(np.array(True))])


class Einsum(Op):
    name = "einsum"
    ranks = range(1, 6)
    min_opset = 12

    def draw(self, g, a):
        kinds = ["matmul", "transpose", "reduce"] if a.rank >= 2 else ["matmul", "reduce"]
        return [], {"kind": str(g.rng.choice(kinds)), "seed": g.seed(), "n": int(g.rng.choice([1, 3, 4])),
                    "implicit": int(g.rng.random() < 0.3), "ellipsis": int(g.rng.random() < 0.3),
                    "perm_seed": int(g.rng.integers(0, 1000)), "drop": [int(v) for v in g.rng.random(6) < 0.5]}

    def infer(self, p, ins):
        s = ins[0].shape
        rank = len(s)
        letters = "abcdefgh"[:rank]
        kind = p["kind"]
        w = {}
        if kind == "matmul":
            k = letters[-1]
            w["b"] = normal(p, (s[-1], p["n"]), 1 / math.sqrt(s[-1]))
            lhs = ("..." + letters[-1]) if p["ellipsis"] else letters
            out = (("..." + "z") if p["ellipsis"] else letters[:-1] + "z")
            eq = f"{lhs},{k}z" + ("" if p["implicit"] and not p["ellipsis"] else f"->{out}")
            shape = s[:-1] + (p["n"],)
        elif kind == "transpose":
            perm = list(np.random.default_rng(p["perm_seed"]).permutation(rank))
            eq = f"{letters}->{''.join(letters[i] for i in perm)}"
            shape = tuple(s[i] for i in perm)
        else:
            keep = [i for i in range(rank) if not p["drop"][i]]
            if len(keep) == rank:
                keep = keep[:-1]
            eq = f"{letters}->{''.join(letters[i] for i in keep)}"
            shape = tuple(s[i] for i in keep)
        return Val(check_size(shape)), dict(p, eq=eq), w

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.einsum(r["eq"], x, w["b"]) if "b" in w else torch.einsum(r["eq"], x)

    def onnx(self, r, w, e, x):
        ins = [x] + ([e.init(w["b"])] if "b" in w else [])
        return e.node("Einsum", ins, equation=r["eq"])


class IntArith(Op):
    """Integer arithmetic: Cast(separated x -> int32/int64) (op) an integer
    constant, Cast back to float. Div truncates toward zero; divisors are
    non-zero."""
    name = "int_arith"
    separated_only = True

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Abs", "Neg"])),
                    "to": str(g.rng.choice(["int32", "int64"])), "seed": g.seed(), "swap": int(g.rng.random() < 0.3),
                    "crank": int(g.rng.integers(0, a.rank + 1)), "keep": [int(v) for v in g.rng.random(6) < 0.5]}

    def infer(self, p, ins):
        cs = const_shape(ins[0].shape, p["keep"], p["crank"])
        c = wrng(p).choice([-3, -2, -1, 1, 2, 3, 5], cs)
        return Val(broadcast(ins[0].shape, cs)), dict(p), {"c": c.astype(np.int64)}

    def torch(self, r, w, x):
        torch, _ = _t()
        dt = getattr(torch, r["to"])
        xi, c = x.to(dt), w["c"].to(dt)
        if r["kind"] in ("Abs", "Neg"):
            y = torch.abs(xi) if r["kind"] == "Abs" else torch.neg(xi)
        elif r["kind"] == "Div":
            y = torch.div(xi, c, rounding_mode="trunc")
        else:
            a, b = (c, xi) if r["swap"] and r["kind"] != "Div" else (xi, c)
            y = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Max": torch.maximum,
                 "Min": torch.minimum}[r["kind"]](a, b)
        return y.to(x.dtype)

    def onnx(self, r, w, e, x):
        code, dt = {"int32": (6, np.int32), "int64": (7, np.int64)}[r["to"]]
        xi = e.node("Cast", [x], to=code)
        if r["kind"] in ("Abs", "Neg"):
            y = e.node(r["kind"], [xi])
        else:
            c = e.init(w["c"].astype(dt))
            y = e.node(r["kind"], [c, xi] if r["swap"] and r["kind"] != "Div" else [xi, c])
        return e.node("Cast", [y], to=1)


def new_ops():
    return [Mod(), InverseTrig(), NanInf(), GatherElements(), ScatterElements(), GatherScatterND(), Trilu(),
            EyeLikeAdd(), OneHotMatMul(), Hardmax(), ReverseSequence(), Lrn(), TrainingDropout(), Einsum(),
            IntArith()]


def all_ops():
    ops = _unaries() + [Binary(), Variadic(), PRelu(), WhereCompare(), CastRoundTrip(), MatMul(), Gemm(), Conv(),
                        ConvTranspose(), Pool(), GlobalPool(), Resize(), Upsample(), BatchNorm(), InstanceNorm(), LayerNorm(),
                        Softmax(), Reduce(), ArgReduce(), TopK(), Transpose(), Reshape(), Concat(), Slice(),
                        Split(), Pad(), Tile(), Expand(), Gather(), DepthSpace(), ShapeOps()] + new_ops()
    return {op.name: op for op in ops}
