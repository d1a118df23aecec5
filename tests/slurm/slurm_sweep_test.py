#!/usr/bin/env python3
"""The quick co-design sweep as a real Slurm job array (docs/codesign.md, label `slurm`).

Runs examples/codesign/quick.yaml on the local pool, then on a one-node
Slurm cluster started here (tests/slurm/slurm_cluster.py):

1. `ember sweep --emit-slurm --partition --time --mem` writes sweep.slurm with
   those #SBATCH lines; `sbatch` runs it with EMBER set to a wrapper that makes
   task 1 fail (exit 3) and task 2 hang until the test `scancel`s it.
2. `--report-only` shows tasks 1 and 2 failed with their Slurm states
   (FAILED, CANCELLED); `--resume` resubmits exactly those two.
3. After the second array, results.csv equals the local run's on every
   deterministic column, and report.html and the plots are byte-identical.

Exit 77 (CTest's skip) only when the Slurm or munge programs are absent.
"""

import argparse
import csv
import filecmp
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slurm_cluster  # noqa: E402

# Columns that measure wall time on the host (vary run to run) or name the
# Slurm task (absent locally); every other column must be equal.
NONDETERMINISTIC = {"wall_seconds", "compile_seconds", "run_seconds", "host_seconds", "slurm_job", "slurm_state"}


def run(argv, env=None, expect=0):
    result = subprocess.run(argv, capture_output=True, text=True, env=env)
    if expect is not None and result.returncode != expect:
        sys.exit("FAIL: %s exited %d (expected %d)\n%s%s" % (" ".join(argv), result.returncode, expect,
                                                             result.stdout, result.stderr))
    return result


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def points_not_ok(out):
    """What each point not finished ok left behind, for a failure message."""
    lines = []
    points = os.path.join(out, "points")
    for name in sorted(os.listdir(points)) if os.path.isdir(points) else []:
        json_path = os.path.join(points, name, "point.json")
        text = open(json_path).read() if os.path.exists(json_path) else "(no point.json)"
        if '"status": "ok"' in text or '"status":"ok"' in text:
            continue
        log_path = os.path.join(points, name, "log.txt")
        log = open(log_path).read()[-2000:] if os.path.exists(log_path) else "(no log.txt)"
        lines.append("point %s: %s\nlog: %s" % (name, text[:2000], log))
    slurm_dir = os.path.join(out, "slurm")
    for name in sorted(os.listdir(slurm_dir)) if os.path.isdir(slurm_dir) else []:
        if name.endswith(".out") or name.endswith(".err") or name.endswith(".log"):
            with open(os.path.join(slurm_dir, name), errors="replace") as f:
                lines.append("%s: %s" % (name, f.read()[-1500:]))
    return "\n".join(lines)


def wait_until_gone(cluster, job, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        result = cluster.run(["squeue", "-h", "-j", str(job), "-o", "%i %T"], check=False)
        if result.returncode == 0 and not result.stdout.strip():
            return
        time.sleep(0.5)
    sys.exit("FAIL: array job %s still in squeue after %d s:\n%s\nslurmd.log:\n%s" % (
        job, timeout, result.stdout, cluster.log_tail("slurmd")))


def wait_for_state(cluster, task, state, timeout=120):
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        seen = cluster.run(["squeue", "-h", "-j", task, "-o", "%T"], check=False).stdout.strip()
        if seen == state:
            return
        time.sleep(0.2)
    sys.exit("FAIL: task %s not %s after %d s (squeue: %r)" % (task, state, timeout, seen))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ember", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--work", required=True, help="scratch directory (cluster state, sweeps)")
    args = parser.parse_args()

    missing = slurm_cluster.missing_binaries()
    if missing:
        print("SKIP: Slurm/munge programs absent (%s); scripts/install-deps.sh installs slurmctld, slurmd, "
              "slurm-client and munge" % ", ".join(missing))
        return 77

    work = os.path.abspath(args.work)
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    ember = os.path.abspath(args.ember)
    started = time.time()
    local = os.path.join(work, "local")
    run([ember, "sweep", args.spec, "-o", local, "-j", "2"])
    local_seconds = time.time() - started

    out = os.path.join(work, "slurm")
    sweep = [ember, "sweep", args.spec, "-o", out]
    options = ["--partition", "debug", "--time", "10", "--mem", "200M"]
    run(sweep + ["--emit-slurm"] + options)
    with open(os.path.join(out, "sweep.slurm")) as f:
        script = f.read()
    for line in ("#SBATCH --array=0-3", "#SBATCH --partition=debug", "#SBATCH --time=10", "#SBATCH --mem=200M"):
        check(line + "\n" in script, "sweep.slurm lacks %r:\n%s" % (line, script))

    # The wrapper stands in for a broken node (task 1) and a hung point (task 2).
    wrapper = os.path.join(work, "ember-wrapper.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/bash\ncase \"$SLURM_ARRAY_TASK_ID\" in\n"
                "  1) echo 'simulated node failure' >&2; exit 3 ;;\n"
                "  2) sleep 600 ;;\nesac\nexec %s \"$@\"\n" % ember)
    os.chmod(wrapper, 0o755)

    with slurm_cluster.SlurmCluster(os.path.join(work, "cluster")) as cluster:
        cluster_up = time.time()
        env = dict(cluster.env, EMBER=wrapper)
        job = cluster.run(["sbatch", "--parsable", os.path.join(out, "sweep.slurm")], env=env).stdout.strip()
        job = job.split(";")[0]
        wait_for_state(cluster, job + "_2", "RUNNING")
        cluster.run(["scancel", job + "_2"])
        wait_until_gone(cluster, job)

        result = run(sweep + ["--report-only"], env=cluster.env, expect=1)
        rows = {int(r["index"]): r for r in read_csv(os.path.join(out, "results.csv"))}
        expected = {0: ("ok", "COMPLETED"), 1: ("failed", "FAILED"), 2: ("failed", "CANCELLED"),
                    3: ("ok", "COMPLETED")}
        for index, (status, state) in expected.items():
            row = rows[index]
            check(row["status"] == status and row["slurm_state"] == state,
                  "point %d: status %r, slurm_state %r (expected %s, %s)" % (
                      index, row["status"], row["slurm_state"], status, state))
            check(row["slurm_job"] == "%s_%d" % (job, index), "point %d: slurm_job %r" % (index, row["slurm_job"]))
        check(rows[2]["error"].startswith("Slurm CANCELLED (job %s_2)" % job), "point 2 error: " + rows[2]["error"])

        # --resume resubmits exactly the failed points, with the real tool.
        env = dict(cluster.env, EMBER=ember)
        result = run(sweep + ["--resume"] + options, env=env)
        match = re.search(r"submitted 2 as array job (\d+) \(--array=1-2\)", result.stdout)
        check(match, "--resume did not resubmit points 1-2:\n" + result.stdout)
        resumed = match.group(1)
        wait_until_gone(cluster, resumed)
        result = run(sweep + ["--resume"] + options, env=env)
        check("nothing to submit" in result.stdout,
              "a second --resume submitted again:\n" + result.stdout + points_not_ok(out))
        run(sweep + ["--report-only"], env=cluster.env)
        slurm_seconds = time.time() - cluster_up

    local_rows, slurm_rows = read_csv(os.path.join(local, "results.csv")), read_csv(os.path.join(out, "results.csv"))
    check(len(local_rows) == len(slurm_rows) == 4, "row counts %d, %d" % (len(local_rows), len(slurm_rows)))
    check(list(local_rows[0].keys()) == list(slurm_rows[0].keys()), "the CSV headers differ")
    compared = [c for c in local_rows[0].keys() if c not in NONDETERMINISTIC]
    for local_row, slurm_row in zip(local_rows, slurm_rows):
        for column in compared:
            check(local_row[column] == slurm_row[column], "point %s, column %s: local %r, Slurm %r" % (
                local_row["index"], column, local_row[column], slurm_row[column]))
        check(slurm_row["slurm_state"] == "COMPLETED", "point %s: %s" % (slurm_row["index"], slurm_row["slurm_state"]))
        check(local_row["slurm_state"] == "" and local_row["slurm_job"] == "", "a local row names a Slurm job")
    check(all(r["status"] == "ok" and r["cycles"] for r in slurm_rows), "not every point ran")
    expected_jobs = {0: job, 1: resumed, 2: resumed, 3: job}
    for r in slurm_rows:
        check(r["slurm_job"] == "%s_%s" % (expected_jobs[int(r["index"])], r["index"]), "slurm_job " + r["slurm_job"])

    identical = ["report.html"] + ["plots/" + name for name in sorted(os.listdir(os.path.join(local, "plots")))]
    identical += ["points/%s/report.html" % r["id"] for r in local_rows]
    for name in identical:
        check(filecmp.cmp(os.path.join(local, name), os.path.join(out, name), shallow=False),
              "%s differs between the local and the Slurm run" % name)
    print("PASS: %d points on Slurm (array %s, one task failed and one cancelled, resumed as array %s); "
          "results.csv equal on %d columns (%s ignored), %d files byte-identical; local run %.1f s, "
          "cluster up to done %.1f s" % (len(slurm_rows), job, resumed, len(compared),
                                         ", ".join(sorted(NONDETERMINISTIC)), len(identical), local_seconds,
                                         slurm_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
