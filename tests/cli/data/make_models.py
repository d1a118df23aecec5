#!/usr/bin/python3
"""Writes the tiny ONNX models that tests/cli/CliTest.cpp runs `ember` on.

Run once with /usr/bin/python3 (Debian's python3-onnx); the .onnx outputs are
checked in next to this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ember-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


# y = Relu(x + c), with an output name that needs sanitising, and a second
# output. Expected for x = ones: out/y:0 = Relu(1 + c).
c = numpy_helper.from_array(np.array([[-2, -1, 0], [1, 2, 3]], dtype=np.float32), "c")
save(helper.make_graph(
    [helper.make_node("Add", ["x", "c"], ["s"], name="add"),
     helper.make_node("Relu", ["s"], ["out/y:0"], name="relu"),
     helper.make_node("Neg", ["s"], ["neg"], name="neg")],
    "add_relu",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("out/y:0", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("neg", TensorProto.FLOAT, [2, 3])],
    [c]), "add_relu.onnx")

# Two inputs: sum = a + b.
save(helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["sum"], name="add")],
    "two_inputs",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 2])],
    [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 2])]), "two_inputs.onnx")

# An operator no importer knows (the checker would reject it, so skip it).
graph = helper.make_graph(
    [helper.make_node("FrobnicateZ", ["x"], ["y"], name="mystery")],
    "unknown_op",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ember-tests")
model.ir_version = 8
onnx.save(model, os.path.join(HERE, "unknown_op.onnx"))

# A symbolic batch dimension, pinned with --dim batch=N.
save(helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="relu")],
    "symbolic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])]), "symbolic.onnx")

# Shape specialisation and a value-dependent output: the Reshape's `shape`
# input decides a shape (bound as a constant when given), and NonZero's output
# shape depends on x's values (compiled at its bound when x is not given).
save(helper.make_graph(
    [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
     helper.make_node("NonZero", ["r"], ["nz"], name="nz")],
    "bind_and_bound",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["rows", "cols"]),
     helper.make_tensor_value_info("nz", TensorProto.INT64, [2, "nonzeros"])]), "bind_and_bound.onnx")
