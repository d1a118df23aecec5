"""Ember from Python: import ONNX models, quantize them, compile them for a
backend (reference, cpu, npu), run them on numpy arrays, simulate NPU bundles
and sweep NPU configurations.

    import ember
    model = ember.load("examples/models/digits.onnx")
    compiled = ember.compile(model, backend="cpu")
    outputs = compiled.run({"input": x})        # {name: numpy.ndarray}

The functions call the same C++ library as the `ember` command-line tool, so
outputs, reports and error messages are the tool's (docs/python.md).
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _ember
from ._errors import (CompileError, ConfigError, Error, InputError, ModelError, ModelNotFoundError,
                      QuantizationError, RunError, SimulationError, SweepError)

__version__ = _ember.__version__

__all__ = [
    "load", "compile", "sim", "sweep", "backends", "Model", "Profile", "Compiled", "SimResult", "SweepResults",
    "Error", "ModelError", "ModelNotFoundError", "ConfigError", "QuantizationError", "CompileError", "InputError",
    "RunError", "SimulationError", "SweepError",
]

PathLike = Union[str, "os.PathLike[str]"]
Config = Union[PathLike, Mapping[str, Any], None]


def _config_file(config: Config, keep: List[str]) -> str:
    """A config path for the backend: a path as given, a dict written as YAML
    (JSON is YAML) to a temporary file after checking it."""
    if config is None:
        return ""
    if isinstance(config, Mapping):
        text = json.dumps(config)
        _ember.check_config(text)
        handle, path = tempfile.mkstemp(prefix="ember-config-", suffix=".yaml")
        with os.fdopen(handle, "w") as f:
            f.write(text)
        keep.append(path)
        return path
    return os.fspath(config)


def _remove(paths: Iterable[str]) -> None:
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


class Profile:
    """A calibration profile: the quantization (scale, offset) of every tensor.
    Its YAML is the file `ember quantize -o` writes and `--quantize` reads."""

    def __init__(self, impl: "_ember.Profile"):
        self._impl = impl

    @staticmethod
    def load(path: PathLike) -> "Profile":
        """Reads a profile written by `ember quantize` or Profile.save."""
        return Profile(_ember.Profile.load(os.fspath(path)))

    def save(self, path: PathLike) -> None:
        """Writes the profile as YAML (the format of `ember quantize -o`)."""
        self._impl.save(os.fspath(path))

    def to_yaml(self) -> str:
        """The profile's YAML text."""
        return self._impl.to_yaml()

    @property
    def tensors(self) -> Dict[str, Dict[str, Any]]:
        """{tensor name: {min, max, dtype, scale, offset}}."""
        return self._impl.tensors

    @property
    def scheme(self) -> str:
        return self._impl.scheme

    @property
    def method(self) -> str:
        return self._impl.method

    @property
    def per_channel(self) -> bool:
        return self._impl.per_channel

    @property
    def graph_hash(self) -> str:
        return self._impl.graph_hash

    def __repr__(self) -> str:
        return (f"ember.Profile({self._impl.model!r}, {len(self.tensors)} tensors, scheme={self.scheme!r}, "
                f"method={self.method!r})")


def _profile_arg(quantize: Union["Profile", PathLike, None]) -> Optional["_ember.Profile"]:
    if quantize is None:
        return None
    if isinstance(quantize, Profile):
        return quantize._impl
    return _ember.Profile.load(os.fspath(quantize))


def _split_samples(array: Any, spec: Dict[str, Any]) -> List[np.ndarray]:
    """One input's calibration data as samples: the leading dimension may hold
    several batches, as `ember quantize --calibrate` reads it."""
    array = np.asarray(array)
    shape = tuple(spec["shape"])
    if array.shape == shape or len(shape) == 0 or array.ndim != len(shape) or array.shape[1:] != shape[1:]:
        return [array]
    if shape[0] <= 0 or array.shape[0] % shape[0]:
        return [array]
    return list(np.split(array, array.shape[0] // shape[0]))


class _Signed:
    """The signature both Model and Compiled show: their engine object's inputs and outputs."""

    def __init__(self, impl: Any):
        self._impl = impl

    @property
    def inputs(self) -> List[Dict[str, Any]]:
        """[{name, shape, dtype, type}] in model order."""
        return self._impl.inputs

    @property
    def outputs(self) -> List[Dict[str, Any]]:
        """[{name, shape, dtype, type}] in model order."""
        return self._impl.outputs


class Model(_Signed):
    """An imported ONNX model: its inputs, outputs and graph at any stage."""

    @property
    def path(self) -> str:
        return self._impl.path

    def graph(self, stage: str = "graph", backend: str = "reference", config: Config = None,
              quantize: Union[Profile, PathLike, None] = None, fallback: Optional[Sequence[str]] = None) -> str:
        """The printed graph at `stage`, as `ember dump --stage` prints it:
        "graph" (as imported), "optimized" (after the graph optimizer),
        "lowered" (lowered for `backend`) or "ir" (planned instruction IR)."""
        keep: List[str] = []
        try:
            return self._impl.graph(stage, backend, _config_file(config, keep), _profile_arg(quantize),
                                    None if fallback is None else list(fallback))
        finally:
            _remove(keep)

    def quantize(self, calibration: Any, scheme: str = "asymmetric", method: str = "minmax",
                 per_channel: bool = False, percentile: float = 99.99) -> Profile:
        """Calibrates the model in f32 on the reference backend, as `ember quantize` does.

        calibration: an array (one-input model), a {input name: array} dict,
        or a list of either; an array's leading dimension may hold several
        samples (a multiple of the model's batch size).
        scheme: "asymmetric", "symmetric" or "symmetric-power2".
        method: "minmax", "percentile" or "kl"."""
        specs = {spec["name"]: spec for spec in self.inputs}
        items = calibration if isinstance(calibration, (list, tuple)) else [calibration]
        samples: List[Dict[str, np.ndarray]] = []
        for item in items:
            if not isinstance(item, Mapping):
                if len(specs) != 1:
                    raise InputError(f"calibration: the model has {len(specs)} inputs; give {{name: array}} dicts")
                item = {next(iter(specs)): item}
            split = {name: _split_samples(value, specs[name]) if name in specs else [np.asarray(value)]
                     for name, value in item.items()}
            counts = {len(v) for v in split.values()}
            if len(counts) > 1:
                raise InputError("calibration: model inputs have different numbers of samples")
            for i in range(counts.pop() if counts else 0):
                samples.append({name: np.asarray(v[i]) for name, v in split.items()})
        return Profile(self._impl.quantize(samples, scheme, method, per_channel, float(percentile)))

    def compile(self, backend: str = "reference", **kwargs: Any) -> "Compiled":
        """Same as ember.compile(model, backend, ...)."""
        return compile(self, backend, **kwargs)

    def __repr__(self) -> str:
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in self.inputs)
        outs = ", ".join(f"{o['name']}: {o['type']}" for o in self.outputs)
        return f"ember.Model({self.path!r}, inputs=[{ins}], outputs=[{outs}])"


def load(path_or_bytes: Union[PathLike, bytes], dims: Optional[Mapping[str, int]] = None) -> Model:
    """Imports an ONNX model from a file or from its serialized bytes.
    dims gives symbolic input dimensions a size ({"batch": 1}), as `--dim`."""
    dims = dict(dims or {})
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return Model(_ember.Model("<bytes>", bytes(path_or_bytes), dims))
    return Model(_ember.Model(os.fspath(path_or_bytes), None, dims))


class Compiled(_Signed):
    """A model compiled for a backend and loaded on its device."""

    @property
    def backend(self) -> str:
        return self._impl.backend

    def run(self, inputs: Union[Mapping[str, Any], np.ndarray, None] = None, **named: Any) -> Dict[str, np.ndarray]:
        """Runs the model once; returns {output name: numpy array}.

        inputs: {name: array} (or one array for a one-input model, or name=array
        keywords). dtype and shape must match the model's input exactly
        (float64 is accepted for float32). Outputs own their data: no copy.
        Ctrl-C interrupts a long simulation on the npu backend."""
        given: Dict[str, Any] = {}
        if isinstance(inputs, Mapping):
            given.update(inputs)
        elif inputs is not None:
            if len(self.inputs) != 1:
                raise InputError(f"the model has {len(self.inputs)} inputs; give {{name: array}}")
            given[self.inputs[0]["name"]] = inputs
        given.update(named)
        return self._impl.run({name: np.asarray(value) for name, value in given.items()})

    __call__ = run

    @property
    def report(self) -> Dict[str, Any]:
        """The report with the keys of `ember compile/run --report-json`
        (docs/cli.md); after run() it is the last run's, NPU figures included."""
        return json.loads(self._impl.report_json())

    @property
    def layers(self) -> List[Dict[str, Any]]:
        """The accelerator's per-layer figures (the report's `layers`; empty on host backends)."""
        return self.report.get("layers", [])

    def save_bundle(self, path: PathLike) -> None:
        """Writes the compiled artefact (the npu backend's bundle, as `ember compile -o`)."""
        self._impl.save_bundle(os.fspath(path))

    def trace(self, path: PathLike) -> None:
        """Writes the last run's timeline (Chrome trace-event JSON, for Perfetto)."""
        self._impl.trace(os.fspath(path))

    def __repr__(self) -> str:
        return f"ember.Compiled(backend={self.backend!r}, inputs={[i['name'] for i in self.inputs]})"


def compile(model: Union[Model, PathLike], backend: str = "reference", config: Config = None,
            quantize: Union[Profile, PathLike, None] = None, fallback: Optional[Sequence[str]] = None,
            options: Optional[Mapping[str, str]] = None, optimize: bool = True,
            threads: Optional[int] = None) -> Compiled:
    """Compiles a model for a backend, as `ember compile` does.

    model: a Model or an ONNX path. backend: "reference", "cpu", "npu" or a
    plugin's name (ember.backends()). config: the NPU config, a YAML path or a
    dict of its keys ({"matrix_engine": {"rows": 32, "cols": 32}}).
    quantize: a Profile (or its YAML path) converts the model to int8.
    fallback: backends that run what `backend` cannot, in order ([] makes
    that an error; default: ["reference"] for every backend but reference).
    options: backend options (--backend-option KEY=VALUE). optimize=False
    skips the graph and IR optimizers. threads sets EMBER_THREADS (cpu)."""
    if not isinstance(model, Model):
        model = load(model)
    if threads is not None:
        os.environ["EMBER_THREADS"] = str(int(threads))
    keep: List[str] = []
    try:
        impl = _ember.Compiled(model._impl, backend, _config_file(config, keep), _profile_arg(quantize),
                               None if fallback is None else list(fallback),
                               {str(k): str(v) for k, v in (options or {}).items()}, optimize)
    finally:
        _remove(keep)
    return Compiled(impl)


class SimResult:
    """What `ember sim` produces: the output symbols and the statistics."""

    def __init__(self, outputs: Dict[str, np.ndarray], stats_json: str, trace_json: str):
        self.outputs = outputs
        self.stats: Dict[str, Any] = json.loads(stats_json)
        self._trace_json = trace_json

    @property
    def cycles(self) -> int:
        return self.stats["cycles"]

    def trace(self, path: PathLike) -> None:
        """Writes the timeline (Chrome trace-event JSON), as `ember sim --trace`."""
        with open(os.fspath(path), "w") as f:
            f.write(self._trace_json)

    def __repr__(self) -> str:
        return f"ember.SimResult(cycles={self.cycles}, outputs={list(self.outputs)})"


def sim(bundle: PathLike, config: Config = None, inputs: Optional[Mapping[str, Any]] = None,
        matrix_engine: Optional[str] = None, max_cycles: Optional[int] = None) -> SimResult:
    """Runs an NPU bundle (or an assembly file ending in .s) on the simulator,
    as `ember sim` does. inputs: {symbol name: array} of the symbol's dtype
    (int8, uint8 or int32) and shape. Ctrl-C interrupts a long simulation;
    max_cycles (as `--max-cycles`) raises SimulationError once the run passes it."""
    if max_cycles is not None and max_cycles <= 0:
        raise ValueError(f"max_cycles must be a positive cycle count, got {max_cycles}")
    config_path = config_text = None
    if isinstance(config, Mapping):
        config_text = json.dumps(config)
    elif config is not None:
        config_path = os.fspath(config)
    arrays = {name: np.asarray(value) for name, value in (inputs or {}).items()}
    outputs, stats, trace = _ember.sim(os.fspath(bundle), config_path, config_text, arrays, matrix_engine or "",
                                        max_cycles or 0)
    return SimResult(outputs, stats, trace)


def backends() -> List[str]:
    """The registered backends' names (built-in and EMBER_BACKEND_PATH plugins), as `ember backends`."""
    return [b["name"] for b in _ember.backends()]


class SweepResults(list):
    """One dict per sweep point (the columns of results.csv), and where the sweep wrote its files."""

    def __init__(self, rows: List[Dict[str, Any]], output_dir: str):
        super().__init__(rows)
        self.output_dir = output_dir

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        import pandas  # noqa: F401: optional dependency
        return pandas.DataFrame(list(self))

    @property
    def dataframe(self) -> Any:
        """The rows as a pandas DataFrame, or None when pandas is not installed."""
        try:
            return self.to_pandas()
        except ImportError:
            return None


_TEXT_COLUMNS = {"id", "model", "config", "status", "error", "slurm_job", "slurm_state"}


def _cell(column: str, text: str) -> Any:
    if column in _TEXT_COLUMNS:
        return text
    if text.startswith(column + "="):  # a plain axis's label, "key=value": the value
        text = text[len(column) + 1:]
    if text == "":
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _tool() -> str:
    """The `ember` tool each sweep point runs: $EMBER_TOOL, the installed one
    (PREFIX/bin next to PREFIX/lib/python3.X/dist-packages), or the build tree's."""
    if os.environ.get("EMBER_TOOL"):
        return os.environ["EMBER_TOOL"]
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin", "ember"))
    if os.access(installed, os.X_OK):
        return installed
    return _ember.TOOL_BUILD_PATH


def _absolute_paths(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """A spec dict's paths made absolute against the working directory (a spec
    file's paths are relative to the file)."""
    spec = json.loads(json.dumps(spec))

    def absolute(value: Any) -> Any:
        if not isinstance(value, str) or not value or os.path.isabs(value) or "${" in value:
            return value
        return os.path.abspath(value)

    if "base_config" in spec:
        spec["base_config"] = absolute(spec["base_config"])
    for model in spec.get("models", []) or []:
        if not isinstance(model, dict):
            continue
        for key in ("path", "profile"):
            if key in model:
                model[key] = absolute(model[key])
        if isinstance(model.get("calibrate"), str):
            name, sep, rest = model["calibrate"].partition("=")
            model["calibrate"] = (name + sep + absolute(rest)) if sep and "/" not in name else absolute(
                model["calibrate"])
    return spec


def sweep(spec: Union[PathLike, Mapping[str, Any]], jobs: int = 2, output_dir: Optional[PathLike] = None,
          backend: Optional[str] = None, timeout: Optional[int] = None) -> SweepResults:
    """Runs a design-space sweep, as `ember sweep SPEC -o DIR -j JOBS`: each
    point is compiled and simulated in its own `ember` process.

    spec: a spec YAML path (docs/codesign.md) or the same structure as a dict
    (its paths relative to the working directory). output_dir: where
    results.csv, points/ and report.html go (default: a new temporary
    directory). Returns one dict per point (results.csv's columns); a failed
    point has status "failed" and its error."""
    out = os.fspath(output_dir) if output_dir is not None else tempfile.mkdtemp(prefix="ember-sweep-")
    if isinstance(spec, Mapping):
        os.makedirs(out, exist_ok=True)
        spec_path = os.path.join(out, "spec.yaml")
        with open(spec_path, "w") as f:
            json.dump(_absolute_paths(spec), f, indent=1)
    else:
        spec_path = os.fspath(spec)
    words = [spec_path, "-o", out, "-j", str(int(jobs))]
    if backend:
        words += ["--backend", backend]
    if timeout:
        words += ["--timeout", str(int(timeout))]
    status, stdout, stderr = _ember.sweep_command(words, _tool())
    results = os.path.join(out, "results.csv")
    if "wrote " not in stdout or not os.path.exists(results):
        lines = [line for line in stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"ember sweep exited with status {status}"
        for prefix in ("ember: ", "ember sweep: "):
            if message.startswith(prefix):
                message = message[len(prefix):]
        if "interrupted by signal" in message:
            raise KeyboardInterrupt(message)
        raise SweepError(message)
    with open(results, newline="") as f:
        rows = [{column: _cell(column, value) for column, value in row.items()} for row in csv.DictReader(f)]
    return SweepResults(rows, out)
