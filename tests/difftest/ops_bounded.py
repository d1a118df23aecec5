"""Difftest ops for issue 16's operator gaps, ONNX builder only: value-dependent
output shapes on constant operands (exact shapes by import-time folding),
ONNX's quantization operators in float round trips, and Resize downsampling in
every coordinate mode (tf_crop_and_resize included)."""

import math

import numpy as np

from ops import F, Invalid, Op, Val, check_size, normal, uniform, wrng


class ValueDependentConst(Op):
    """NonZero, Unique or NonMaxSuppression of a constant (folded at import
    time to its exact shape); the result, cast to float and weighted
    element by element, is summed and added to x."""
    name = "value_dependent_const"
    builders = ("onnx",)
    ranks = range(1, 5)
    min_opset = 11

    def draw(self, g, a):
        return [], {"seed": g.seed(), "op": str(g.rng.choice(["nonzero", "unique", "unique_axis", "nms"])),
                    "sorted": int(g.rng.random() < 0.7)}

    def infer(self, p, ins):
        rng = wrng(p, 1)
        w = {}
        if p["op"] == "nonzero":
            data = rng.integers(-2, 3, size=(3, 4)).astype(np.float32)
            w["data"] = data
            rows = np.array(np.nonzero(data))
            w["weights"] = normal(p, rows.shape, 0.1, salt=2)
        elif p["op"] in ("unique", "unique_axis"):
            data = rng.integers(0, 4, size=(5, 3)).astype(np.float32)
            if p["op"] == "unique_axis":
                data[3] = data[1]  # a repeated row
                values = np.unique(data, axis=0)
            else:
                values = np.unique(data)
            w["data"] = data
            w["weights"] = normal(p, values.shape, 0.1, salt=2)
        else:
            centers = rng.uniform(0, 4, size=(1, 8, 2))
            sizes = rng.uniform(0.5, 2, size=(1, 8, 2))
            w["boxes"] = np.concatenate([centers - sizes / 2, centers + sizes / 2], axis=2).astype(np.float32)
            w["scores"] = rng.uniform(0, 1, size=(1, 2, 8)).astype(np.float32)
        return Val(ins[0].shape), dict(p), w

    def onnx(self, r, w, e, x):
        if r["op"] == "nms":
            # Its output length depends on the boxes: sum the row indices.
            selected = e.node("NonMaxSuppression", [e.init(w["boxes"]), e.init(w["scores"]),
                                                    e.init(np.array([3], np.int64)),
                                                    e.init(np.array([0.3], np.float32)),
                                                    e.init(np.array([0.2], np.float32))])
            total = e.node("ReduceSum", [e.node("Cast", [selected], to=1)], keepdims=0)
            return e.node("Add", [x, total])
        if r["op"] == "nonzero":
            result = e.node("NonZero", [e.init(w["data"])])
        else:
            attrs = {"sorted": r["sorted"]} if r["op"] == "unique" else {"sorted": 1, "axis": 0}
            result = e.node("Unique", [e.init(w["data"])], **attrs)
        weighted = e.node("Mul", [e.node("Cast", [result], to=1), e.init(w["weights"])] if r["op"] == "nonzero"
                          else [result, e.init(w["weights"])])
        if r["op"] == "unique" and not r["sorted"]:
            weighted = result  # first-seen order: the weights' order would differ; sum the values
        return e.node("Add", [x, e.node("ReduceSum", [weighted], keepdims=0)])


class QuantRoundTrip(Op):
    """DequantizeLinear(QuantizeLinear(x)): uint8 or int8, per tensor or per
    axis (opset 13), a scale that maps x's range onto about 200 steps."""
    name = "quant_round_trip"
    builders = ("onnx",)
    ranks = range(1, 5)
    min_opset = 10

    def draw(self, g, a):
        return [], {"seed": g.seed(), "signed": int(g.rng.random() < 0.5), "per_axis": int(g.rng.random() < 0.5),
                    "axis": int(g.rng.integers(0, max(a.rank, 1)))}

    def infer(self, p, ins):
        r = dict(p)
        channels = ins[0].shape[p["axis"] % ins[0].rank]
        count = channels if p["per_axis"] else 1
        scale = uniform(p, (count,), 0.01, 0.04, salt=1)
        dtype = np.int8 if p["signed"] else np.uint8
        lo, hi = (-20, 20) if p["signed"] else (100, 150)
        zero = wrng(p, 2).integers(lo, hi, size=(count,)).astype(dtype)
        if not p["per_axis"]:
            scale, zero = scale.reshape(()), zero.reshape(())
        return Val(ins[0].shape), r, {"scale": scale, "zero": zero}

    def onnx(self, r, w, e, x):
        per_axis = r["per_axis"] and e.opset >= 13  # per-axis parameters arrived in opset 13
        attrs = {"axis": r["axis"]} if per_axis else {}
        if per_axis:
            scale, zero = e.init(w["scale"]), e.init(w["zero"])
        else:
            scale, zero = e.init(w["scale"].reshape(-1)[0]), e.init(w["zero"].reshape(-1)[0])
        q = e.node("QuantizeLinear", [x, scale, zero], **attrs)
        return e.node("DequantizeLinear", [q, scale, zero], **attrs)


class QLinearOps(Op):
    """Quantized x through QLinearMatMul (x [..., K] by a constant [K, N]),
    QLinearConv (x [N, C, H, W], 3x3 or 1x1, per-channel weight scales),
    MatMulInteger of DynamicQuantizeLinear's output, or ConvInteger;
    dequantized or cast back to float."""
    name = "qlinear_ops"
    builders = ("onnx",)
    ranks = range(2, 5)
    min_opset = 11

    def draw(self, g, a):
        return [], {"seed": g.seed(), "op": str(g.rng.choice(["qmatmul", "qconv", "dynamic_matmul", "convinteger"])),
                    "n": int(g.rng.integers(1, 6)), "k3": int(g.rng.random() < 0.6)}

    def infer(self, p, ins):
        s = ins[0].shape
        w = {}
        if p["op"] in ("qconv", "convinteger"):
            if len(s) != 4:
                raise Invalid("conv needs rank 4")
            k = 3 if p["k3"] else 1
            if s[2] < k or s[3] < k or s[1] * k * k > 258:
                raise Invalid("conv does not fit")
            out = (s[0], p["n"], s[2] - k + 1, s[3] - k + 1)
            w["w"] = wrng(p, 1).integers(0, 256, size=(p["n"], s[1], k, k)).astype(np.uint8)
            w["w_scale"] = uniform(p, (p["n"],), 0.002, 0.01, salt=2)
        else:
            kdim = s[-1]
            if p["op"] == "dynamic_matmul" and len(s) > 2:
                raise Invalid("MatMulInteger of a 2-D input only")
            out = s[:-1] + (p["n"],)
            w["w"] = wrng(p, 1).integers(0, 256, size=(kdim, p["n"])).astype(np.uint8)
            w["w_scale"] = np.array(uniform(p, (1,), 0.002, 0.01, salt=2)[0], np.float32)
        w["w_zero"] = np.array(128, np.uint8)
        return Val(check_size(out)), dict(p), w

    def onnx(self, r, w, e, x):
        x_scale, x_zero = e.init(np.array(0.02, np.float32)), e.init(np.array(128, np.uint8))
        y_scale, y_zero = e.init(np.array(0.05, np.float32)), e.init(np.array(120, np.uint8))
        weights, w_zero = e.init(w["w"]), e.init(w["w_zero"])
        if r["op"] == "dynamic_matmul":
            q, scale, zero = e.node("DynamicQuantizeLinear", [x], n_out=3)
            acc = e.node("MatMulInteger", [q, weights, zero, w_zero])
            return e.node("Mul", [e.node("Cast", [acc], to=1), e.node("Mul", [scale, e.init(w["w_scale"])])])
        q = e.node("QuantizeLinear", [x, x_scale, x_zero])
        if r["op"] == "convinteger":
            acc = e.node("ConvInteger", [q, weights, x_zero, w_zero])
            return e.node("Mul", [e.node("Cast", [acc], to=1), e.init(np.array(1e-4, np.float32))])
        if r["op"] == "qmatmul":
            y = e.node("QLinearMatMul", [q, x_scale, x_zero, weights, e.init(w["w_scale"]), w_zero, y_scale, y_zero])
        else:
            y = e.node("QLinearConv", [q, x_scale, x_zero, weights, e.init(w["w_scale"]), w_zero, y_scale, y_zero])
        return e.node("DequantizeLinear", [y, y_scale, y_zero])


class ResizeDown(Op):
    """Resize downsampling by scales (0.4-0.8, not only 1/integer) or sizes in
    every coordinate mode and mode nearest/linear/cubic; tf_crop_and_resize
    with a random box and extrapolation_value."""
    name = "resize_down"
    builders = ("onnx",)
    ranks = (4,)
    min_opset = 11

    def draw(self, g, a):
        return [], {"seed": g.seed(), "sh": float(g.rng.choice([0.4, 0.5, 0.6, 0.75, 0.8, 1.0])),
                    "sw": float(g.rng.choice([0.4, 0.5, 0.6, 0.75, 0.8])), "by_size": int(g.rng.random() < 0.3),
                    "mode": str(g.rng.choice(["nearest", "linear", "cubic"])),
                    "ctm": str(g.rng.choice(["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                             "tf_half_pixel_for_nn", "tf_crop_and_resize"])),
                    "nm": str(g.rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        r = dict(p)
        if p["mode"] != "nearest" and p["ctm"] == "tf_half_pixel_for_nn":
            r["ctm"] = "half_pixel"
        oh, ow = int(math.floor(h * np.float32(p["sh"]))), int(math.floor(w_ * np.float32(p["sw"])))
        if oh < 1 or ow < 1:
            raise Invalid("resize to nothing")
        r["sizes"] = [n, c, oh, ow]
        weights = {}
        if r["ctm"] == "tf_crop_and_resize":
            rng = wrng(p, 1)
            start = rng.uniform(-0.2, 0.5, size=2)
            end = start + rng.uniform(0.3, 0.9, size=2)
            # ONNX Runtime maps an axis whose scale is 1 to itself and ignores
            # its box (the spec crops it); keep the box whole there, where
            # both agree (docs/testing.md, "Oracle disagreements").
            for axis, (before, after) in enumerate(((h, oh), (w_, ow))):
                if before == after:
                    start[axis], end[axis] = 0.0, 1.0
            weights["roi"] = np.array([0, 0, start[0], start[1], 1, 1, end[0], end[1]], np.float32)
            r["by_size"] = 1  # ONNX Runtime sizes the crop from sizes only
        return Val(check_size((n, c, oh, ow))), r, weights

    def onnx(self, r, w, e, x):
        roi = e.init(w["roi"]) if "roi" in w else e.init(np.zeros((0,), np.float32))
        if r["by_size"]:
            ins = [x, roi, e.init(np.zeros((0,), np.float32)), e.init(np.array(r["sizes"], np.int64))]
        else:
            ins = [x, roi, e.init(np.array([1, 1, r["sh"], r["sw"]], np.float32))]
        attrs = {"mode": r["mode"], "coordinate_transformation_mode": r["ctm"], "nearest_mode": r["nm"]}
        if r["ctm"] == "tf_crop_and_resize":
            attrs["extrapolation_value"] = 0.5
        return e.node("Resize", ins, **attrs)


class MaxPoolIndices(Op):
    """MaxPool's Indices output (2-D; pads, strides, dilations, ceil_mode,
    storage_order), cast to float and added to the pooled values."""
    name = "maxpool_indices"
    builders = ("onnx",)
    ranks = (4,)
    min_opset = 12
    separated_only = True  # ties between window elements would make the index ambiguous

    def draw(self, g, a):
        return [], {"k": int(g.rng.integers(2, 4)), "s": int(g.rng.integers(1, 3)), "d": int(g.rng.integers(1, 3)),
                    "pad": int(g.rng.integers(0, 2)), "ceil": int(g.rng.random() < 0.3),
                    "order": int(g.rng.random() < 0.3)}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        r = dict(p)
        r["pad"] = min(p["pad"], p["k"] // 2)
        span = (p["k"] - 1) * p["d"] + 1
        if h + 2 * r["pad"] < span or w_ + 2 * r["pad"] < span:
            raise Invalid("window larger than the input")
        size = lambda v: (math.ceil if p["ceil"] else math.floor)((v + 2 * r["pad"] - span) / p["s"]) + 1
        oh, ow = size(h), size(w_)
        # ceil_mode: a window that starts in the bottom/right padding is dropped
        if p["ceil"]:
            oh -= int((oh - 1) * p["s"] >= h + r["pad"])
            ow -= int((ow - 1) * p["s"] >= w_ + r["pad"])
        return Val(check_size((n, c, oh, ow))), r, {}

    def onnx(self, r, w, e, x):
        values, indices = e.node("MaxPool", [x], n_out=2, kernel_shape=[r["k"], r["k"]], strides=[r["s"], r["s"]],
                                 dilations=[r["d"], r["d"]], pads=[r["pad"]] * 4, ceil_mode=r["ceil"],
                                 storage_order=r["order"])
        return e.node("Add", [values, e.node("Cast", [indices], to=1)])


class RoiAlign(Op):
    """RoiAlign of x [N, C, H, W] over constant boxes (some past the edges):
    avg or max, half_pixel or output_half_pixel (opset 16), sampling_ratio 0
    (adaptive) or 1-3, a spatial_scale."""
    name = "roi_align"
    builders = ("onnx",)
    ranks = (4,)
    min_opset = 16

    def draw(self, g, a):
        return [], {"seed": g.seed(), "mode": str(g.rng.choice(["avg", "max"])),
                    "ctm": str(g.rng.choice(["half_pixel", "output_half_pixel"])),
                    "ratio": int(g.rng.integers(0, 4)), "scale": float(g.rng.choice([1.0, 0.5, 0.25])),
                    "oh": int(g.rng.integers(1, 5)), "ow": int(g.rng.integers(1, 5)), "rois": int(g.rng.integers(1, 5))}

    def infer(self, p, ins):
        n, c, h, w_ = ins[0].shape
        rng = wrng(p, 1)
        lo = rng.uniform(-2, 1, size=(p["rois"], 2)) / p["scale"]
        size = rng.uniform(0.5, 1.2, size=(p["rois"], 2)) * np.array([w_, h]) / p["scale"]
        boxes = np.concatenate([lo, lo + size], axis=1).astype(np.float32)  # x1, y1, x2, y2
        batch = rng.integers(0, n, size=p["rois"]).astype(np.int64)
        return Val(check_size((p["rois"], c, p["oh"], p["ow"]))), dict(p), {"boxes": boxes, "batch": batch}

    def onnx(self, r, w, e, x):
        return e.node("RoiAlign", [x, e.init(w["boxes"]), e.init(w["batch"])], mode=r["mode"],
                      coordinate_transformation_mode=r["ctm"], sampling_ratio=r["ratio"], spatial_scale=r["scale"],
                      output_height=r["oh"], output_width=r["ow"])


def late_ops():
    return [ValueDependentConst(), QuantRoundTrip(), QLinearOps(), ResizeDown(), MaxPoolIndices(), RoiAlign()]
