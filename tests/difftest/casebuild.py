"""Builds a spec into a test case directory and computes the oracle.

    CASE/spec.json            the spec
    CASE/model.onnx           torch.onnx.export of the torch module, or the onnx.helper graph
    CASE/inputs/<name>.npy    float32 inputs
    CASE/expected/<out>.npy   the oracle's outputs (float32 / int64)
    CASE/meta.json            oracle, skip flag and reason, conditioning figures

Oracles: torch specs run the module in eval mode (f32); onnx specs run in
ONNX Runtime (ort_run.js). Conditioning: the same computation in float64
(torch: module.double(); ORT: the model with every float tensor made
DOUBLE, ops without a double kernel rewritten as double primitives or kept
f32 between Casts: to_double). When the f64 model still does not run, the
case falls back to a perturbation estimate: the f32 model on inputs
perturbed by one f32 ulp.
Torch cases are also run through ORT from the exported file, so an
exporter bug shows up as an oracle disagreement (skipped and counted), not as
an Ember mismatch.
"""

import copy
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ops import F, I64, Invalid, Val
from specgen import OPS

HERE = os.path.dirname(os.path.abspath(__file__))

# Skip rule (docs/testing.md): the comparison tolerance is 1e-4 of the
# output's max magnitude; a case whose oracle moves by more than a tenth of
# that between f32 and f64, or whose outputs are all tiny, says nothing.
TINY = 1e-12
COND_LIMIT = 1e-5


class Resolved:
    def __init__(self, spec):
        self.spec = spec
        self.vals = {}
        self.steps = []  # (op spec, op, in refs, out Val, resolved params, weights)
        for i in spec["inputs"]:
            self.vals[i["name"]] = Val(i["shape"], F, separated=i["data"] == "separated")
        for o in spec["ops"]:
            op = OPS[o["op"]]
            try:
                ins = [self.vals[r] for r in o["in"]]
            except KeyError as e:
                raise Invalid(f"unknown operand {e}")
            if ins[0].dtype not in op.dtypes or ins[0].rank not in op.ranks or (
                    op.separated_only and not ins[0].separated):
                raise Invalid("operand kind or rank")
            try:
                out, r, w = op.infer(o["p"], ins)
            except (IndexError, ZeroDivisionError, KeyError, ValueError, TypeError) as e:
                raise Invalid(f"{o['id']}: {e!r}")
            self.vals[o["id"]] = out
            self.steps.append((o, op, o["in"], out, r, w))
        for out in spec["outputs"]:
            if out not in self.vals or out in {i["name"] for i in spec["inputs"]}:
                raise Invalid("bad output")


def prune(spec):
    """The spec without ops and inputs that no output depends on."""
    spec = copy.deepcopy(spec)
    live = set(spec["outputs"])
    for o in reversed(spec["ops"]):
        if o["id"] in live:
            live.update(o["in"])
    spec["ops"] = [o for o in spec["ops"] if o["id"] in live]
    spec["inputs"] = [i for i in spec["inputs"] if i["name"] in live]
    return spec


def make_inputs(spec):
    out = {}
    for k, i in enumerate(spec["inputs"]):
        rng = np.random.default_rng(spec["data_seed"] * 101 + k)
        shape = tuple(i["shape"])
        n = int(np.prod(shape)) if shape else 1
        if i["data"] == "separated":
            # integer part in [-3, 3], fraction in [0.25, 0.75), all values distinct
            frac = 0.25 + 0.5 * (rng.permutation(n) + 0.5) / n
            x = rng.integers(-3, 4, n) + frac
        else:
            x = rng.standard_normal(n) * i["scale"]
        out[i["name"]] = x.reshape(shape).astype(np.float32)
    return out


# ---------------------------------------------------------------------------
# PyTorch


def build_torch(res):
    import torch

    class SpecModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.keys = {}
            for o, op, _, _, r, w in res.steps:
                for k, v in w.items():
                    name = f"{o['id']}_{k}"
                    self.register_buffer(name, torch.from_numpy(np.array(v, copy=True)))
                    self.keys.setdefault(o["id"], []).append((k, name))

        def forward(self, *xs):
            env = dict(zip([i["name"] for i in res.spec["inputs"]], xs))
            for o, op, refs, _, r, _ in res.steps:
                w = {k: getattr(self, name) for k, name in self.keys.get(o["id"], [])}
                env[o["id"]] = op.torch(r, w, *[env[x] for x in refs])
            return tuple(env[x] for x in res.spec["outputs"])

    return SpecModule().eval()


def uses_double(model_path):
    import onnx
    from onnx import TensorProto
    m = onnx.load(model_path)
    return any(a.t.data_type == TensorProto.DOUBLE for n in m.graph.node for a in n.attribute) or any(
        t.data_type == TensorProto.DOUBLE for t in m.graph.initializer)


def control_flow_ops(model_path):
    import onnx
    return {n.op_type for n in onnx.load(model_path).graph.node} & {"If", "Loop", "Scan"}


def torch_case(res, inputs, model_path):
    import torch
    torch.set_num_threads(1)
    module = build_torch(res)
    names = [i["name"] for i in res.spec["inputs"]]
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    with torch.no_grad():
        y32 = [t.numpy().copy() for t in module(*args)]
        fold = res.spec["seed"] % 3 != 0
        for fold in ([fold, True] if not fold else [True]):
            torch.onnx.export(module, args, model_path, opset_version=res.spec["opset"], input_names=names,
                              output_names=list(res.spec["outputs"]), do_constant_folding=fold)
            # Without folding, torch.clamp exports Constant(DOUBLE) -> Cast; Ember
            # imports no DOUBLE tensor (docs/importer.md), so fold those away.
            if not uses_double(model_path):
                break
        control = control_flow_ops(model_path)
        if control:  # e.g. a squeeze the tracer could not prove: outside Ember's op set
            raise ValueError(f"the exporter wrote {', '.join(sorted(control))}")
        m64 = module.double()
        y64 = [t.numpy().copy() for t in m64(*(a.double() for a in args))]
    return y32, y64


# ---------------------------------------------------------------------------
# ONNX


class Emitter:
    def __init__(self, opset):
        self.opset = opset
        self.nodes, self.inits, self.shapes = [], [], {}
        self.count = 0

    def fresh(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def node(self, op_type, inputs, n_out=1, out=None, **attrs):
        from onnx import helper, numpy_helper
        outs = [out] if out and n_out == 1 else [self.fresh(op_type.lower()) for _ in range(n_out)]
        clean = {}
        for k, v in attrs.items():
            if isinstance(v, tuple) and v[0] == "tensor":
                v = numpy_helper.from_array(v[1])
            clean[k] = v
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh("n"), **clean))
        return outs[0] if n_out == 1 else outs

    def init(self, array):
        from onnx import numpy_helper
        name = self.fresh("w")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def scalar(self, v):
        # Every other scalar is a Constant node rather than an initializer.
        self.count += 1
        if self.count % 2:
            return self.node("Constant", [], value=("tensor", np.array(v, np.float32)))
        return self.init(np.array(v, np.float32))

    def shape_of(self, name):
        return self.shapes[name]


def build_onnx(res):
    from onnx import TensorProto, helper
    spec = res.spec
    e = Emitter(spec["opset"])
    for i in spec["inputs"]:
        e.shapes[i["name"]] = tuple(i["shape"])
    for o, op, refs, out, r, w in res.steps:
        name = op.onnx(r, w, e, *refs)
        # Rename the op's result to its id (its producing node's output).
        for node in e.nodes:
            for k, v in enumerate(node.output):
                if v == name:
                    node.output[k] = o["id"]
            for k, v in enumerate(node.input):
                if v == name:
                    node.input[k] = o["id"]
        if name in [i["name"] for i in spec["inputs"]] or not any(o["id"] in n.output for n in e.nodes):
            e.node("Identity", [name], out=o["id"])
        e.shapes[o["id"]] = out.shape
    elem = {F: TensorProto.FLOAT, I64: TensorProto.INT64}
    graph = helper.make_graph(
        e.nodes, spec["name"],
        [helper.make_tensor_value_info(i["name"], TensorProto.FLOAT, i["shape"]) for i in spec["inputs"]],
        [helper.make_tensor_value_info(x, elem[res.vals[x].dtype], res.vals[x].shape) for x in spec["outputs"]],
        e.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", spec["opset"])],
                              producer_name="ember-difftest")
    model.ir_version = 7
    return model


# Ops ONNX Runtime's CPU provider has no double kernel for. In the f64 model
# the elementwise ones and InstanceNormalization are rewritten as double
# primitives (_DoubleExpander); the rest (Conv, pools, Resize, Erf, Asin,
# ...) stay f32 between Casts: one f32 rounding of that op's own result, whose
# amplification downstream is still measured in f64.
NO_DOUBLE = {"Conv", "ConvTranspose", "AveragePool", "Clip", "HardSigmoid", "ThresholdedRelu", "LeakyRelu", "PRelu",
             "Mean", "Softsign", "Softplus", "InstanceNormalization", "Elu", "Sinh", "Cosh", "Erf", "Selu", "Tan",
             "GlobalMaxPool", "GlobalAveragePool", "Celu", "Resize", "Shrink", "HardSwish", "OneHot", "Asin", "Acos",
             "Atan", "Asinh", "Acosh", "Atanh", "Hardmax", "LRN", "GridSample", "MaxUnpool",
             "MeanVarianceNormalization", "Det", "LSTM", "GRU", "RNN"}
# Inputs from this index on are not cast (Resize: roi, scales stay f32
# initializers, sizes is int64; OneHot: indices and depth are integers;
# MaxUnpool: indices and output_shape).
FLOAT_INPUTS = {"Resize": 1, "OneHot": 0, "MaxUnpool": 1}
# Integer inputs among the float ones (sequence_lens), never cast.
INT_INPUTS = {"LSTM": {4}, "GRU": {4}, "RNN": {4}}
WINDOWS = {"HannWindow", "HammingWindow", "BlackmanWindow"}


def _stays_f32(n):
    # LayerNormalization's Mean and InvStdDev are float (stash_type) even for
    # a double input, so with those outputs the op stays f32 between Casts.
    return n.op_type in NO_DOUBLE or (n.op_type == "LayerNormalization" and len(n.output) > 1)


class _DoubleExpander:
    """Rewrites an op that ONNX Runtime runs only in f32 as double-capable
    primitives, so the f64 model computes it in f64 too."""

    def __init__(self, graph, ranks):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.graph, self.ranks, self.count, self.nodes = graph, ranks, 0, []

    def name(self):
        self.count += 1
        return f"__f64_{self.count}"

    def op(self, op_type, inputs, out=None, **attrs):
        out = out or self.name()
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def const(self, value, dtype=np.float64):
        name = self.name()
        self.graph.initializer.append(self.numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def expand(self, n):
        """The nodes computing n in double, or None."""
        from onnx import helper
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        x, y, t = (n.input[0] if n.input else ""), n.output[0], n.op_type
        op, k = self.op, self.const
        self.nodes = []
        if t in ("Cosh", "Sinh"):
            e, en = op("Exp", [x]), op("Exp", [op("Neg", [x])])
            op("Mul", [op("Add" if t == "Cosh" else "Sub", [e, en]), k(0.5)], y)
        elif t == "Tan":
            op("Div", [op("Sin", [x]), op("Cos", [x])], y)
        elif t == "Softplus":
            op("Log", [op("Add", [op("Exp", [x]), k(1.0)])], y)
        elif t == "Softsign":
            op("Div", [x, op("Add", [op("Abs", [x]), k(1.0)])], y)
        elif t in ("Elu", "Selu"):
            alpha = a.get("alpha", 1.0 if t == "Elu" else 1.67326319217681884765625)
            neg = op("Mul", [k(alpha), op("Sub", [op("Exp", [x]), k(1.0)])])
            if t == "Elu":
                op("Where", [op("Greater", [x, k(0.0)]), x, neg], y)
            else:
                gamma = a.get("gamma", 1.05070102214813232421875)
                op("Mul", [k(gamma), op("Where", [op("Greater", [x, k(0.0)]), x, neg])], y)
        elif t == "Celu":
            alpha = a.get("alpha", 1.0)
            neg = op("Mul", [k(alpha), op("Sub", [op("Exp", [op("Div", [x, k(alpha)])]), k(1.0)])])
            op("Add", [op("Max", [x, k(0.0)]), op("Min", [neg, k(0.0)])], y)
        elif t in ("HardSigmoid", "HardSwish"):
            alpha, beta = (a.get("alpha", 0.2), a.get("beta", 0.5)) if t == "HardSigmoid" else (1 / 6, 0.5)
            hs = op("Max", [op("Min", [op("Add", [op("Mul", [x, k(alpha)]), k(beta)]), k(1.0)]), k(0.0)])
            op("Mul", [x, hs], y) if t == "HardSwish" else op("Identity", [hs], y)
        elif t == "LeakyRelu":
            op("Where", [op("Less", [x, k(0.0)]), op("Mul", [x, k(a.get("alpha", 0.01))]), x], y)
        elif t == "PRelu":
            op("Where", [op("Less", [x, k(0.0)]), op("Mul", [x, n.input[1]]), x], y)
        elif t == "ThresholdedRelu":
            op("Where", [op("Greater", [x, k(a.get("alpha", 1.0))]), x, k(0.0)], y)
        elif t == "Shrink":
            lam, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
            inner = op("Where", [op("Greater", [x, k(lam)]), op("Sub", [x, k(bias)]), k(0.0)])
            op("Where", [op("Less", [x, k(-lam)]), op("Add", [x, k(bias)]), inner], y)
        elif t == "Clip":
            lo = (n.input[1] if len(n.input) > 1 and n.input[1] else None) if "min" not in a else k(a["min"])
            hi = (n.input[2] if len(n.input) > 2 and n.input[2] else None) if "max" not in a else k(a["max"])
            v = op("Max", [x, lo]) if lo else x
            v = op("Min", [v, hi]) if hi else v
            op("Identity", [v], y)
        elif t == "Mean":
            op("Div", [op("Sum", list(n.input)), k(float(len(n.input)))], y)
        elif t in ("Asinh", "Acosh"):
            r = op("Sqrt", [op("Add" if t == "Asinh" else "Sub", [op("Mul", [x, x]), k(1.0)])])
            op("Log", [op("Add", [x, r])], y)
        elif t == "Atanh":
            q = op("Div", [op("Add", [k(1.0), x]), op("Sub", [k(1.0), x])])
            op("Mul", [k(0.5), op("Log", [q])], y)
        elif t == "InstanceNormalization" and x in self.ranks:
            rank = self.ranks[x]
            axes = list(range(2, rank))
            mean = op("ReduceMean", [x], axes=axes, keepdims=1)
            d = op("Sub", [x, mean])
            var = op("ReduceMean", [op("Mul", [d, d])], axes=axes, keepdims=1)
            norm = op("Div", [d, op("Sqrt", [op("Add", [var, k(a.get("epsilon", 1e-5))])])])
            shape = k([-1] + [1] * (rank - 2), np.int64)
            scaled = op("Mul", [norm, op("Reshape", [n.input[1], shape])])
            op("Add", [scaled, op("Reshape", [n.input[2], shape])], y)
        else:
            return None
        return self.nodes


def to_double(model):
    """The model with every float tensor made double (for conditioning)."""
    from onnx import TensorProto, helper, numpy_helper
    m = copy.deepcopy(model)
    g = m.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    keep_f32 = {name for n in g.node if n.op_type in FLOAT_INPUTS for name in n.input[FLOAT_INPUTS[n.op_type]:]}
    for k, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT and t.name not in keep_f32:
            g.initializer[k].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float64)))
        if n.op_type in WINDOWS:
            kept = [a for a in n.attribute if a.name != "output_datatype"]
            del n.attribute[:]
            n.attribute.extend(kept + [helper.make_attribute("output_datatype", TensorProto.DOUBLE)])
    import onnx
    try:
        infos = list(onnx.shape_inference.infer_shapes(model).graph.value_info)
    except Exception:  # onnx 1.12 disagrees on a ceil_mode pool shape: no ranks, InstanceNorm stays f32
        infos = []
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in infos + list(model.graph.input)}
    expander = _DoubleExpander(g, ranks)
    nodes = []
    for n in g.node:
        if not _stays_f32(n):
            nodes.append(n)
            continue
        expanded = expander.expand(n)
        if expanded is not None:
            nodes.extend(expanded)
            continue
        for k, name in enumerate(n.input):
            if name and k < FLOAT_INPUTS.get(n.op_type, 99) and k not in INT_INPUTS.get(n.op_type, ()):
                nodes.append(helper.make_node("Cast", [name], [f"{name}_f32_{n.name}"], to=TensorProto.FLOAT))
                n.input[k] = f"{name}_f32_{n.name}"
        for k, name in enumerate(n.output):
            n.output[k] = f"{name}_f32"
            nodes.append(n) if k == 0 else None
            nodes.append(helper.make_node("Cast", [f"{name}_f32"], [name], to=TensorProto.DOUBLE))
    del g.node[:]
    g.node.extend(nodes)
    return m


# ---------------------------------------------------------------------------
# ONNX Runtime, one node process for a whole batch


def node_modules():
    return os.environ.get("EMBER_NODE_DIR", "/opt/ember/node") + "/node_modules"


class OrtBatch:
    """Collects ORT jobs and runs them all in one node process."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.jobs = []

    def add(self, model_path, inputs, dtype="float32"):
        jd = os.path.join(self.workdir, f"job{len(self.jobs)}")
        os.makedirs(jd, exist_ok=True)
        ins = []
        for name, x in inputs.items():
            f = os.path.join(jd, f"in_{len(ins)}.bin")
            x.astype(dtype).tofile(f)
            ins.append({"name": name, "file": f, "dims": list(x.shape), "type": dtype})
        self.jobs.append({"model": model_path, "inputs": ins, "out": jd})
        return len(self.jobs) - 1

    def run(self):
        if not self.jobs:
            return []
        jobfile = os.path.join(self.workdir, "jobs.json")
        with open(jobfile, "w") as f:
            json.dump(self.jobs, f)
        env = dict(os.environ, NODE_PATH=node_modules())
        proc = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), jobfile], env=env, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ort_run.js failed (is onnxruntime-node installed in {node_modules()}? "
                               f"scripts/install-deps.sh installs it): {proc.stderr.strip()[-2000:]}")
        results = []
        for job in self.jobs:
            with open(os.path.join(job["out"], "result.json")) as f:
                r = json.load(f)
            if "error" in r:
                results.append(r["error"])
                continue
            outs = {}
            for o in r["outputs"]:
                outs[o["name"]] = np.fromfile(o["file"], dtype=o["type"]).reshape(o["dims"])
            results.append(outs)
        return results


# ---------------------------------------------------------------------------
# Case directories


def rel_error(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = np.max(np.abs(b)) if b.size else 0.0
    if a.shape != b.shape:
        return float("inf"), scale
    err = np.max(np.abs(a - b)) if a.size else 0.0
    return (float(err / scale) if scale > 0 else (0.0 if err == 0 else float("inf"))), float(scale)


def judge(expected, reference64, out_dtypes):
    """(skip, reason, worst conditioning error) of oracle outputs."""
    worst = 0.0
    for name, y in expected.items():
        if not np.all(np.isfinite(y)):
            return True, f"output '{name}' is not finite", worst
        if out_dtypes[name] != F:
            continue
        if y.size and np.max(np.abs(y)) < TINY:
            return True, f"output '{name}' is tiny (max |y| < {TINY})", worst
        if reference64 is None:
            continue
        err, _ = rel_error(y, reference64[name])
        worst = max(worst, err)
        if not err <= COND_LIMIT:
            return True, f"output '{name}' is ill-conditioned: f32 vs f64 differ by {err:.2e} of max |y|", worst
    return False, "", worst


class CaseWriter:
    """Writes case directories; ORT work is queued and finished in finish()."""

    def __init__(self, workdir):
        self.ort = OrtBatch(workdir)
        self.pending = []

    def write(self, spec, case_dir):
        """Builds `spec` into `case_dir`; returns False if the spec is invalid."""
        spec = prune(spec)
        try:
            res = Resolved(spec)
        except Invalid:
            return False
        if not spec["inputs"]:
            return False
        if os.path.exists(case_dir):
            shutil.rmtree(case_dir)
        os.makedirs(os.path.join(case_dir, "inputs"))
        os.makedirs(os.path.join(case_dir, "expected"))
        inputs = make_inputs(spec)
        model_path = os.path.join(case_dir, "model.onnx")
        out_dtypes = {x: res.vals[x].dtype for x in spec["outputs"]}
        meta = {"name": spec["name"], "builder": spec["builder"], "opset": spec["opset"],
                "outputs": spec["outputs"], "ops": [o["op"] for o in spec["ops"]]}
        job = {"dir": case_dir, "spec": spec, "meta": meta, "out_dtypes": out_dtypes, "inputs": inputs}
        if spec["builder"] == "torch":
            try:
                y32, y64 = torch_case(res, inputs, model_path)
            except Exception as e:  # an exporter limitation is the oracle's, not Ember's
                shutil.rmtree(case_dir)
                return f"torch export failed: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"
            job["expected"] = dict(zip(spec["outputs"], y32))
            job["ref64"] = dict(zip(spec["outputs"], y64))
            job["cross"] = self.ort.add(model_path, inputs)
            meta["oracle"] = "pytorch"
            meta["conditioning"] = "float64"
        else:
            import onnx
            model = build_onnx(res)
            onnx.save(model, model_path)
            d_path = os.path.join(self.ort.workdir, f"{spec['name']}.f64.onnx")
            onnx.save(to_double(model), d_path)
            job["f32"] = self.ort.add(model_path, inputs)
            job["f64"] = self.ort.add(d_path, inputs, "float64")
            rng = np.random.default_rng(spec["data_seed"])
            perturbed = {n: (x if i["data"] == "separated" else
                             (x * (1 + rng.uniform(-1, 1, x.shape) * 2.0 ** -23)).astype(np.float32))
                         for (n, x), i in zip(inputs.items(), spec["inputs"])}
            job["perturbed"] = self.ort.add(model_path, perturbed)
            meta["oracle"] = "onnxruntime"
        with open(os.path.join(case_dir, "spec.json"), "w") as f:
            json.dump(spec, f, indent=1)
        for n, x in inputs.items():
            np.save(os.path.join(case_dir, "inputs", f"{n}.npy"), x)
        self.pending.append(job)
        return True

    def finish(self):
        results = self.ort.run()
        summary = []
        for job in self.pending:
            meta = job["meta"]
            if job["spec"]["builder"] == "torch":
                expected, ref64 = job["expected"], job["ref64"]
                skip, reason, cond = judge(expected, ref64, job["out_dtypes"])
                cross = results[job["cross"]]
                if not skip:
                    if isinstance(cross, str):
                        skip, reason = True, f"ONNX Runtime cannot run the exported model: {cross[:200]}"
                    else:
                        for name, y in expected.items():
                            err, _ = rel_error(cross.get(name, np.zeros(0)), y)
                            if not err <= 1e-4:
                                skip, reason = True, (f"oracles disagree: ONNX Runtime vs PyTorch on '{name}': "
                                                      f"{err:.2e} of max |y| (exporter or runtime bug)")
                                break
            else:
                r32 = results[job["f32"]]
                if isinstance(r32, str):
                    meta.update(skip=True, reason=f"ONNX Runtime rejects the model: {r32[:300]}", cond_error=0)
                    self._write_meta(job["dir"], meta)
                    summary.append(meta)
                    continue
                expected = {n: r32[n] for n in job["spec"]["outputs"]}
                r64 = results[job["f64"]]
                if isinstance(r64, str):
                    meta["conditioning"] = "perturbation"
                    ref = results[job["perturbed"]]
                    ref = ref if not isinstance(ref, str) else None
                else:
                    meta["conditioning"] = "float64"
                    ref = r64
                skip, reason, cond = judge(expected, ref, job["out_dtypes"])
            for name, y in expected.items():
                y = y.astype(np.float32) if job["out_dtypes"][name] == F else y.astype(np.int64)
                np.save(os.path.join(job["dir"], "expected", f"{name}.npy"), y)
            meta.update(skip=bool(skip), reason=reason, cond_error=float(min(cond, 1e300)))  # JSON has no inf
            self._write_meta(job["dir"], meta)
            summary.append(meta)
        self.pending = []
        self.ort.jobs = []
        return summary

    @staticmethod
    def _write_meta(case_dir, meta):
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)


def new_workdir():
    return tempfile.mkdtemp(prefix="difftest-ort-")
