"""Linear algebra and neural-network ops of the difftest spec language: MatMul, Gemm,
Einsum, convolutions, pools, Resize/Upsample, normalisations, Softmax, Hardmax, LRN."""

import math

import numpy as np

from ops import KNOWN_WRONG, Invalid, Op, Val, _t, axis_of, check_size, normal, uniform, wrng

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


class Hardmax(Op):
    name = "hardmax"
    builders = ("onnx",)
    separated_only = True
    ranks = range(1, 7)

    def draw(self, g, a):
        if "hardmax_coerce" in KNOWN_WRONG and g.opset < 13:
            return [], {"axis": -1}  # see known_wrong_answers.txt
        return [], {"axis": int(g.rng.integers(-a.rank, a.rank))}

    def infer(self, p, ins):
        return Val(ins[0].shape), dict(p, axis=axis_of(p["axis"], ins[0].rank)), {}

    def onnx(self, r, w, e, x):
        return e.node("Hardmax", [x], axis=r["axis"])


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


class Rnn(Op):
    """LSTM, GRU and RNN (tanh) over a batch-first [N, L, F] input, one or two
    layers, one or two directions; PyTorch exports the ONNX LSTM/GRU/RNN ops."""
    name = "rnn"
    builders = ("torch",)
    ranks = (3,)
    weight = 6.0  # rank-3 values of torch specs are rare
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1}

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(list(self.gates))), "hidden": int(g.rng.choice([1, 2, 3, 5, 8])),
                    "layers": int(g.rng.choice([1, 1, 2])), "bidir": int(g.rng.random() < 0.5), "seed": g.seed()}

    def infer(self, p, ins):
        n, length, features = ins[0].shape
        if length > 12 or features > 32:
            raise Invalid("too long for a test")
        h, dirs, gates = p["hidden"], 2 if p["bidir"] else 1, self.gates[p["kind"]]
        w, k, bound = {}, 0, 1 / math.sqrt(h)
        for layer in range(p["layers"]):
            width = features if layer == 0 else h * dirs
            for d in range(dirs):
                for part, shape in (("w_ih", (gates * h, width)), ("w_hh", (gates * h, h)), ("b_ih", (gates * h,)),
                                    ("b_hh", (gates * h,))):
                    w[f"p{k:02d}_{part}"] = uniform(p, shape, -bound, bound, salt=k)
                    k += 1
        return Val(check_size((n, length, h * dirs))), dict(p), w

    def torch(self, r, w, x):
        torch, _ = _t()
        dirs = 2 if r["bidir"] else 1
        h0 = torch.zeros(r["layers"] * dirs, x.shape[0], r["hidden"], dtype=x.dtype)
        params = list(w.values())
        if r["kind"] == "lstm":
            return torch._VF.lstm(x, (h0, h0), params, True, r["layers"], 0.0, False, bool(r["bidir"]), True)[0]
        return getattr(torch._VF, r["kind"])(x, h0, params, True, r["layers"], 0.0, False, bool(r["bidir"]), True)[0]


def ops():
    return [Rnn(), MatMul(), Gemm(), Conv(), ConvTranspose(), Pool(), GlobalPool(), Resize(), Upsample(), BatchNorm(), InstanceNorm(), LayerNorm(), Softmax(), Hardmax(), Lrn(), TrainingDropout(), Einsum()]


# ---------------------------------------------------------------------------
# Ops imported since the first op table (drawn from specgen's second stream,
# ops.LATE_ORDER, so the specs of seeds that draw none of them do not change)


def _grid_coords(rng, n, size, mode, align):
    """n normalised grid coordinates over an axis of `size`; for nearest, the
    pixel coordinate stays 0.25 away from the rounding boundaries."""
    if mode == "nearest":
        pix = rng.integers(-1, size + 1, n) + rng.uniform(-0.25, 0.25, n)
    else:
        pix = rng.uniform(-1.2, size + 0.2, n)
    if align:
        return pix * 2 / max(size - 1, 1) - 1 if size > 1 else np.zeros(n)
    return (2 * pix + 1) / size - 1


class GridSample(Op):
    name = "grid_sample"
    ranks = (4,)
    min_opset = 16
    weight = 3.0  # opset 14-17 only

    def draw(self, g, a):
        return [], {"seed": g.seed(), "mode": str(g.rng.choice(["bilinear", "nearest", "bicubic"])),
                    "pad": str(g.rng.choice(["zeros", "border", "reflection"])), "align": int(g.rng.random() < 0.5),
                    "ho": int(g.rng.choice([1, 2, 3, 5])), "wo": int(g.rng.choice([1, 4, 6]))}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        if p["mode"] == "nearest" and p["align"] and min(h, w_) == 1:
            raise Invalid("nearest on a size-1 axis with align_corners")
        rng = wrng(p, 1)
        count = n * p["ho"] * p["wo"]
        gx = _grid_coords(rng, count, w_, p["mode"], p["align"])
        gy = _grid_coords(rng, count, h, p["mode"], p["align"])
        grid = np.stack([gx, gy], -1).reshape(n, p["ho"], p["wo"], 2).astype(np.float32)
        return Val(check_size((n, c, p["ho"], p["wo"]))), dict(p), {"grid": grid}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.grid_sample(x, w["grid"].to(x.dtype), r["mode"], r["pad"], bool(r["align"]))

    def onnx(self, r, w, e, x):
        return e.node("GridSample", [x, e.init(w["grid"])], mode=r["mode"], padding_mode=r["pad"],
                      align_corners=r["align"])


class ResizeCubic(Op):
    """Resize mode cubic (PyTorch's bicubic: a = -0.75; ONNX: a = -0.75 or
    -0.5, exclude_outside, every coordinate mode but tf_half_pixel_for_nn)."""
    name = "resize_cubic"
    ranks = (4,)
    min_opset = 11

    def draw(self, g, a):
        return [], {"sh": float(g.rng.choice([1.0, 2.0, 3.0, 0.5])), "sw": float(g.rng.choice([2.0, 1.5, 0.5])),
                    "by_size": int(g.rng.random() < 0.4), "align": int(g.rng.random() < 0.3),
                    "ctm": str(g.rng.choice(["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])),
                    "a": float(g.rng.choice([-0.75, -0.5])), "exclude": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        oh, ow = int(math.floor(h * p["sh"])), int(math.floor(w_ * p["sw"]))
        if oh < 1 or ow < 1:
            raise Invalid("resize to nothing")
        return Val(check_size((n, c, oh, ow))), dict(p, sizes=[n, c, oh, ow]), {}

    def torch(self, r, w, x):
        _, tf = _t()
        if r["by_size"] or r["align"]:
            return tf.interpolate(x, size=r["sizes"][2:], mode="bicubic", align_corners=bool(r["align"]))
        return tf.interpolate(x, scale_factor=(r["sh"], r["sw"]), mode="bicubic")

    def onnx(self, r, w, e, x):
        roi = e.init(np.zeros((0,), np.float32))
        if r["by_size"]:
            ins = [x, roi, e.init(np.zeros((0,), np.float32)), e.init(np.array(r["sizes"], np.int64))]
        else:
            ins = [x, roi, e.init(np.array([1, 1, r["sh"], r["sw"]], np.float32))]
        return e.node("Resize", ins, mode="cubic", coordinate_transformation_mode=r["ctm"], cubic_coeff_a=r["a"],
                      exclude_outside=r["exclude"])


class BatchNormTraining(Op):
    """BatchNormalization with training_mode 1: Y from the batch statistics,
    or the updated running mean or variance."""
    name = "batchnorm_training"
    builders = ("onnx",)
    ranks = (2, 3, 4)
    min_opset = 14
    weight = 3.0  # opset 14-17 only

    def draw(self, g, a):
        return [], {"seed": g.seed(), "eps": float(g.rng.choice([1e-5, 1e-3])),
                    "momentum": float(g.rng.choice([0.9, 0.1, 0.5])), "which": int(g.rng.choice([0, 0, 1, 2]))}

    def infer(self, p, ins):
        s = ins[0].shape
        if int(np.prod(s)) // s[1] < 2:
            raise Invalid("batch statistics over one element")
        c = s[1]
        w = {"scale": uniform(p, (c,), 0.5, 1.5, 1), "bias": normal(p, (c,), 0.1, 2),
             "mean": normal(p, (c,), 0.1, 3), "var": uniform(p, (c,), 0.5, 1.5, 4)}
        return Val(s if p["which"] == 0 else (c,)), dict(p), w

    def onnx(self, r, w, e, x):
        outs = e.node("BatchNormalization", [x] + [e.init(w[k]) for k in ("scale", "bias", "mean", "var")], n_out=3,
                      epsilon=r["eps"], momentum=r["momentum"], training_mode=1)
        return outs[r["which"]]


class LayerNormStats(Op):
    """LayerNormalization whose Mean or InvStdDev output is used."""
    name = "layernorm_stats"
    builders = ("onnx",)
    ranks = range(1, 7)
    min_opset = 17
    weight = 3.0  # opset 14-17 only

    def draw(self, g, a):
        return [], {"seed": g.seed(), "k": int(g.rng.integers(1, 3)), "which": str(g.rng.choice(["y_plus_mean",
                                                                                                  "mean", "inv"]))}

    def infer(self, p, ins):
        s = ins[0].shape
        k = min(p["k"], len(s))
        norm = s[len(s) - k:]
        if int(np.prod(norm)) < 2:
            raise Invalid("layer norm over one element")
        out = s if p["which"] == "y_plus_mean" else s[:len(s) - k] + (1,) * k
        return Val(out), dict(p, k=k), {"scale": uniform(p, norm, 0.5, 1.5, 1), "bias": normal(p, norm, 0.1, 2)}

    def onnx(self, r, w, e, x):
        y, mean, inv = e.node("LayerNormalization", [x, e.init(w["scale"]), e.init(w["bias"])], n_out=3,
                              axis=-r["k"], epsilon=1e-5)
        if r["which"] == "y_plus_mean":
            return e.node("Add", [y, mean])
        return mean if r["which"] == "mean" else inv


class Mvn(Op):
    """MeanVarianceNormalization over axes [0, 2, 3] (the default) or [2, 3]."""
    name = "mvn"
    builders = ("onnx",)
    ranks = (4,)
    min_opset = 9

    def draw(self, g, a):
        return [], {"axes": [[0, 2, 3], [2, 3]][int(g.rng.integers(0, 2))], "default": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        s = ins[0].shape
        axes = [0, 2, 3] if p["default"] else p["axes"]
        if int(np.prod([s[i] for i in axes])) < 4:
            raise Invalid("normalisation over too few elements")
        return Val(s), dict(p, axes=axes), {}

    def onnx(self, r, w, e, x):
        if r["default"]:
            return e.node("MeanVarianceNormalization", [x])
        return e.node("MeanVarianceNormalization", [x], axes=r["axes"])


class Det(Op):
    """Det of x [..., n, k] @ W [k, n] (a square matrix per batch)."""
    name = "det"
    ranks = range(2, 6)
    min_opset = 11
    weight = 0.5  # every rank 2-5 value; its products of 1e-3 or 1e3 inputs are often tiny or huge

    def draw(self, g, a):
        return [], {"seed": g.seed()}

    def infer(self, p, ins):
        s = ins[0].shape
        n, k = s[-2], s[-1]
        if n > 6:
            raise Invalid("matrix too large for a well-conditioned determinant")
        return Val(s[:-2]), dict(p), {"w": normal(p, (k, n), 1 / math.sqrt(k))}

    def torch(self, r, w, x):
        torch, _ = _t()
        return torch.det(torch.matmul(x, w["w"]))

    def onnx(self, r, w, e, x):
        return e.node("Det", [e.node("MatMul", [x, e.init(w["w"])])])


class Loss(Op):
    """NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss of x [N, C, d...]
    against a constant target: reduction none/sum/mean, optional weight,
    ignore_index (ONNX only: an ignored target out of range)."""
    name = "loss"
    ranks = (2, 3, 4)
    min_opset = 13

    def draw(self, g, a):
        return [], {"seed": g.seed(), "kind": str(g.rng.choice(["nll", "sce"])),
                    "reduction": str(g.rng.choice(["none", "sum", "mean"])), "weight": int(g.rng.random() < 0.5),
                    "ignore": str(g.rng.choice(["none", "class", "outside"] if g.builder == "onnx" else
                                               ["none", "class"])),
                    "log_prob": int(g.rng.random() < 0.3 and g.builder == "onnx")}  # torch: the loss only

    def infer(self, p, ins):
        s = ins[0].shape
        c = s[1]
        rng = wrng(p, 1)
        target = rng.integers(0, c, (s[0],) + s[2:]).astype(np.int64)
        ignore = {"none": None, "class": int(rng.integers(0, c)), "outside": -1}[p["ignore"]]
        if ignore == -1:
            target[rng.random(target.shape) < 0.2] = -1
        if ignore is not None and np.all(target == ignore):
            raise Invalid("every target ignored")
        w = {"target": target}
        if p["weight"]:
            w["weight"] = uniform(p, (c,), 0.5, 1.5, 2)
        log_prob = p["kind"] == "sce" and p["log_prob"]
        out = s if log_prob else (target.shape if p["reduction"] == "none" else ())
        return Val(out), dict(p, ignore_index=ignore, log_prob=int(log_prob)), w

    def torch(self, r, w, x):
        _, tf = _t()
        f = tf.nll_loss if r["kind"] == "nll" else tf.cross_entropy
        ii = -100 if r["ignore_index"] is None else r["ignore_index"]
        return f(x, w["target"], w.get("weight"), ignore_index=ii, reduction=r["reduction"])

    def onnx(self, r, w, e, x):
        ins = [x, e.init(w["target"])] + ([e.init(w["weight"])] if "weight" in w else [])
        attrs = {"reduction": r["reduction"]}
        if r["ignore_index"] is not None:
            attrs["ignore_index"] = r["ignore_index"]
        if r["kind"] == "nll":
            return e.node("NegativeLogLikelihoodLoss", ins, **attrs)
        if r["log_prob"]:
            return e.node("SoftmaxCrossEntropyLoss", ins, n_out=2, **attrs)[1]
        return e.node("SoftmaxCrossEntropyLoss", ins, **attrs)


class RnnOnnx(Op):
    """LSTM, GRU and RNN written directly over a [L, N, F] input (layout 0),
    with what PyTorch does not export: sequence_lens, initial_h/initial_c,
    peepholes, clip, other activations, GRU linear_before_reset 0, RNN Relu."""
    name = "rnn_onnx"
    builders = ("onnx",)
    ranks = (3,)
    min_opset = 14
    weight = 3.0  # rank 3 at opset 17 only
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}

    def draw(self, g, a):
        return [], {"kind": str(g.rng.choice(list(self.gates))), "hidden": int(g.rng.choice([1, 2, 3, 5])),
                    "dir": str(g.rng.choice(["forward", "reverse", "bidirectional"])), "seed": g.seed(),
                    "bias": int(g.rng.random() < 0.7), "lens": int(g.rng.random() < 0.4),
                    "init": int(g.rng.random() < 0.4), "peep": int(g.rng.random() < 0.4),
                    "clip": float(g.rng.choice([0.0, 0.0, 0.5, 2.0])), "act": int(g.rng.integers(0, 3)),
                    "lbr": int(g.rng.random() < 0.5), "which": str(g.rng.choice(["Y", "Y", "Y_h"]))}

    def infer(self, p, ins):
        length, n, features = ins[0].shape
        if length > 12 or features > 32:
            raise Invalid("too long for a test")
        h, gates = p["hidden"], self.gates[p["kind"]]
        dirs = 2 if p["dir"] == "bidirectional" else 1
        bound = 1 / math.sqrt(h)
        w = {"W": uniform(p, (dirs, gates * h, features), -bound, bound, 1),
             "R": uniform(p, (dirs, gates * h, h), -bound, bound, 2)}
        if p["bias"]:
            w["B"] = uniform(p, (dirs, 2 * gates * h), -bound, bound, 3)
        if p["lens"]:
            w["lens"] = wrng(p, 4).integers(1, length + 1, (n,)).astype(np.int32)
        if p["init"]:
            w["h0"] = normal(p, (dirs, n, h), 0.5, 5)
            w["c0"] = normal(p, (dirs, n, h), 0.5, 6)
        if p["peep"] and p["kind"] == "LSTM":
            w["P"] = uniform(p, (dirs, 3 * h), -bound, bound, 7)
        out = (length, dirs, n, h) if p["which"] == "Y" else (dirs, n, h)
        return Val(check_size(out)), dict(p, dirs=dirs), w

    def onnx(self, r, w, e, x):
        kind = r["kind"]
        names = [x, e.init(w["W"]), e.init(w["R"]), e.init(w["B"]) if "B" in w else "",
                 e.init(w["lens"]) if "lens" in w else "", e.init(w["h0"]) if "h0" in w else ""]
        if kind == "LSTM":
            names += [e.init(w["c0"]) if "h0" in w else "", e.init(w["P"]) if "P" in w else ""]
        while names[-1] == "":
            names.pop()
        acts = {"LSTM": [["Sigmoid", "Tanh", "Tanh"], ["HardSigmoid", "Tanh", "Tanh"], ["Sigmoid", "Relu", "Tanh"]],
                "GRU": [["Sigmoid", "Tanh"], ["HardSigmoid", "Tanh"], ["Sigmoid", "Relu"]],
                "RNN": [["Tanh"], ["Relu"], ["Sigmoid"]]}[kind][r["act"]]
        attrs = {"hidden_size": r["hidden"], "direction": r["dir"], "activations": acts * r["dirs"]}
        if r["clip"] > 0:
            attrs["clip"] = r["clip"]
        if kind == "GRU":
            attrs["linear_before_reset"] = r["lbr"]
        outs = e.node(kind, names, n_out=2, **attrs)
        return outs[0] if r["which"] == "Y" else outs[1]


class Spatial3d(Op):
    """3-D (rank-5 NCDHW) Conv, ConvTranspose, MaxPool, AveragePool,
    BatchNormalization, InstanceNormalization, global pools and (written as
    ONNX) LpPool and GlobalLpPool, which the importer lowers to 2-D
    primitives; per-dim kernels, strides, dilations and pads (asymmetric in
    ONNX, symmetric from PyTorch), auto_pad for ONNX convs."""
    name = "spatial3d"
    ranks = (5,)
    weight = 4.0  # rank 5 is rare, and one op covers ten kinds

    def draw(self, g, a):
        rng = g.rng
        dims = lambda choices: [int(v) for v in rng.choice(choices, 3)]
        kinds = ["conv", "conv", "conv_transpose", "maxpool", "avgpool", "batchnorm", "instancenorm", "global"]
        if g.builder == "onnx":  # PyTorch exports LPPool as Pow, AveragePool and Mul
            kinds += ["lppool", "global_lp"]
        return [], {"seed": g.seed(), "kind": str(rng.choice(kinds)), "p": int(rng.choice([1, 2, 2, 3])),
                    "o": int(rng.choice([1, 2, 4, 6])), "k": dims([1, 2, 2, 3]), "s": dims([1, 1, 2]),
                    "d": dims([1, 1, 2]) if g.opset >= 10 else [1, 1, 1],
                    "pad": [int(v) for v in rng.integers(0, 2, 6)],
                    "sym": int(g.builder == "torch" or rng.random() < 0.5), "groups": int(rng.random() < 0.3),
                    "bias": int(rng.random() < 0.7), "ceil": int(g.opset >= 10 and rng.random() < 0.3),
                    "cip": int(rng.random() < 0.5), "op": dims([0, 1]), "gkind": str(rng.choice(["max", "avg"])),
                    "auto": str(rng.choice(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"]))
                    if g.builder == "onnx" else "NOTSET"}

    def infer(self, p, ins):
        shape = ins[0].shape
        n, c, spatial = shape[0], shape[1], shape[2:]
        kind = p["kind"]
        r = dict(p)
        if kind in ("batchnorm", "instancenorm"):
            if kind == "instancenorm" and int(np.prod(spatial)) < 2:
                raise Invalid("instance norm over one element")
            w = {"scale": uniform(p, (c,), 0.5, 1.5, 1), "bias": normal(p, (c,), 0.1, 2)}
            if kind == "batchnorm":
                w.update(mean=normal(p, (c,), 0.1, 3), var=uniform(p, (c,), 0.5, 1.5, 4))
            return Val(shape), r, w
        if kind in ("global", "global_lp"):
            return Val((n, c, 1, 1, 1)), r, {}
        k = [min(kk, size) for kk, size in zip(p["k"], spatial)]
        d = [1] * 3 if kind in ("avgpool", "lppool") else list(p["d"])
        pads = [min(v, k[i % 3] // 2) for i, v in enumerate(p["pad"])]
        if p["sym"]:
            pads[3:] = pads[:3]
        r.update(k=k, d=d, pads=pads)
        if kind == "conv_transpose":
            g = 2 if p["groups"] and c % 2 == 0 else 1
            o = max(1, p["o"] // g) * g
            pads = [min(v, (d[i % 3] * (k[i % 3] - 1)) // 2) for i, v in enumerate(pads)]
            op = [min(v, s - 1) for v, s in zip(p["op"], p["s"])]  # ONNX Runtime: output_padding < stride
            out = [(i - 1) * s - pads[j] - pads[j + 3] + dd * (kk - 1) + 1 + opad
                   for j, (i, s, dd, kk, opad) in enumerate(zip(spatial, p["s"], d, k, op))]
            if min(out) < 1:
                raise Invalid("pads leave no output")
            r.update(g=g, o=o, pads=pads, op=op)
            fan_in = c * int(np.prod(k)) / g / max(1, int(np.prod(p["s"])))
            w = {"f": normal(p, (c, o // g) + tuple(k), 1 / math.sqrt(fan_in))}
            if p["bias"]:
                w["b"] = normal(p, (o,), 0.1, salt=1)
            return Val(check_size((n, o) + tuple(out))), r, w
        ceil = p["ceil"] if kind in ("maxpool", "avgpool") else 0  # LpPool has ceil_mode from opset 18
        auto = p.get("auto", "NOTSET") if kind == "conv" else "NOTSET"
        if auto.startswith("SAME"):  # ONNX Runtime: no dilation with SAME padding
            d = [1] * 3
            r["d"] = d
            pads = []
            for size, kk, s in zip(spatial, k, p["s"]):
                total = max(0, (-(-size // s) - 1) * s + kk - size)
                small, big = total // 2, total - total // 2
                pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
            pads = [b for b, _ in pads] + [e for _, e in pads]
        elif auto == "VALID":
            pads = [0] * 6
        r.update(auto=auto, pads=pads)
        out = [_spatial_out(size, kk, s, pads[j], pads[j + 3], dd, ceil)
               for j, (size, kk, s, dd) in enumerate(zip(spatial, k, p["s"], d))]
        if kind == "conv":
            g = 2 if p["groups"] and c % 2 == 0 and p["o"] % 2 == 0 else 1
            r.update(g=g)
            w = {"f": normal(p, (p["o"], c // g) + tuple(k), 1 / math.sqrt(c // g * int(np.prod(k))))}
            if p["bias"]:
                w["b"] = normal(p, (p["o"],), 0.1, salt=1)
            return Val(check_size((n, p["o"]) + tuple(out))), r, w
        if any(_has_empty_window(size, kk, s, pads[j], dd, o)
               for j, (size, kk, s, dd, o) in enumerate(zip(spatial, k, p["s"], d, out))):
            raise Invalid("a window entirely in the padding")
        return Val(check_size((n, c) + tuple(out))), r, {}

    def torch(self, r, w, x):
        _, tf = _t()
        kind = r["kind"]
        if kind == "batchnorm":
            return tf.batch_norm(x, w["mean"], w["var"], w["scale"], w["bias"], False, 0.0, 1e-5)
        if kind == "instancenorm":
            return tf.instance_norm(x, weight=w["scale"], bias=w["bias"], eps=1e-5)
        if kind == "global":
            return (tf.adaptive_max_pool3d if r["gkind"] == "max" else tf.adaptive_avg_pool3d)(x, 1)
        pad = tuple(r["pads"][:3])
        if kind == "conv":
            return tf.conv3d(x, w["f"], w.get("b"), r["s"], pad, r["d"], r["g"])
        if kind == "conv_transpose":
            return tf.conv_transpose3d(x, w["f"], w.get("b"), r["s"], pad, r["op"], r["g"], r["d"])
        if kind == "maxpool":
            return tf.max_pool3d(x, r["k"], r["s"], pad, r["d"], bool(r["ceil"]))
        return tf.avg_pool3d(x, r["k"], r["s"], pad, bool(r["ceil"]), bool(r["cip"]))

    def onnx(self, r, w, e, x):
        kind = r["kind"]
        if kind in ("batchnorm", "instancenorm"):
            names = ("scale", "bias", "mean", "var") if kind == "batchnorm" else ("scale", "bias")
            op = "BatchNormalization" if kind == "batchnorm" else "InstanceNormalization"
            return e.node(op, [x] + [e.init(w[k]) for k in names], epsilon=1e-5)
        if kind == "global":
            return e.node("GlobalMaxPool" if r["gkind"] == "max" else "GlobalAveragePool", [x])
        if kind == "global_lp":
            return e.node("GlobalLpPool", [x], p=r["p"])
        if kind == "lppool":
            return e.node("LpPool", [x], kernel_shape=r["k"], strides=r["s"], pads=r["pads"], p=r["p"])
        attrs = {"strides": r["s"], "pads": r["pads"]}
        if r.get("auto", "NOTSET") != "NOTSET":
            attrs = {"strides": r["s"], "auto_pad": r["auto"]}
        if kind in ("conv", "conv_transpose"):
            ins = [x, e.init(w["f"])] + ([e.init(w["b"])] if "b" in w else [])
            attrs.update(dilations=r["d"], group=r["g"])
            if kind == "conv_transpose":
                attrs["output_padding"] = r["op"]
            return e.node("Conv" if kind == "conv" else "ConvTranspose", ins, **attrs)
        attrs["kernel_shape"] = r["k"]
        if e.opset >= 10:
            attrs["ceil_mode"] = r["ceil"]
        if kind == "maxpool":
            if max(r["d"]) > 1:
                attrs["dilations"] = r["d"]
            return e.node("MaxPool", [x], **attrs)
        return e.node("AveragePool", [x], count_include_pad=r["cip"], **attrs)


class MaskedSoftmax(Op):
    """Softmax over the last axis behind an additive causal mask (-inf above the diagonal, as
    attention's), which int8 quantization turns into QuantizedSoftmax with a mask."""
    name = "masked_softmax"
    ranks = range(2, 7)

    def draw(self, g, a):
        return [], {"shift": int(g.rng.integers(0, 3))}

    def infer(self, p, ins):
        s = ins[0].shape
        rows, cols = s[-2], s[-1]
        mask = np.where(np.arange(cols)[None, :] > np.arange(rows)[:, None] + p["shift"], -np.inf, 0.0)
        return Val(s), dict(p), {"mask": mask.astype(np.float32)}

    def torch(self, r, w, x):
        _, tf = _t()
        return tf.softmax(x + w["mask"], -1)

    def onnx(self, r, w, e, x):
        return e.node("Softmax", [e.node("Add", [x, e.init(w["mask"])])], axis=-1)


class ResidualConv(Op):
    """x + Conv(x) (same padding, stride 1, as many channels out as in), maybe then Relu: ResNet's
    identity block, which int8 quantization turns into QuantizedConv + QuantizedAdd (the npu's
    v3 configs run the add in the conv's epilogue, docs/npu/compiler.md)."""
    name = "residual_conv"
    ranks = (4,)

    def draw(self, g, a):
        return [], {"seed": g.seed(), "k": int(g.rng.choice([1, 3])), "conv_first": int(g.rng.random() < 0.5),
                    "relu": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        c, k = ins[0].shape[1], p["k"]
        w = {"f": normal(p, (c, c, k, k), 1 / math.sqrt(c * k * k)), "b": normal(p, (c,), 0.1, salt=1)}
        return Val(ins[0].shape), dict(p), w

    def torch(self, r, w, x):
        torch, tf = _t()
        y = tf.conv2d(x, w["f"], w["b"], 1, r["k"] // 2)
        s = y + x if r["conv_first"] else x + y
        return torch.relu(s) if r["relu"] else s

    def onnx(self, r, w, e, x):
        conv = e.node("Conv", [x, e.init(w["f"]), e.init(w["b"])], pads=[r["k"] // 2] * 4, strides=[1, 1])
        s = e.node("Add", [conv, x] if r["conv_first"] else [x, conv])
        return e.node("Relu", [s]) if r["relu"] else s


class ConvBnRelu(Op):
    """Conv -> [BatchNormalization | Add(per-channel constant)] -> Relu, each value used once: the chain a
    backend's vendor op fuses (the toy example's toy.ConvBiasRelu, docs/backend-guide.md "Fused and vendor
    ops"); `difftest_runner --backend-path DIR --backend toy` runs it on the toy's fused kernel. Weight 0:
    drawn only with `generate.py --draw conv_bn_relu`, so the CI batch's seeds draw what they drew before."""
    name = "conv_bn_relu"
    ranks = (4,)
    weight = 0.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "k": int(g.rng.choice([1, 3])), "s": int(g.rng.choice([1, 2])),
                    "out": int(g.rng.integers(2, 9)), "mid": ["none", "batchnorm", "add"][int(g.rng.integers(0, 3))]}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        k, s, o = p["k"], p["s"], p["out"]
        w = {"f": normal(p, (o, c, k, k), 1 / math.sqrt(c * k * k)), "b": normal(p, (o,), 0.1, 1),
             "scale": uniform(p, (o,), 0.5, 1.5, 2), "shift": normal(p, (o,), 0.1, 3),
             "mean": normal(p, (o,), 0.1, 4), "var": uniform(p, (o,), 0.5, 1.5, 5)}
        return Val((n, o, (h + 2 * (k // 2) - k) // s + 1, (w_ + 2 * (k // 2) - k) // s + 1)), dict(p), w

    def torch(self, r, w, x):
        torch, tf = _t()
        y = tf.conv2d(x, w["f"], w["b"], r["s"], r["k"] // 2)
        if r["mid"] == "batchnorm":
            y = tf.batch_norm(y, w["mean"], w["var"], w["scale"], w["shift"], False, 0.0, 1e-5)
        elif r["mid"] == "add":
            y = y + w["shift"].reshape(1, -1, 1, 1)
        return torch.relu(y)

    def onnx(self, r, w, e, x):
        y = e.node("Conv", [x, e.init(w["f"]), e.init(w["b"])], pads=[r["k"] // 2] * 4, strides=[r["s"]] * 2)
        if r["mid"] == "batchnorm":
            y = e.node("BatchNormalization", [y] + [e.init(w[k]) for k in ("scale", "shift", "mean", "var")],
                       epsilon=1e-5)
        elif r["mid"] == "add":
            y = e.node("Add", [y, e.init(w["shift"].reshape(1, -1, 1, 1))])
        return e.node("Relu", [y])


class AttentionGelu(Op):
    """Multi-head self-attention over x [B, S, D] (projections, head split by Reshape/Transpose,
    Q.K^T, Softmax, scores.V, head merge) then an erf GELU: int8 quantization makes the two
    activation x activation QuantizedMatMuls, QuantizedGelu and the head split/merge that the npu
    runs (docs/npu/compiler.md, "Transformers")."""
    name = "attention_gelu"
    ranks = (3,)
    weight = 0.5

    def draw(self, g, a):
        return [], {"seed": g.seed(), "heads": int(g.rng.choice([1, 2, 4]))}

    def infer(self, p, ins):
        b, s, d = ins[0].shape
        if d % p["heads"]:
            raise Invalid("heads do not divide the width")
        w = {k: normal(p, (d, d), 1 / math.sqrt(d), salt=i) for i, k in enumerate(("q", "k", "v"))}
        return Val(check_size((b, s, d))), dict(p), w

    def torch(self, r, w, x):
        torch, tf = _t()
        b, s, d = x.shape
        h = r["heads"]
        split = lambda t: t.reshape(b, s, h, d // h).transpose(1, 2)  # noqa: E731
        q, k, v = split(x @ w["q"]), split(x @ w["k"]), split(x @ w["v"])
        a = tf.softmax((q @ k.transpose(2, 3)) * (1 / math.sqrt(d // h)), -1)
        o = (a @ v).transpose(1, 2).reshape(b, s, d)
        return o * 0.5 * (1 + torch.erf(o / math.sqrt(2)))

    def onnx(self, r, w, e, x):
        h = r["heads"]
        dh = w["q"].shape[0] // h
        heads = e.init(np.array([0, 0, h, dh], np.int64))
        merged = e.init(np.array([0, 0, h * dh], np.int64))

        def split(t, perm):
            return e.node("Transpose", [e.node("Reshape", [e.node("MatMul", [x, e.init(t)]), heads])], perm=perm)

        q, kt, v = split(w["q"], [0, 2, 1, 3]), split(w["k"], [0, 2, 3, 1]), split(w["v"], [0, 2, 1, 3])
        scores = e.node("Mul", [e.node("MatMul", [q, kt]), e.init(np.array(1 / math.sqrt(dh), np.float32))])
        o = e.node("MatMul", [e.node("Softmax", [scores], axis=-1), v])
        o = e.node("Reshape", [e.node("Transpose", [o], perm=[0, 2, 1, 3]), merged])
        erf = e.node("Erf", [e.node("Div", [o, e.init(np.array(math.sqrt(2), np.float32))])])
        one_plus = e.node("Add", [erf, e.init(np.array(1.0, np.float32))])
        return e.node("Mul", [e.node("Mul", [o, one_plus]), e.init(np.array(0.5, np.float32))])


class ConvPoolMatMul(Op):
    """Conv -> Relu -> MaxPool or AveragePool -> GlobalAveragePool -> MatMul by a constant: a CNN's
    head, which int8 quantization makes QuantizedConv, MaxPool on codes, QuantizedAvgPool and
    QuantizedMatMul, the cpu backend's int8 kernels (docs/backends/cpu.md, "int8"). Weight 0: drawn
    only with `generate.py --draw conv_pool_matmul` (tests/cpu's `cpu_int8_difftest`)."""
    name = "conv_pool_matmul"
    ranks = (4,)
    weight = 0.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "out": int(g.rng.integers(3, 20)), "units": int(g.rng.integers(1, 40)),
                    "pool": ["max", "avg", "avg_pad"][int(g.rng.integers(0, 3))]}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        if h < 3 or w_ < 3:
            raise Invalid("too small for the pool")
        o, m = p["out"], p["units"]
        w = {"f": normal(p, (o, c, 3, 3), 1 / math.sqrt(c * 9)), "b": normal(p, (o,), 0.1, salt=1),
             "m": normal(p, (o, m), 1 / math.sqrt(o), salt=2)}
        return Val(check_size((n, 1, 1, m))), dict(p), w

    def torch(self, r, w, x):
        torch, tf = _t()
        y = torch.relu(tf.conv2d(x, w["f"], w["b"], 1, 1))
        if r["pool"] == "max":
            y = tf.max_pool2d(y, 2, 2)
        else:
            y = tf.avg_pool2d(y, 3, 2, 1, count_include_pad=r["pool"] == "avg_pad")
        return y.mean((2, 3), keepdim=True).permute(0, 2, 3, 1) @ w["m"]

    def onnx(self, r, w, e, x):
        y = e.node("Relu", [e.node("Conv", [x, e.init(w["f"]), e.init(w["b"])], pads=[1] * 4, strides=[1, 1])])
        if r["pool"] == "max":
            y = e.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
        else:
            y = e.node("AveragePool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4,
                       count_include_pad=int(r["pool"] == "avg_pad"))
        y = e.node("Transpose", [e.node("GlobalAveragePool", [y])], perm=[0, 2, 3, 1])
        return e.node("MatMul", [y, e.init(w["m"])])


class StemConv(Op):
    """A stem-like conv: the first C <= 3 channels and an even-sized crop of x (Slice), then a
    stride-2 Conv with a 3x3, 5x5 or 7x7 kernel and same padding, maybe Relu: the npu's v3 configs
    run it as a stride-1 conv over 2x2 pixel blocks (compiler.dense_stem, docs/npu/compiler.md
    "The stem as 2x2 blocks"). Weight 0: drawn only with `generate.py --draw stem_conv` (the
    checked-in regressions int8-npu_stem_conv_*), so the CI batch's seeds draw what they drew before."""
    name = "stem_conv"
    ranks = (4,)
    weight = 0.0

    def draw(self, g, a):
        return [], {"seed": g.seed(), "k": int(g.rng.choice([3, 5, 7])), "c": int(g.rng.integers(1, 4)),
                    "out": int(g.rng.integers(2, 17)), "relu": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        c, h, w_ = min(c, p["c"]), h - h % 2, w_ - w_ % 2
        if h < 2 or w_ < 2:
            raise Invalid("too small for a stride-2 conv")
        k, o = p["k"], p["out"]
        w = {"f": normal(p, (o, c, k, k), 1 / math.sqrt(c * k * k)), "b": normal(p, (o,), 0.1, salt=1)}
        oh, ow = (h + 2 * (k // 2) - k) // 2 + 1, (w_ + 2 * (k // 2) - k) // 2 + 1
        return Val(check_size((n, o, oh, ow))), dict(p, c=c, h=h, w=w_), w

    def torch(self, r, w, x):
        torch, tf = _t()
        y = tf.conv2d(x[:, :r["c"], :r["h"], :r["w"]], w["f"], w["b"], 2, r["k"] // 2)
        return torch.relu(y) if r["relu"] else y

    def onnx(self, r, w, e, x):
        ends, axes = [r["c"], r["h"], r["w"]], [1, 2, 3]
        if e.opset >= 10:
            crop = e.node("Slice", [x, e.init(np.zeros(3, np.int64)), e.init(np.array(ends, np.int64)),
                                    e.init(np.array(axes, np.int64))])
        else:
            crop = e.node("Slice", [x], starts=[0, 0, 0], ends=ends, axes=axes)
        y = e.node("Conv", [crop, e.init(w["f"]), e.init(w["b"])], pads=[r["k"] // 2] * 4, strides=[2, 2])
        return e.node("Relu", [y]) if r["relu"] else y


class StemConvPool(StemConv):
    """stem_conv, then a MaxPool of the conv's result (ResNet's 3x3 stride 2 pad 1, or 2x2 stride 2): the
    npu's v3 configs pool each band in the conv's epilogue (compiler.fuse_max_pool, docs/npu/compiler.md
    "Max pooling in the conv epilogue"). Weight 0, like stem_conv: its cases are in
    regressions/int8-npu_stem_conv_pool_*."""
    name = "stem_conv_pool"

    def draw(self, g, a):
        ops, p = super().draw(g, a)
        return ops, dict(p, pool=int(g.rng.choice([2, 3])))

    def infer(self, p, ins):
        out, r, w = super().infer(p, ins)
        n, o, oh, ow = out.shape
        k = r["pool"]
        pad = 1 if k == 3 else 0
        ph, pw = (oh + 2 * pad - k) // 2 + 1, (ow + 2 * pad - k) // 2 + 1
        if ph < 1 or pw < 1:
            raise Invalid("too small for the pooling")
        return Val(check_size((n, o, ph, pw))), r, w

    def torch(self, r, w, x):
        _, tf = _t()
        k = r["pool"]
        return tf.max_pool2d(super().torch(r, w, x), k, 2, 1 if k == 3 else 0)

    def onnx(self, r, w, e, x):
        k = r["pool"]
        pad = 1 if k == 3 else 0
        return e.node("MaxPool", [super().onnx(r, w, e, x)], kernel_shape=[k, k], strides=[2, 2], pads=[pad] * 4)


def late_ops():
    return [GridSample(), ResizeCubic(), BatchNormTraining(), LayerNormStats(), Mvn(), Det(), Loss(), RnnOnnx(),
            Spatial3d(), MaskedSoftmax(), ResidualConv(), ConvBnRelu(), AttentionGelu(), ConvPoolMatMul(),
            StemConv(), StemConvPool()]
