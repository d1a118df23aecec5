#!/usr/bin/python3
"""Minimises a failing difftest case and writes it as a regression case.

    minimize.py --case CASE_DIR --check CHECK --runner difftest_runner --out tests/difftest/regressions

Starting from CASE_DIR/spec.json it repeatedly keeps only the failing
output, deletes ops (a deleted op's users read its first operand instead)
and halves input dimensions (all of an input's at once, then one by one), keeping each change while difftest_runner
still reports CHECK failing on the rebuilt case (with a well-conditioned
oracle). The smallest spec is written, with its model, inputs and oracle
outputs, to OUT/<case>_<check>/.
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import casebuild  # noqa: E402


def signature(line):
    """What kind of failure a runner line reports, without names and numbers:
    a shrunk case must fail the same way (the same error, or a mismatch)."""
    what = line.split(": ", 1)[1] if ": " in line else line
    if not what.startswith(("error", "npu error", "reference int8 error", "calibration error")):
        return "mismatch"
    what = re.sub(r"'[^']*'", "'_'", what)
    what = re.sub(r"<[^>]*>", "<_>", what)
    what = re.sub(r"[0-9.e+-]+", "N", what)
    what = re.sub(r"^.*?\.onnx: ", "", what)
    return what[:80]


class Oracle:
    """Builds candidate specs and asks the runner whether CHECK still fails."""

    def __init__(self, runner, check, workdir, extra_args):
        self.runner, self.check, self.workdir, self.extra = runner, check, workdir, extra_args
        self.calls = 0
        self.want = None  # the failure's signature, set by the first run

    def build(self, spec, case_dir):
        writer = casebuild.CaseWriter(tempfile.mkdtemp(dir=self.workdir))
        if writer.write(spec, case_dir) is not True:
            return None
        meta = writer.finish()[0]
        return None if meta["skip"] else meta

    def fails(self, spec):
        self.calls += 1
        case_dir = os.path.join(self.workdir, spec["name"])
        if not self.build(spec, case_dir):
            return None
        proc = subprocess.run([self.runner, "--check", self.check] + self.extra + [case_dir], capture_output=True,
                              text=True)
        lines = [l for l in proc.stdout.splitlines() if l.startswith(f"FAIL {spec['name']} {self.check} ")]
        if self.want:
            lines = [l for l in lines if signature(l) == self.want]
        return lines[0] if lines else None


def without_op(spec, k):
    """The spec with op k removed: its users read its first operand."""
    spec = copy.deepcopy(spec)
    op = spec["ops"].pop(k)
    repl = op["in"][0]
    for o in spec["ops"]:
        o["in"] = [repl if r == op["id"] else r for r in o["in"]]
    if op["id"] in spec["outputs"]:
        if repl.startswith("x"):
            return None  # an output cannot be a graph input
        spec["outputs"] = [repl if r == op["id"] else r for r in spec["outputs"]]
        spec["outputs"] = list(dict.fromkeys(spec["outputs"]))
    return casebuild.prune(spec)


def candidates(spec):
    """Smaller variants of spec, most promising first."""
    for k in reversed(range(len(spec["ops"]))):
        c = without_op(spec, k)
        if c is not None:
            yield c
    for i, inp in enumerate(spec["inputs"]):
        # All dims at once first: keeps equalities such as C = H = W.
        if any(size > 1 for size in inp["shape"]):
            c = copy.deepcopy(spec)
            c["inputs"][i]["shape"] = [(size + 1) // 2 for size in inp["shape"]]
            yield c
        for d, size in enumerate(inp["shape"]):
            for new in sorted({1, (size + 1) // 2} - {size}, reverse=True):
                c = copy.deepcopy(spec)
                c["inputs"][i]["shape"][d] = new
                yield c


def minimize(spec, oracle, budget_seconds):
    first = oracle.fails(spec)
    if not first:
        return None, None
    oracle.want = signature(first)
    line = first
    m = re.match(r"FAIL \S+ \S+ (\S+):", first)
    if m and m.group(1) != "-" and m.group(1) in spec["outputs"] and len(spec["outputs"]) > 1:
        c = casebuild.prune(dict(copy.deepcopy(spec), outputs=[m.group(1)]))
        got = oracle.fails(c)
        if got:
            spec, line = c, got
    deadline = time.time() + budget_seconds
    progress = True
    while progress and time.time() < deadline:
        progress = False
        for c in candidates(spec):
            if time.time() > deadline:
                break
            got = oracle.fails(c)
            if got:
                spec, line, progress = c, got, True
                break
    return spec, line


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", required=True)
    ap.add_argument("--check", required=True, help="the failing check, as the runner names it")
    ap.add_argument("--runner", required=True)
    ap.add_argument("--out", required=True, help="the regressions directory")
    ap.add_argument("--budget", type=float, default=300, help="seconds to spend shrinking")
    ap.add_argument("--runner-arg", action="append", default=[])
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # the exporter's tracer notes
    with open(os.path.join(args.case, "spec.json")) as f:
        spec = json.load(f)
    work = tempfile.mkdtemp(prefix="difftest-min-")
    try:
        oracle = Oracle(os.path.abspath(args.runner), args.check, work, args.runner_arg)
        small, line = minimize(spec, oracle, args.budget)
        if small is None:
            print(f"minimize: {spec['name']}: {args.check} does not fail on the rebuilt case", file=sys.stderr)
            return 1
        name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{spec['name']}_{args.check}")
        small["name"] = name
        dest = os.path.join(args.out, name)
        meta = oracle.build(small, dest)
        meta["regression"] = {"check": args.check, "found_as": spec["name"], "failure": line}
        casebuild.CaseWriter._write_meta(dest, meta)
        print(f"minimize: {spec['name']} {args.check}: {len(spec['ops'])} -> {len(small['ops'])} ops, inputs "
              f"{[i['shape'] for i in small['inputs']]}, {oracle.calls} runs; wrote {dest}\n  {line}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
