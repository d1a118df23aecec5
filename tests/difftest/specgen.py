"""Random model specs: a seed becomes a small JSON description of a model
(graph inputs with their shapes and data kinds, a list of ops, outputs).

Shapes are drawn with the corner cases on purpose (C = H = W, 1x1 and 1xN
spatial, one channel, odd sizes, every rank from 1 to 6), binary ops
broadcast along random axes, and motifs (conv -> batchnorm -> relu,
batchnorm -> conv, transpose pairs around elementwise ops, reshape chains,
concatenated transposes, residual adds) make the optimizer's rewrites fire.
"""

import numpy as np

import ops as opsmod
import ops_tensor
from ops import F, Invalid, Val

OPS = opsmod.all_ops()
MAX_OPS = 9
LATE = opsmod.late_op_names()
# How often a drawn op is replaced by an applicable op of ops.LATE_ORDER. The
# replacement comes from a second random stream, so a seed whose draws are
# never replaced keeps the spec it had before those ops existed.
LATE_RATE = 0.2


def draw_input_shape(rng, rank):
    """A shape of `rank` with a corner case chosen on purpose."""
    if rank == 4:
        n = int(rng.choice([1, 1, 1, 2]))
        case = rng.choice(["chw_equal", "chw_equal", "1x1", "1xn", "c1", "odd", "any"])
        if case == "chw_equal":
            s = int(rng.choice([2, 3, 4, 5, 8]))
            return [n, s, s, s]
        if case == "1x1":
            return [n, int(rng.choice([3, 4, 8, 16])), 1, 1]
        if case == "1xn":
            return [n, int(rng.choice([1, 2, 4])), 1, int(rng.choice([5, 7, 8, 12]))]
        if case == "c1":
            return [n, 1, int(rng.choice([4, 5, 8])), int(rng.choice([4, 6, 9]))]
        if case == "odd":
            return [n, int(rng.choice([3, 5])), int(rng.choice([3, 5, 7, 9])), int(rng.choice([3, 5, 7, 9]))]
        return [n] + [int(v) for v in rng.integers(1, 11, 3)]
    if rank == 3 and rng.random() < 0.3:
        s = int(rng.choice([2, 3, 4, 6]))
        return [1, s, s]
    dims = [int(v) for v in rng.choice([1, 2, 3, 4, 5, 7, 8], rank)]
    if rank >= 2 and rng.random() < 0.4:
        i, j = rng.choice(rank, 2, replace=False)
        dims[j] = dims[i] = max(dims[i], 2)
    while int(np.prod(dims)) > 1024:
        dims[int(np.argmax(dims))] //= 2
    return dims


class Gen:
    def __init__(self, seed, builder):
        self.rng = np.random.default_rng(seed)
        self.builder = builder
        self.opset = int(self.rng.choice([10, 11, 13, 14, 17] if builder == "torch" else [9, 10, 11, 13, 13, 17, 17]))
        self.inputs = []  # spec dicts
        self.ops = []  # spec dicts
        self.vals = {}  # ref -> Val
        self.consumed = set()
        self._seed = int(self.rng.integers(1, 2 ** 31))

    def seed(self):
        self._seed += 1
        return self._seed

    def add_input(self, shape, data="normal", scale=1.0):
        name = f"x{len(self.inputs)}"
        self.inputs.append({"name": name, "shape": list(shape), "data": data, "scale": scale})
        self.vals[name] = Val(shape, F, separated=data == "separated")
        return name

    def float_refs(self):
        return [r for r, v in self.vals.items() if v.dtype == F]

    def ref_of(self, val):
        for r, v in self.vals.items():
            if v is val:
                return r
        return None

    def pick_other(self, a):
        """A second operand for a binary op: an existing value of a
        broadcast-compatible shape, or a new graph input whose shape
        broadcasts against `a` along random axes."""
        cands = [r for r in self.float_refs() if self.vals[r] is not a and not self.vals[r].separated]
        self.rng.shuffle(cands)
        for r in cands:
            try:
                opsmod.broadcast(a.shape, self.vals[r].shape)
                return r
            except Invalid:
                pass
        if len(self.inputs) >= 3:
            return None
        rank = int(self.rng.integers(0, a.rank + 1))
        shape = opsmod.const_shape(a.shape, [int(v) for v in self.rng.random(6) < 0.5], rank)
        if self.rng.random() < 0.2 and a.rank < 6:  # broadcast the other way: a grows
            shape = (int(self.rng.choice([2, 3])),) + tuple(a.shape)
        return self.add_input(shape)

    def pick_float(self, exclude=None):
        cands = [r for r in self.float_refs() if self.vals[r] is not exclude]
        return str(self.rng.choice(cands)) if cands else None

    def pick_concat_partners(self, a, ax):
        cands = [r for r in self.float_refs() if self.vals[r].rank == a.rank and all(
            x == y for i, (x, y) in enumerate(zip(self.vals[r].shape, a.shape)) if i != ax)]
        n = int(self.rng.integers(0, 3))
        return [str(self.rng.choice(cands)) for _ in range(n)] if cands else []

    def try_op(self, name, a_ref, overrides=None):
        """Draws `name` on operand a_ref, resolves it; returns the new ref or None."""
        op = OPS[name]
        a = self.vals[a_ref]
        if not op.applicable(a, self.builder, self.opset):
            return None
        n_inputs = len(self.inputs)
        drawn = op.draw(self, a)
        if drawn is None:
            return None
        extra, p = drawn
        p.update(overrides or {})
        refs = [a_ref] + [r for r in extra if r]
        try:
            out, _, _ = op.infer(p, [self.vals[r] for r in refs])
        except (Invalid, IndexError, ZeroDivisionError, ValueError, TypeError):
            self._drop_inputs(n_inputs)
            return None
        ref = f"v{len(self.ops)}"
        self.ops.append({"id": ref, "op": name, "in": refs, "p": p})
        self.vals[ref] = out
        self.consumed.update(refs)
        return ref

    def _drop_inputs(self, n):
        for spec in self.inputs[n:]:
            del self.vals[spec["name"]]
        del self.inputs[n:]

    # --- motifs -------------------------------------------------------------

    def motif(self, a_ref):
        a = self.vals[a_ref]
        kinds = ["transpose_sandwich", "transpose_pair", "reshape_chain", "residual", "concat_transposed", "head"]
        if a.rank == 4:
            kinds += ["conv_bn_relu", "bn_conv", "conv_bn_relu"]
        kind = str(self.rng.choice(kinds))
        if kind == "conv_bn_relu":
            r = self.try_op("conv", a_ref)
            r = r and self.try_op("batchnorm", r)
            return r and self.try_op(str(self.rng.choice(["relu", "clip", "sigmoid"])), r)
        if kind == "head":  # a classifier head: flatten to 2-D, then Gemm
            if a.rank < 2:
                return None
            r = self.try_op("reshape", a_ref, {"mode": str(self.rng.choice(["shape_of", "flatten"])), "axis": 1})
            return r and self.try_op("gemm", r)
        if kind == "bn_conv":
            r = self.try_op("batchnorm", a_ref)
            return r and self.try_op("conv", r)
        if kind in ("transpose_sandwich", "transpose_pair"):
            if a.rank < 2:
                return None
            perm = ops_tensor.perm_with_equal_swap(self.rng, a.shape)
            r = self.try_op("transpose", a_ref, {"perm": perm})
            if r and kind == "transpose_sandwich":
                r = self.try_op(str(self.rng.choice(["relu", "tanh", "binary", "clip"])), r)
            inverse = [int(v) for v in np.argsort(perm)]
            return r and self.try_op("transpose", r, {"perm": inverse})
        if kind == "reshape_chain":
            r = self.try_op("reshape", a_ref, {"mode": "merge"})
            r = r and self.try_op(str(self.rng.choice(["relu", "binary", "transpose"])), r)
            return r and self.try_op("reshape", r, {"mode": "split"})
        if kind == "residual":
            if a.rank == 4:
                r = self.try_op("conv", a_ref, {"o": a.shape[1], "s": 1, "d": 1, "k": 3, "kw": 3, "pad": [1] * 4,
                                                "sym": 1, "auto": "NOTSET", "groups": "1"})
            else:
                r = self.try_op(str(self.rng.choice(["tanh", "sigmoid", "relu"])), a_ref)
            if not r:
                return None
            out = self.try_op("binary", r, {"kind": "add"})
            if out and self.ops[-1]["in"][1:] != [a_ref]:
                # Make it a true residual: the second operand is the block's input.
                try:
                    self.vals[out] = OPS["binary"].infer(self.ops[-1]["p"], [self.vals[r], self.vals[a_ref]])[0]
                    self.ops[-1]["in"] = [r, a_ref]
                    self.consumed.add(a_ref)
                except Invalid:
                    pass
            return out
        # concat of two transposes of the same value (sinking across concat)
        if a.rank < 2:
            return None
        perm = ops_tensor.perm_with_equal_swap(self.rng, a.shape)
        r1 = self.try_op("transpose", a_ref, {"perm": perm})
        r2 = r1 and self.try_op("relu", a_ref)
        r2 = r2 and self.try_op("transpose", r2, {"perm": perm})
        if not r2:
            return None
        return self._concat(r1, r2)

    def _concat(self, r1, r2):
        ax = int(self.rng.integers(0, self.vals[r1].rank))
        ref = f"v{len(self.ops)}"
        p = {"axis": ax, "seed": self.seed(), "cdim": 1, "const": 0, "neg": 0}
        try:
            out, _, _ = OPS["concat"].infer(p, [self.vals[r1], self.vals[r2]])
        except Invalid:
            return None
        self.ops.append({"id": ref, "op": "concat", "in": [r1, r2], "p": p})
        self.vals[ref] = out
        self.consumed.update([r1, r2])
        return ref


def generate_spec(seed, builder=None):
    """The spec of seed `seed` (builder alternates with the seed's parity
    unless given)."""
    builder = builder or ("torch" if seed % 2 == 0 else "onnx")
    g = Gen(seed, builder)
    rng = g.rng
    rank = int(rng.choice([1, 2, 2, 3, 3, 4, 4, 4, 4, 4, 5, 6]))
    data = "separated" if rng.random() < 0.3 else "normal"
    scale = 1.0 if data == "separated" else float(rng.choice([1.0] * 8 + [1e-3, 1e3]))
    x0 = g.add_input(draw_input_shape(rng, rank), data, scale)
    last = x0
    n_ops = int(rng.integers(1, MAX_OPS))
    separated_ops = [n for n, op in OPS.items() if op.separated_only and n not in LATE]
    plain_ops = [n for n, op in OPS.items() if not op.separated_only and n not in LATE]
    late_rng = np.random.default_rng([int(seed), 0x1a7e])

    def late_or(name, a_ref):
        """`name`, or LATE_RATE of the time an op of LATE_ORDER applicable to a_ref."""
        if late_rng.random() >= LATE_RATE:
            return name
        a = g.vals[a_ref]
        cands = [n for n in LATE if OPS[n].separated_only == OPS[name].separated_only and
                 OPS[n].applicable(a, builder, g.opset)]
        if not cands:
            return name
        late_weights = np.array([OPS[n].weight for n in cands])
        return str(late_rng.choice(cands, p=late_weights / late_weights.sum()))
    weights = np.array([OPS[n].weight for n in plain_ops])
    weights = weights / weights.sum()
    attempts = 0
    while len(g.ops) < n_ops and attempts < 60:
        attempts += 1
        # Discontinuous ops read a separated graph input directly.
        seps = [i["name"] for i in g.inputs if i["data"] == "separated" and i["name"] not in g.consumed]
        if seps and rng.random() < 0.7:
            ref = g.try_op(late_or(str(rng.choice(separated_ops)), seps[0]), seps[0])
            last = ref or last
            continue
        if rng.random() < 0.25:
            ref = g.motif(last if g.vals[last].dtype == F else g.pick_float())
        else:
            a = last if rng.random() < 0.65 else str(rng.choice(list(g.vals)))
            if g.vals[a].separated and a in g.consumed:
                a = last
            ref = g.try_op(late_or(str(rng.choice(plain_ops, p=weights)), a), a)
        last = ref or last
    if not g.ops:
        g.try_op("relu", x0)
    outputs = [o["id"] for o in g.ops if o["id"] not in g.consumed]
    if g.ops[-1]["id"] not in outputs:
        outputs.append(g.ops[-1]["id"])
    outputs = outputs[-3:]
    return {"name": f"s{seed}", "seed": int(seed), "builder": builder, "opset": g.opset,
            "data_seed": int(seed) * 31 + 7, "inputs": g.inputs, "ops": g.ops, "outputs": outputs}
