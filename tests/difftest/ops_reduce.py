"""Reductions of the difftest spec language: Reduce*, ArgMax/ArgMin, TopK."""

import numpy as np

from ops import F, I64, KNOWN_WRONG, Invalid, Op, Val, _t, axis_of

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


def ops():
    return [Reduce(), ArgReduce(), TopK()]
