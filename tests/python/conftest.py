"""Shared fixtures of the Python binding's tests: the repository's paths, the
`ember` tool (the oracle the binding must agree with) and a runner for it."""

import json
import os
import subprocess

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(REPO, "examples", "models")
CONFIGS = os.path.join(REPO, "simulator", "configs")
TINY_CNN = os.path.join(MODELS, "tiny_cnn.onnx")
NPU_16 = os.path.join(CONFIGS, "npu-16x16.yaml")


def tool_path():
    return os.environ.get("EMBER_TOOL") or os.path.join(REPO, "build", "default", "bin", "ember")


def run_tool(*args, check=True):
    """Runs the `ember` tool; returns the CompletedProcess (text)."""
    result = subprocess.run([tool_path(), *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"ember {' '.join(map(str, args))} failed: {result.stderr}")
    return result


def tool_error(*args):
    """The one-line message the tool prints for a failing command, without 'ember: '."""
    result = run_tool(*args, check=False)
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("ember: "), line
    return line[len("ember: "):]


def read_json(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def tiny_input():
    return np.load(os.path.join(MODELS, "tiny_cnn.input.npy"))


@pytest.fixture(scope="session")
def tiny_profile_path(tmp_path_factory):
    """tiny_cnn's profile as `ember quantize` writes it (calibrated on its input)."""
    path = tmp_path_factory.mktemp("profile") / "tiny.yaml"
    run_tool("quantize", TINY_CNN, "--calibrate", os.path.join(MODELS, "tiny_cnn.input.npy"), "-o", path,
             "--quiet")
    return str(path)
