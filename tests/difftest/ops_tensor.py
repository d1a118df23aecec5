"""Data-movement ops of the difftest spec language: Transpose, Reshape and friends,
Concat, Slice, Split, Pad, Tile, Expand, the gathers and scatters, Trilu, OneHot, shape ops."""

import math

import numpy as np

from ops import F, I64, Invalid, Op, Val, _t, check_size, normal, uniform, wrng

# ---------------------------------------------------------------------------
# Data movement


def perm_with_equal_swap(rng, shape):
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
        return [], {"perm": perm_with_equal_swap(g.rng, a.shape)}

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


def ops():
    return [Transpose(), Reshape(), Concat(), Slice(), Split(), Pad(), Tile(), Expand(), Gather(), DepthSpace(), ShapeOps(), GatherElements(), ScatterElements(), GatherScatterND(), Trilu(), EyeLikeAdd(), OneHotMatMul(), ReverseSequence()]


# ---------------------------------------------------------------------------
# Ops imported since the first op table (ops.LATE_ORDER)


class CumSum(Op):
    """CumSum along a constant axis; ONNX: exclusive, reverse."""
    name = "cumsum"
    ranks = range(1, 7)
    min_opset = 11
    weight = 0.3  # applies to every value of both builders

    def draw(self, g, a):
        onnx = g.builder == "onnx"
        return [], {"axis": int(g.rng.integers(-a.rank, a.rank)), "exclusive": int(onnx and g.rng.random() < 0.4),
                    "reverse": int(onnx and g.rng.random() < 0.4), "axis_i32": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p, axis=p["axis"] % ins[0].rank), {}

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.cumsum(x, r["axis"])

    def onnx(self, r, w, e, x):
        axis = e.init(np.array(r["axis"], np.int32 if r["axis_i32"] else np.int64))
        return e.node("CumSum", [x, axis], exclusive=r["exclusive"], reverse=r["reverse"])


class Compress(Op):
    """Compress by a constant condition along an axis (possibly shorter than
    the axis), or of the flattened input without one."""
    name = "compress"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 11

    def draw(self, g, a):
        return [], {"seed": g.seed(), "axis": int(g.rng.integers(-a.rank, a.rank)),
                    "flat": int(g.rng.random() < 0.2), "short": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = ins[0].shape
        length = int(np.prod(s)) if p["flat"] else s[p["axis"] % len(s)]
        if p["short"] and length > 1:
            length -= 1
        cond = wrng(p, 1).random(length) < 0.6
        if not cond.any():
            cond[int(wrng(p, 2).integers(0, length))] = True
        kept = int(cond.sum())
        if p["flat"]:
            out = (kept,)
        else:
            ax = p["axis"] % len(s)
            out = s[:ax] + (kept,) + s[ax + 1:]
        return Val(out), dict(p), {"cond": cond}

    def onnx(self, r, w, e, x):
        attrs = {} if r["flat"] else {"axis": r["axis"]}
        return e.node("Compress", [x, e.init(w["cond"])], **attrs)


class MaxUnpool(Op):
    """MaxUnpool of x [N, C, h, w] with constant indices (Ember imports no
    MaxPool Indices output): distinct flat positions of the unpooled shape per
    plane; output_shape given or not, but never larger than the default: there
    ONNX's node test keeps each index's coordinates and ONNX Runtime
    re-flattens it into the larger shape (docs/testing.md)."""
    name = "max_unpool"
    builders = ("onnx",)
    ranks = (4,)
    min_opset = 11
    weight = 2.0  # rank 4 and ONNX only

    def draw(self, g, a):
        k = int(g.rng.choice([1, 2, 2, 3]))
        return [], {"seed": g.seed(), "k": k, "s": int(g.rng.choice([1, 2, 2, 3])), "pad": int(g.rng.random() < 0.3),
                    "explicit": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        k, s = p["k"], p["s"]
        pad = min(p["pad"], k // 2)
        uh, uw = (h - 1) * s + k - 2 * pad, (w_ - 1) * s + k - 2 * pad
        if uh * uw < h * w_:
            raise Invalid("fewer unpooled positions than values")
        rng = wrng(p, 1)
        planes = [rng.permutation(uh * uw)[:h * w_] + plane * uh * uw for plane in range(n * c)]
        idx = np.array(planes, np.int64).reshape(n, c, h, w_)
        out = (n, c, uh, uw)
        return Val(check_size(out)), dict(p, pad=pad, out=list(out)), {"idx": idx}

    def onnx(self, r, w, e, x):
        ins = [x, e.init(w["idx"])] + ([e.init(np.array(r["out"], np.int64))] if r["explicit"] else [])
        return e.node("MaxUnpool", ins, kernel_shape=[r["k"]] * 2, strides=[r["s"]] * 2, pads=[r["pad"]] * 4)


class Window(Op):
    """x times HannWindow/HammingWindow/BlackmanWindow along the last axis."""
    name = "window"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 17
    weight = 3.0  # opset 17 only

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(["HannWindow", "HammingWindow", "BlackmanWindow"])),
                    "periodic": int(g.rng.random() < 0.5), "default": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        if ins[0].shape[-1] < 2:
            raise Invalid("a window of one sample")
        symmetric = not p["default"] and not p["periodic"]
        if symmetric and p["kind"] == "BlackmanWindow" and ins[0].shape[-1] == 2:
            # Both samples are 0.42 - 0.5 + 0.08 = 0: the output is f32 rounding
            # residue (ONNX Runtime -2e-8, exact arithmetic -1e-17), not a value.
            raise Invalid("a symmetric Blackman window of two samples is zero")
        return Val(ins[0].shape), dict(p), {}

    def onnx(self, r, w, e, x):
        size = e.init(np.array(e.shape_of(x)[-1], np.int64))
        attrs = {} if r["default"] else {"periodic": r["periodic"], "output_datatype": 1}
        return e.node("Mul", [x, e.node(r["kind"], [size], **attrs)])


class Dft(Op):
    """DFT of x [..., L] (made [..., L, 1], or complex [..., L, 2] with
    sin(x) as the imaginary part) along an axis >= 1: inverse, onesided,
    dft_length; the output [..., L', 2]."""
    name = "dft"
    builders = ("onnx",)
    ranks = range(2, 5)
    min_opset = 17
    weight = 3.0  # opset 17 only

    def draw(self, g, a):
        return [], {"axis": int(g.rng.integers(1, a.rank)), "complex": int(g.rng.random() < 0.3),
                    "inverse": int(g.rng.random() < 0.3), "onesided": int(g.rng.random() < 0.3),
                    "length": str(g.rng.choice(["none", "none", "shorter", "longer"]))}

    def infer(self, p, ins):
        s = ins[0].shape
        ax = p["axis"] % len(s)
        if ax == 0 or s[ax] > 64:
            raise Invalid("DFT axis")
        n = {"none": s[ax], "shorter": max(1, s[ax] - 1), "longer": s[ax] + 3}[p["length"]]
        onesided = int(p["onesided"] and not p["complex"] and not p["inverse"])
        out = s[:ax] + ((n // 2 + 1) if onesided else n,) + s[ax + 1:] + (2,)
        return Val(check_size(out)), dict(p, axis=ax, n=n, onesided=onesided), {}

    def onnx(self, r, w, e, x):
        rank = len(e.shape_of(x))
        u = e.node("Unsqueeze", [x, e.init(np.array([rank], np.int64))])
        if r["complex"]:
            u = e.node("Concat", [u, e.node("Sin", [u])], axis=-1)
        ins = [u] + ([e.init(np.array(r["n"], np.int64))] if r["length"] != "none" else [])
        return e.node("DFT", ins, axis=r["axis"], inverse=r["inverse"], onesided=r["onesided"])


class Stft(Op):
    """STFT of x [batch, length] (made [batch, length, 1]): frame_step,
    frame_length, an optional window (a constant or a HannWindow), onesided."""
    name = "stft"
    builders = ("onnx",)
    ranks = (2,)
    min_opset = 17
    weight = 3.0  # opset 17 only

    def draw(self, g, a):
        return [], {"seed": g.seed(), "step": int(g.rng.choice([1, 2, 3, 4])), "flen": int(g.rng.choice([2, 3, 4,
                                                                                                          5, 8])),
                    "window": str(g.rng.choice(["none", "const", "hann"])), "onesided": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        b, length = ins[0].shape
        flen = min(p["flen"], length)
        if flen < 2:
            raise Invalid("signal too short")
        frames = (length - flen) // p["step"] + 1
        bins = flen // 2 + 1 if p["onesided"] else flen
        w = {"window": uniform(p, (flen,), 0.2, 1.0)} if p["window"] == "const" else {}
        return Val(check_size((b, frames, bins, 2))), dict(p, flen=flen), w

    def onnx(self, r, w, e, x):
        u = e.node("Unsqueeze", [x, e.init(np.array([2], np.int64))])
        flen = e.init(np.array(r["flen"], np.int64))
        window = ""
        if r["window"] == "const":
            window = e.init(w["window"])
        elif r["window"] == "hann":
            window = e.node("HannWindow", [flen])
        ins = [u, e.init(np.array(r["step"], np.int64)), window, flen]
        return e.node("STFT", ins, onesided=r["onesided"])


def late_ops():
    return [CumSum(), Compress(), MaxUnpool(), Window(), Dft(), Stft()]
