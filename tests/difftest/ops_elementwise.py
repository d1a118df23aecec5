"""Elementwise ops of the difftest spec language: unary ops and activations, binary ops
with broadcasting, comparisons and logic feeding Where, casts, Mod, integer arithmetic."""

import numpy as np

from ops import KNOWN_WRONG, Op, Val, _t, broadcast, check_size, const_shape, normal, uniform, wrng

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
# Mod, inverse trigonometric, IsNaN/IsInf, integer arithmetic


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


class IntArith(Op):
    """Integer arithmetic: Cast(separated x -> int32/int64) (op) an integer
    constant, Cast back to float. Div truncates toward zero; divisors are
    non-zero."""
    name = "int_arith"
    separated_only = True

    def draw(self, g, a):
        kinds = ["Add", "Sub", "Mul", "Div", "Abs", "Neg"] + (["Max", "Min"] if g.opset >= 12 else [])  # int Max: 12
        return [], {"kind": str(g.rng.choice(kinds)),
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


def unary_ops():
    return _unaries()


def ops():
    return [Binary(), Variadic(), PRelu(), WhereCompare(), CastRoundTrip(), Mod(), InverseTrig(), NanInf(), IntArith()]


class IntPow(Op):
    """Integer Pow (ops.LATE_ORDER): Cast(separated x -> int32/int64) to the
    power of a small non-negative integer constant (int32, int64 or float
    exponent), Cast back to float."""
    name = "int_pow"
    builders = ("onnx",)
    separated_only = True
    min_opset = 12

    def draw(self, g, a):
        return [], {"to": str(g.rng.choice(["int32", "int64"])), "exp": str(g.rng.choice(["int32", "int64",
                                                                                            "float"])),
                    "seed": g.seed(), "crank": int(g.rng.integers(0, a.rank + 1)),
                    "keep": [int(v) for v in g.rng.random(6) < 0.5]}

    def infer(self, p, ins):
        cs = const_shape(ins[0].shape, p["keep"], p["crank"])
        return Val(broadcast(ins[0].shape, cs)), dict(p), {"c": wrng(p).integers(0, 5, cs)}

    def onnx(self, r, w, e, x):
        code = {"int32": 6, "int64": 7}[r["to"]]
        dt = {"int32": np.int32, "int64": np.int64, "float": np.float32}[r["exp"]]
        y = e.node("Pow", [e.node("Cast", [x], to=code), e.init(w["c"].astype(dt))])
        return e.node("Cast", [y], to=1)


class F64Chain(Op):
    """f64 inside an f32 model (ops.LATE_ORDER): Cast to DOUBLE, Mul and Add
    by f64 constants, a unary op, optionally a reduction, then Cast (or
    CastLike) back to float. Ember runs the f64 part on the reference backend
    (other backends decline f64 and fall back to it)."""
    name = "f64_chain"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 9

    def draw(self, g, a):
        return [], {"fn": str(g.rng.choice(["Tanh", "Sigmoid", "Sin", "Abs", "Neg"])),
                    "reduce": str(g.rng.choice(["none", "sum", "max", "mean"])),
                    "axis": int(g.rng.integers(0, 6)), "keepdims": int(g.rng.random() < 0.5),
                    "like": int(g.rng.random() < 0.3), "seed": g.seed(), "crank": int(g.rng.integers(0, a.rank + 1)),
                    "keep": [int(v) for v in g.rng.random(6) < 0.5]}

    def infer(self, p, ins):
        cs = const_shape(ins[0].shape, p["keep"], p["crank"])
        shape = broadcast(ins[0].shape, cs)
        axis = p["axis"] % len(shape)
        if p["reduce"] != "none":
            shape = tuple(1 if i == axis else d for i, d in enumerate(shape) if p["keepdims"] or i != axis)
        weights = {"c": wrng(p).uniform(0.5, 2.0, cs), "b": wrng(p, 1).standard_normal(cs)}  # float64
        return Val(shape), dict(p, axis=axis), weights

    def onnx(self, r, w, e, x):
        y = e.node("Cast", [x], to=11)
        y = e.node("Add", [e.node("Mul", [y, e.init(w["c"])]), e.init(w["b"])])
        y = e.node(r["fn"], [y])
        if r["reduce"] != "none":
            op = {"sum": "ReduceSum", "max": "ReduceMax", "mean": "ReduceMean"}[r["reduce"]]
            if op == "ReduceSum" and e.opset >= 13:
                y = e.node(op, [y, e.init(np.array([r["axis"]], np.int64))], keepdims=r["keepdims"])
            else:
                y = e.node(op, [y], axes=[r["axis"]], keepdims=r["keepdims"])
        if r["like"] and e.opset >= 15:
            return e.node("CastLike", [y, x])
        return e.node("Cast", [y], to=1)


def late_ops():
    return [IntPow(), F64Chain()]
