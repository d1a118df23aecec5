"""Ember's exceptions. Every message is the library's one line, as the `ember` tool prints it."""


class Error(Exception):
    """Base class of every error Ember raises."""


class ModelError(Error):
    """The model could not be imported (bad ONNX, unsupported op, bad dims)."""


class ModelNotFoundError(ModelError, FileNotFoundError):
    """The model or bundle file does not exist."""


class ConfigError(Error, ValueError):
    """A backend, backend option or NPU config is wrong (unknown key, bad value)."""


class QuantizationError(Error):
    """Calibration or the quantization profile failed."""


class CompileError(Error):
    """The compile pipeline refused the model."""


class InputError(Error, ValueError):
    """Inputs do not match the model: a missing or unknown name, a wrong dtype or shape."""


class RunError(Error):
    """The backend failed while running the model."""


class SimulationError(Error):
    """The NPU simulator refused or failed the bundle."""


class SweepError(Error):
    """The sweep could not run (a bad spec, a missing model)."""
