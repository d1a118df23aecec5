"""The Python binding against the `ember` tool and independent data
(docs/python.md): every function, numpy round trips for every element type,
errors with the tool's messages, results identical to the tool's."""

import json
import os
import signal
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

import ember
from conftest import CONFIGS, MODELS, NPU_16, REPO, TINY_CNN, read_json, run_tool, tool_error

# --- loading and graphs ------------------------------------------------------------------------


def test_backends_are_the_tools():
    listed = [line.split()[0] for line in run_tool("backends").stdout.splitlines() if line.strip()]
    assert ember.backends() == listed
    assert {"reference", "cpu", "npu"} <= set(ember.backends())


def test_load_signature():
    model = ember.load(TINY_CNN)
    assert [i["name"] for i in model.inputs] == ["input"]
    assert model.inputs[0]["shape"] == (1, 3, 16, 16)
    assert model.inputs[0]["dtype"] == np.float32
    assert [(o["name"], o["shape"]) for o in model.outputs] == [("output", (1, 10))]


def test_load_bytes_is_load_path():
    with open(TINY_CNN, "rb") as f:
        from_bytes = ember.load(f.read())
    assert from_bytes.graph() == ember.load(TINY_CNN).graph()


def test_dims_pin_symbolic_dimensions():
    digits = os.path.join(MODELS, "digits.onnx")
    with pytest.raises(ember.ModelError) as error:
        ember.load(digits)
    assert str(error.value) == tool_error("dump", digits)
    assert ember.load(digits, dims={"N": 3}).inputs[0]["shape"] == (3, 1, 8, 8)


@pytest.mark.parametrize("backend", ["cpu", "npu"])
@pytest.mark.parametrize("stage", ["graph", "optimized", "lowered", "ir"])
def test_graph_at_each_stage_is_ember_dump(stage, backend):
    printed = ember.load(TINY_CNN).graph(stage, backend=backend)
    assert printed.strip() == run_tool("dump", TINY_CNN, "--stage", stage, "--backend", backend).stdout.strip()


def test_graph_stage_names():
    assert "function main" in ember.load(TINY_CNN).graph()
    with pytest.raises(ember.Error, match="unknown stage 'fused'"):
        ember.load(TINY_CNN).graph("fused")


# --- element types -------------------------------------------------------------------------------

ELEMENT_TYPES = [
    ("f32", np.float32), ("f16", np.float16), ("bf16", np.uint16), ("i8q", np.int8), ("u8q", np.uint8),
    ("i32q", np.int32), ("i32", np.int32), ("i64", np.int64), ("bool", np.bool_), ("f64", np.float64),
]


@pytest.mark.parametrize("kind,dtype", ELEMENT_TYPES)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_numpy_round_trip(kind, dtype, shape):
    rng = np.random.default_rng(7)
    if dtype == np.bool_:
        array = rng.integers(0, 2, shape).astype(np.bool_)
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    else:
        array = rng.standard_normal(shape).astype(dtype)
    back = ember._ember.to_numpy_round_trip(array, kind)
    assert back.dtype == dtype and back.shape == shape
    assert back.tobytes() == array.tobytes()


@pytest.mark.parametrize("kind,dtype", [("f32", np.float32), ("f16", np.float16)])
def test_float64_is_rounded_as_astype(kind, dtype):
    wide = np.random.default_rng(2).standard_normal((4, 5)) * 1000
    assert ember._ember.to_numpy_round_trip(wide, kind).tobytes() == wide.astype(dtype).tobytes()


def test_round_trip_of_a_non_contiguous_array():
    array = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    np.testing.assert_array_equal(ember._ember.to_numpy_round_trip(array, "f32"), array)


def test_npy_reader_matches_numpy():
    path = os.path.join(MODELS, "digits.calibration.npy")
    np.testing.assert_array_equal(ember._ember.read_npy(path), np.load(path))


# --- compile and run -----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_run_matches_pytorch(backend, tiny_input):
    # tiny_cnn.output.npy is PyTorch's output for tiny_cnn.input.npy (scripts/gen_example_model.py).
    expected = np.load(os.path.join(MODELS, "tiny_cnn.output.npy"))
    outputs = ember.compile(TINY_CNN, backend=backend).run({"input": tiny_input})
    assert list(outputs) == ["output"]
    np.testing.assert_allclose(outputs["output"], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_run_is_the_tools_run(backend, tiny_input, tmp_path):
    run_tool("run", TINY_CNN, "--backend", backend, "--input", f"input={MODELS}/tiny_cnn.input.npy",
             "--output-dir", tmp_path, "--quiet")
    compiled = ember.compile(ember.load(TINY_CNN), backend=backend)
    ours = compiled(tiny_input)["output"]
    assert ours.tobytes() == np.load(tmp_path / "output.npy").tobytes()


def test_outputs_own_their_buffer(tiny_input):
    compiled = ember.compile(TINY_CNN)
    first = compiled.run(input=tiny_input)["output"]
    second = compiled.run(input=tiny_input * 2)["output"]
    assert not np.shares_memory(first, second)
    assert first.base is not None  # the tensor's own storage, not a copy
    first[...] = 0  # writable, and a later run does not touch it
    assert compiled.run(input=tiny_input)["output"].any()


def test_float64_inputs_become_float32(tiny_input):
    compiled = ember.compile(TINY_CNN)
    np.testing.assert_array_equal(compiled.run(tiny_input.astype(np.float64))["output"],
                                  compiled.run(tiny_input)["output"])


def test_report_has_the_keys_of_report_json(tmp_path, tiny_input):
    run_tool("compile", TINY_CNN, "--backend", "cpu", "--report-json", tmp_path / "compile.json", "--quiet")
    compiled = ember.compile(TINY_CNN, backend="cpu")
    assert set(compiled.report) == set(read_json(tmp_path / "compile.json"))
    run_tool("run", TINY_CNN, "--backend", "cpu", "--random-inputs", "--report-json", tmp_path / "run.json",
             "--quiet")
    compiled.run(tiny_input)
    report = compiled.report
    assert set(report) == set(read_json(tmp_path / "run.json"))
    assert report["memory"] == read_json(tmp_path / "run.json")["memory"]
    assert compiled.layers == []  # a host backend has no per-layer figures


def test_fallback_none_refuses_what_the_backend_lacks():
    # The npu runs no f32 Gemm: without fallback it is an error, with the default it falls back.
    with pytest.raises(ember.CompileError) as error:
        ember.compile(TINY_CNN, backend="npu", fallback=[])
    assert str(error.value) == tool_error("compile", TINY_CNN, "--backend", "npu", "--fallback", "none")
    report = ember.compile(TINY_CNN, backend="npu", fallback=["reference"]).report
    assert report["fallback_nodes"]


# --- quantization and the NPU --------------------------------------------------------------------


def test_quantize_writes_the_tools_profile(tmp_path, tiny_input, tiny_profile_path):
    profile = ember.load(TINY_CNN).quantize([tiny_input])
    profile.save(tmp_path / "ours.yaml")
    with open(tiny_profile_path) as f:
        assert (tmp_path / "ours.yaml").read_text() == f.read()
    loaded = ember.Profile.load(tmp_path / "ours.yaml")
    assert loaded.to_yaml() == profile.to_yaml()
    assert loaded.scheme == "asymmetric" and loaded.method == "minmax" and not loaded.per_channel
    assert set(loaded.tensors) == set(profile.tensors) and "input" in loaded.tensors


def test_quantize_options_are_the_tools(tmp_path, tiny_input):
    run_tool("quantize", TINY_CNN, "--calibrate", f"{MODELS}/tiny_cnn.input.npy", "-o", tmp_path / "s.yaml",
             "--schema", "symmetric", "--per-channel", "--quiet")
    profile = ember.load(TINY_CNN).quantize({"input": tiny_input}, scheme="symmetric", per_channel=True)
    assert profile.to_yaml() == (tmp_path / "s.yaml").read_text()
    with pytest.raises(ember.QuantizationError, match="scheme"):
        ember.load(TINY_CNN).quantize(tiny_input, scheme="lopsided")


@pytest.fixture(scope="module")
def npu_run(tmp_path_factory, tiny_profile_path):
    """tiny_cnn in int8 on npu-16x16, by the tool and by the binding."""
    out = tmp_path_factory.mktemp("npu")
    run_tool("run", TINY_CNN, "--backend", "npu", "--config", NPU_16, "--quantize", tiny_profile_path, "--input",
             f"input={MODELS}/tiny_cnn.input.npy", "--output-dir", out, "--report-json", out / "report.json",
             "--quiet")
    compiled = ember.compile(ember.load(TINY_CNN), backend="npu", config=NPU_16, quantize=tiny_profile_path)
    outputs = compiled.run({"input": np.load(f"{MODELS}/tiny_cnn.input.npy")})
    return out, compiled, outputs


def test_npu_outputs_and_cycles_are_the_tools(npu_run):
    out, compiled, outputs = npu_run
    assert outputs["output"].tobytes() == np.load(out / "output.npy").tobytes()
    tool, ours = read_json(out / "report.json"), compiled.report
    assert set(ours) == set(tool)
    # tiny_cnn's edge Quantize/Dequantize run on the host: their time and transfers are added.
    assert ours["end_to_end_latency_us"] > ours["latency_us"] > 0
    assert ours["transfer_bytes"] == tool["transfer_bytes"] > 0
    for key in ("cycles", "macs", "dram_read_bytes", "dram_write_bytes", "energy_pj", "quantized_nodes"):
        assert ours[key] == tool[key], key
    assert ours["cycles"] > 0
    assert [(l["name"], l["cycles"]) for l in compiled.layers] == [(l["name"], l["cycles"]) for l in tool["layers"]]


def test_config_dict_is_the_config_file(npu_run, tiny_profile_path):
    _, compiled, _ = npu_run
    as_dict = ember.compile(TINY_CNN, backend="npu", config={"name": "npu-16x16"}, quantize=tiny_profile_path)
    as_dict.run(np.load(f"{MODELS}/tiny_cnn.input.npy"))
    assert as_dict.report["cycles"] == compiled.report["cycles"]


def test_trace_and_bundle_then_sim(npu_run, tmp_path):
    _, compiled, _ = npu_run
    compiled.trace(tmp_path / "trace.json")
    assert read_json(tmp_path / "trace.json")["traceEvents"]
    compiled.save_bundle(tmp_path / "tiny.bundle")
    # The bundle's input symbol: int8 data. Same inputs through `ember sim`.
    rng = np.random.default_rng(3)
    disasm = run_tool("disasm", tmp_path / "tiny.bundle").stdout
    symbols = [line.split() for line in disasm.splitlines() if line.startswith(".input")]
    inputs, files = {}, []
    for i, (_, name, kind, shape, *_) in enumerate(symbols):
        dims = tuple(int(d) for d in shape.strip("[]").split(","))
        dtype = {"i8": np.int8, "u8": np.uint8, "i32": np.int32}[kind]
        inputs[name] = rng.integers(-100, 100, dims).astype(dtype)
        np.save(tmp_path / f"in{i}.npy", inputs[name])
        files += ["--input", f"{name}={tmp_path}/in{i}.npy"]
    assert inputs
    result = ember.sim(tmp_path / "tiny.bundle", NPU_16, inputs)
    run_tool("sim", tmp_path / "tiny.bundle", "--config", NPU_16, *files, "--output-dir", tmp_path / "out",
             "--stats", tmp_path / "stats.json", "--quiet")
    stats = read_json(tmp_path / "stats.json")
    assert result.cycles == stats["cycles"] > 0
    assert set(result.stats) == set(stats)
    assert result.outputs
    for name, array in result.outputs.items():
        sanitized = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        assert array.tobytes() == np.load(tmp_path / "out" / f"{sanitized}.npy").tobytes()
    result.trace(tmp_path / "sim-trace.json")
    assert read_json(tmp_path / "sim-trace.json")["traceEvents"]


def test_sim_of_assembly_with_a_config_dict():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (1024, 1024), dtype=np.int8)
    b = rng.integers(-128, 128, (1024, 1024), dtype=np.int8)
    gemm = os.path.join(REPO, "examples", "npu", "gemm.s")
    by_file = ember.sim(gemm, NPU_16, {"A": a, "B": b})
    by_dict = ember.sim(gemm, {"dram": {"bandwidth_bytes_per_cycle": 16}}, {"A": a, "B": b})
    assert by_file.cycles == by_dict.cycles
    # int8 GEMM requantized by 2^-11 (gemm.s), rounded half away from zero (docs/quantization.md).
    exact = a[:64].astype(np.int64) @ b.astype(np.int64)
    expected = np.clip(np.sign(exact) * ((np.abs(exact) + 1024) >> 11), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(by_file.outputs["C"][:64], expected)


# --- errors ---------------------------------------------------------------------------------------


def test_missing_model_file():
    with pytest.raises(ember.ModelNotFoundError) as error:
        ember.load("no/such/model.onnx")
    assert isinstance(error.value, FileNotFoundError)
    assert str(error.value) == tool_error("dump", "no/such/model.onnx")


def test_bad_config_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmatrix_engine:\n  rowz: 8\n")
    with pytest.raises(ember.ConfigError) as error:
        ember.compile(TINY_CNN, backend="npu", config=bad)
    assert str(error.value) == tool_error("compile", TINY_CNN, "--backend", "npu", "--config", bad)
    assert "rowz" in str(error.value)
    with pytest.raises(ember.ConfigError, match="rowz"):
        ember.compile(TINY_CNN, backend="npu", config={"matrix_engine": {"rowz": 8}})
    with pytest.raises(ember.ConfigError, match="rowz"):
        ember.sim(os.path.join(REPO, "examples", "npu", "gemm.s"), {"matrix_engine": {"rowz": 8}}, {})


def test_unknown_backend():
    with pytest.raises(ember.ConfigError) as error:
        ember.compile(TINY_CNN, backend="tpu")
    assert str(error.value) == tool_error("compile", TINY_CNN, "--backend", "tpu")


def test_wrong_inputs(tiny_input):
    compiled = ember.compile(TINY_CNN)
    with pytest.raises(ember.InputError, match="input 'input': expected f32<1x3x16x16>, got shape 1x3x8x8"):
        compiled.run(tiny_input[:, :, :8, :8])
    with pytest.raises(ember.InputError, match="expected f32<1x3x16x16> \\(numpy float32\\), got int32"):
        compiled.run(tiny_input.astype(np.int32))
    with pytest.raises(ember.InputError, match="missing model input"):
        compiled.run({})
    with pytest.raises(ember.InputError, match="no input\\(s\\) 'x'"):
        compiled.run({"input": tiny_input, "x": tiny_input})
    with pytest.raises(ValueError):  # InputError is a ValueError
        compiled.run(tiny_input[0])


def test_sim_errors(tmp_path):
    gemm = os.path.join(REPO, "examples", "npu", "gemm.s")
    with pytest.raises(ember.InputError, match="missing inputs: A, B"):
        ember.sim(gemm, None, {})
    with pytest.raises(ember.InputError, match="expects shape 1024x1024"):
        ember.sim(gemm, None, {"A": np.zeros((2, 2), np.int8), "B": np.zeros((1024, 1024), np.int8)})
    with pytest.raises(ember.ModelNotFoundError):
        ember.sim(tmp_path / "none.bundle", None, {})


def test_sim_cycle_budget():
    gemm = os.path.join(REPO, "examples", "npu", "gemm.s")
    inputs = {"A": np.ones((1024, 1024), np.int8), "B": np.ones((1024, 1024), np.int8)}
    cycles = ember.sim(gemm, NPU_16, inputs).cycles
    # The budget is exact: the run's own cycle count passes, one fewer does not.
    assert ember.sim(gemm, NPU_16, inputs, max_cycles=cycles).cycles == cycles
    with pytest.raises(ember.SimulationError, match=f"cycle budget of {cycles - 1} cycles"):
        ember.sim(gemm, NPU_16, inputs, max_cycles=cycles - 1)
    with pytest.raises(ValueError, match="max_cycles"):
        ember.sim(gemm, NPU_16, inputs, max_cycles=0)


def test_ctrl_c_interrupts_a_long_simulation(tmp_path):
    # A 2048^3 int8 GEMM: about 8x the shipped 1024^3 one; SIGINT arrives shortly after it starts.
    program = tmp_path / "gemm2048.s"
    subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gen_gemm_asm.py"), "2048", "2048", "2048", "-o",
                    str(program)], check=True)
    inputs = {"A": np.ones((2048, 2048), np.int8), "B": np.ones((2048, 2048), np.int8)}
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as interrupt:
        ember.sim(program, NPU_16, inputs)
    timer.join()
    # Raised from inside the simulation call, not after it returned.
    assert "_ember.sim(" in traceback.extract_tb(interrupt.tb)[-1].line
    # The simulator is usable again afterwards.
    gemm = os.path.join(REPO, "examples", "npu", "gemm.s")
    small = {"A": np.ones((1024, 1024), np.int8), "B": np.ones((1024, 1024), np.int8)}
    assert ember.sim(gemm, NPU_16, small).cycles > 0


def test_ctrl_c_interrupts_a_long_npu_run(tmp_path):
    # Compiled.run on the npu simulates through the backend's device, which passes the
    # simulator no options: a 2048x2048 @ 2048x1024 int8 MatMul (about 40 M cycles on
    # npu-16x16) must stop well before a whole run's time once SIGINT arrives.
    import time
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    weights = numpy_helper.from_array(rng.standard_normal((2048, 1024)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "long_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2048, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2048, 1024])], [weights])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx_model.ir_version = 8
    path = tmp_path / "long_matmul.onnx"
    onnx.save(onnx_model, str(path))
    model = ember.load(path)
    x = rng.standard_normal((2048, 2048)).astype(np.float32)
    compiled = ember.compile(model, backend="npu", config=NPU_16, quantize=model.quantize([{"x": x}]))
    # The process's CPU time, not the wall clock, and counted from the moment
    # the signal is sent: under a loaded ctest -j the 0.1 s timer thread itself
    # was scheduled late (0.71 of 1.37 s of CPU time had passed before the stop,
    # measured from the run's start), although the simulator stopped as soon
    # as the signal came.
    start = time.process_time()
    compiled.run({"x": x})
    whole = time.process_time() - start
    sent = []

    def interrupt():
        sent.append(time.process_time())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.1, interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        compiled.run({"x": x})
    stopped = time.process_time()
    timer.join()
    assert stopped - sent[0] < 0.5 * whole, (stopped - sent[0], whole)
    assert compiled.run({"x": x})["y"].shape == (2048, 1024)  # usable again


# --- sweep ---------------------------------------------------------------------------------------


def small_spec():
    return {
        "name": "pytest",
        "backend": "npu",
        "base_config": os.path.join(CONFIGS, "npu-16x16.yaml"),
        "models": [{"path": TINY_CNN, "calibrate": os.path.join(MODELS, "tiny_cnn.input.npy")}],
        "axes": {"dram.bandwidth_bytes_per_cycle": [8, 32]},
    }


def test_sweep_dict_is_the_tools_sweep(tmp_path):
    results = ember.sweep(small_spec(), jobs=2, output_dir=tmp_path / "py")
    assert len(results) == 2 and all(r["status"] == "ok" for r in results)
    assert [r["dram.bandwidth_bytes_per_cycle"] for r in results] == [8, 32]
    assert results[0]["cycles"] > results[1]["cycles"] > 0  # more bandwidth, fewer cycles
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(json.dumps(small_spec()))
    run_tool("sweep", spec_file, "-o", tmp_path / "tool", "-j", "2")
    from_file = ember.sweep(spec_file, jobs=1, output_dir=tmp_path / "tool")  # resumes: every point done
    assert [r["cycles"] for r in from_file] == [r["cycles"] for r in results]
    assert [r["energy_pj"] for r in from_file] == [r["energy_pj"] for r in results]
    # pandas is installed by scripts/install-deps.sh, so the DataFrame is checked in CI.
    assert list(results.dataframe["cycles"]) == [r["cycles"] for r in results]


def test_sweep_errors(tmp_path):
    spec = small_spec()
    spec["models"][0]["path"] = str(tmp_path / "missing.onnx")
    with pytest.raises(ember.SweepError, match="missing.onnx: no such file"):
        ember.sweep(spec, output_dir=tmp_path / "out")


# --- the example ---------------------------------------------------------------------------------


def test_codesign_example_writes_its_png(tmp_path):
    script = os.path.join(REPO, "examples", "python", "codesign_sweep.py")
    subprocess.run([sys.executable, script, "--quick", "--output-dir", str(tmp_path)], check=True,
                   env=dict(os.environ, MPLBACKEND="Agg"))
    png = tmp_path / "latency_vs_energy.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10000


def test_help_reads_well():
    assert "NPU config" in ember.compile.__doc__
    assert "Ctrl-C" in ember.sim.__doc__
    stubs = os.path.join(os.path.dirname(ember.__file__), "__init__.pyi")
    assert os.path.exists(stubs)


def test_readme_python_example_runs(capsys, monkeypatch):
    # The README's Python lines, run literally from the repository's root.
    with open(os.path.join(REPO, "README.md")) as f:
        readme = f.read()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "'logits'" in printed and printed.rstrip().endswith("cycles")
