#!/usr/bin/python3
"""Generates ONNX's own backend node test cases (golden data from outside Ember).

Usage: gen_onnx_node_tests.py OUTDIR

Writes OUTDIR/node/<case>/model.onnx and OUTDIR/node/<case>/test_data_set_<i>/{input,output}_<j>.pb
from the case generators shipped with python3-onnx (the same ones as
`python -m onnx.backend.test.cmd_tools generate-data`), which Debian does not ship pre-generated.

Deterministic: numpy's global RNG is seeded before the generators run, and cases are written in
sorted order. Skips all work when OUTDIR/node/.stamp exists and names the same onnx version.

Test-data generation only: nothing in the product runs Python.
"""

import os
import shutil
import sys
import time
import warnings

import numpy as np

# onnx 1.12's case generators still use aliases that numpy 1.24 removed (docs/design.md, pitfalls).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # hasattr() on a removed alias warns
    for _alias, _builtin in (("float", float), ("int", int), ("bool", bool), ("object", object), ("str", str)):
        if not hasattr(np, _alias):
            setattr(np, _alias, _builtin)

import onnx  # noqa: E402  (must follow the alias restoration)
from onnx import numpy_helper  # noqa: E402

STAMP_NAME = ".stamp"


def stamp_text() -> str:
    return f"onnx {onnx.__version__} numpy {np.__version__} generator v1\n"


def serialize_value(value, value_info) -> bytes:
    """Serializes one input/output the way cmd_tools.generate_data does."""
    kind = value_info.type
    if kind.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if kind.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if kind.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def write_case(case, case_dir: str) -> None:
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(set_dir)
        for j, value in enumerate(inputs):
            with open(os.path.join(set_dir, f"input_{j}.pb"), "wb") as f:
                f.write(serialize_value(value, graph.input[j]))
        for j, value in enumerate(outputs):
            with open(os.path.join(set_dir, f"output_{j}.pb"), "wb") as f:
                f.write(serialize_value(value, graph.output[j]))


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out_dir = os.path.abspath(sys.argv[1])
    node_dir = os.path.join(out_dir, "node")
    stamp_path = os.path.join(node_dir, STAMP_NAME)
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read() == stamp_text():
                os.utime(stamp_path)  # newer than this script, so the build considers it done
                print(f"gen_onnx_node_tests: {node_dir} is up to date")
                return 0

    start = time.monotonic()
    np.random.seed(0)
    import onnx.backend.test.case.node as node_cases

    # A few names are generated twice; like cmd_tools (which rewrites the directory), the last wins.
    by_name = {}
    for case in node_cases.collect_testcases(None):
        by_name[case.name] = case
    cases = [by_name[name] for name in sorted(by_name)]

    # Write into a scratch directory and rename at the end, so an interrupted run never leaves
    # a half-written tree that looks complete.
    scratch = node_dir + ".tmp"
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    written = 0
    for case in cases:
        if case.kind != "node" or case.model is None or not case.data_sets:
            continue
        write_case(case, os.path.join(scratch, case.name))
        written += 1
    with open(os.path.join(scratch, STAMP_NAME), "w") as f:
        f.write(stamp_text())
    shutil.rmtree(node_dir, ignore_errors=True)
    os.rename(scratch, node_dir)
    print(f"gen_onnx_node_tests: wrote {written} node cases to {node_dir} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
