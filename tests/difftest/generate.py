#!/usr/bin/python3
"""Differential tester, generation step (docs/testing.md, "Differential
random-model tester").

    generate.py --seed S --count N --out DIR      N random cases into DIR/<name>/
    generate.py --spec SPEC.json --out CASE_DIR   one case from a spec

Prints one line per batch: generated, skipped (ill-conditioned) and why,
and the seconds it took. Run with /usr/bin/python3 (numpy, onnx, torch)
and onnxruntime-node in $EMBER_NODE_DIR (default /opt/ember/node).
"""

import argparse
import collections
import json
import os
import shutil
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import casebuild  # noqa: E402
import ops  # noqa: E402
import specgen  # noqa: E402


def generate_batch(seed, count, out_dir, builder=None):
    os.makedirs(out_dir, exist_ok=True)
    work = casebuild.new_workdir()
    writer = casebuild.CaseWriter(work)
    written, rejected = [], collections.Counter()
    s = seed * 100000
    attempts = 0
    while len(written) < count and attempts < count * 20:
        attempts += 1
        spec = specgen.generate_spec(s, builder)
        s += 1
        case_dir = os.path.join(out_dir, spec["name"])
        ok = writer.write(spec, case_dir)
        if ok is True:
            written.append(spec["name"])
        else:
            rejected[ok if isinstance(ok, str) else "invalid spec"] += 1
    summary = writer.finish()
    shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(out_dir, "cases.txt"), "w") as f:
        f.write("\n".join(written) + "\n")
    return summary, rejected


def main():
    warnings.filterwarnings("ignore")  # the exporter's notes on constant folding
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--builder", choices=["torch", "onnx"], help="only this builder (default: alternate)")
    ap.add_argument("--spec", help="build this one spec instead of random ones")
    ap.add_argument("--out", required=True)
    ap.add_argument("--with-known-bugs", action="store_true",
                    help="also draw the op variants of known_wrong_answers.txt")
    ap.add_argument("--draw", action="append", default=[], metavar="OP",
                    help="also draw OP, an op of weight 0 that is not drawn by default (conv_bn_relu)")
    args = ap.parse_args()
    for name in args.draw:
        specgen.OPS[name].weight = 1.0
    if args.with_known_bugs:
        ops.KNOWN_WRONG.clear()
    start = time.time()
    if args.spec:
        with open(args.spec) as f:
            spec = json.load(f)
        work = casebuild.new_workdir()
        writer = casebuild.CaseWriter(work)
        ok = writer.write(spec, args.out)
        if ok is not True:
            print(f"generate: {args.spec}: {ok if isinstance(ok, str) else 'the spec does not build'}",
                  file=sys.stderr)
            return 1
        summary = writer.finish()
        shutil.rmtree(work, ignore_errors=True)
        rejected = {}
    else:
        summary, rejected = generate_batch(args.seed, args.count, args.out, args.builder)
    skipped = [m for m in summary if m["skip"]]
    oracles = collections.Counter(m["oracle"] for m in summary)
    print(f"generated {len(summary)} cases ({', '.join(f'{v} {k}' for k, v in sorted(oracles.items()))}), "
          f"{len(skipped)} skipped as ill-conditioned, {time.time() - start:.1f} s")
    reasons = collections.Counter(m["reason"].split(":")[0] for m in skipped)
    for reason, n in reasons.most_common():
        print(f"  skipped {n}: {reason}")
    for reason, n in sorted(rejected.items()):
        if not reason.startswith("invalid"):
            print(f"  not generated {n}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
