#!/usr/bin/python3
"""Writes the tiny ONNX models that tests/compare runs `ember compare` on.

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


rng = np.random.default_rng(15)
scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32), "scale_c")
shift = numpy_helper.from_array(rng.uniform(-0.5, 0.5, (4, 6)).astype(np.float32), "shift_c")


def chain(output="out", extra_nodes=(), output_shape=(4, 6)):
    """out = Tanh((Relu(x * scale_c + shift_c) - y)^2): the Sub ('diff') sits
    in the middle, with three nodes before it and two after."""
    nodes = [helper.make_node("Mul", ["x", "scale_c"], ["scaled"], name="scale"),
             helper.make_node("Add", ["scaled", "shift_c"], ["shifted"], name="shift"),
             helper.make_node("Relu", ["shifted"], ["act_out"], name="act"),
             helper.make_node("Sub", ["act_out", "y"], ["diff_out"], name="diff"),
             helper.make_node("Mul", ["diff_out", "diff_out"], ["squared"], name="square"),
             helper.make_node("Tanh", ["squared"], ["tanh_out" if extra_nodes else output], name="squash")]
    nodes += list(extra_nodes)
    return helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, list(output_shape))],
        [scale, shift] + ([numpy_helper.from_array(np.array(output_shape, dtype=np.int64), "new_shape")]
                          if extra_nodes else []))


save(chain(), "chain.onnx")
# The same network with its output under another name.
save(chain(output="result"), "chain_renamed.onnx")
# The same network with its output reshaped to 6x4.
save(chain(extra_nodes=[helper.make_node("Reshape", ["tanh_out", "new_shape"], ["out"], name="reshape")],
           output_shape=(6, 4)), "chain_reshaped.onnx")
