"""A one-node Slurm cluster on localhost for the tests (docs/testing.md, label `slurm`).

Starts munged, slurmctld and slurmd as the current user with their own
config, munge key and socket, state and spool directories under `root`,
on free ports; `stop()` ends them (the context manager does so even when
the test fails). Runs in a container: processes are tracked with
proctrack/linuxproc and tasks are not confined (no cgroups).

    with SlurmCluster(root) as cluster:
        subprocess.run(["sbatch", script], env=cluster.env)
"""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")


def missing_binaries():
    """The Slurm and munge programs this machine lacks (empty when it can run a cluster)."""
    return [name for name in DAEMONS + CLIENTS if not _which(name)]


def _which(name):
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmError(RuntimeError):
    pass


class SlurmCluster:
    def __init__(self, root, cpus=2, node="ember1"):
        self.root = os.path.abspath(root)
        self.cpus = cpus
        self.node = node
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.conf = os.path.join(self.root, "slurm.conf")
        self.munge_socket = os.path.join(self.root, "munge", "munge.socket")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"
        self._pid_files = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def start(self):
        if os.path.exists(self.root):
            self._stop_leftovers()
            shutil.rmtree(self.root)
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(self.path(d), mode=0o700)
        key = self.path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._start_munge(key)
        self._write_config()
        self._run_daemon("slurmctld", ["-f", self.conf, "-L", self.path("log", "slurmctld.log")],
                         self.path("slurmctld.pid"))
        self._run_daemon("slurmd", ["-f", self.conf, "-N", self.node, "-L", self.path("log", "slurmd.log")],
                         self.path("slurmd.pid"))
        self._wait_for_idle_node(timeout=30)

    def _start_munge(self, key):
        pid_file = self.path("munge", "munged.pid")
        self._pid_files.append(pid_file)
        cmd = [_which("munged"), "--force", "--key-file=" + key, "--socket=" + self.munge_socket,
               "--pid-file=" + pid_file, "--log-file=" + self.path("log", "munged.log"),
               "--seed-file=" + self.path("munge", "munged.seed")]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise SlurmError("munged did not start: " + (result.stderr or result.stdout).strip())

    def _write_config(self):
        ctld_port, slurmd_port = _free_port(), _free_port()
        while slurmd_port == ctld_port:
            slurmd_port = _free_port()
        lines = [
            "# Written by tests/slurm/slurm_cluster.py: a one-node test cluster.",
            "ClusterName=ember-test",
            "SlurmctldHost=%s(127.0.0.1)" % socket.gethostname(),
            "SlurmctldPort=%d" % ctld_port,
            "SlurmdPort=%d" % slurmd_port,
            "SlurmUser=%s" % self.user,
            "SlurmdUser=%s" % self.user,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s" % self.path("state"),
            "SlurmdSpoolDir=%s" % self.path("spool"),
            "SlurmctldPidFile=%s" % self.path("slurmctld.pid"),
            "SlurmdPidFile=%s" % self.path("slurmd.pid"),
            # A container: no cgroups, processes found through /proc.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            # Finished jobs stay visible to scontrol for an hour (no slurmdbd here).
            "MinJobAge=3600",
            "KillWait=2",
            "InactiveLimit=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=1024 State=UNKNOWN"
            % (self.node, socket.gethostname(), self.cpus),
            "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.node,
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _run_daemon(self, name, args, pid_file):
        self._pid_files.append(pid_file)
        result = subprocess.run([_which(name)] + args, capture_output=True, text=True, env=self.env)
        if result.returncode != 0:
            raise SlurmError("%s did not start (exit %d): %s\n%s" % (
                name, result.returncode, (result.stderr or result.stdout).strip(), self.log_tail(name)))

    def log_tail(self, name, lines=15):
        path = self.path("log", name + ".log")
        if not os.path.exists(path):
            return "(no %s)" % path
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def _wait_for_idle_node(self, timeout):
        deadline = time.time() + timeout
        state = ""
        while time.time() < deadline:
            result = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False)
            state = result.stdout.strip()
            if result.returncode == 0 and state.startswith("idle"):
                return
            time.sleep(0.5)
        raise SlurmError("node %s not idle after %d s (sinfo: %r)\nslurmctld.log:\n%s\nslurmd.log:\n%s" % (
            self.node, timeout, state, self.log_tail("slurmctld"), self.log_tail("slurmd")))

    def run(self, argv, check=True, env=None):
        result = subprocess.run(argv, capture_output=True, text=True, env=env or self.env)
        if check and result.returncode != 0:
            raise SlurmError("%s failed (exit %d): %s" % (" ".join(argv), result.returncode,
                                                          (result.stderr or result.stdout).strip()))
        return result

    def _stop_leftovers(self):
        """Ends daemons of an earlier run in this directory that was killed before its stop():
        only a process whose command line is that daemon with this cluster's files."""
        for pid_file in (self.path("slurmd.pid"), self.path("slurmctld.pid"), self.path("munge", "munged.pid")):
            pid = _read_pid(pid_file)
            if pid is None:
                continue
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            daemon = os.path.basename(pid_file).split(".")[0]
            if os.path.basename(argv[0]) == daemon and any(self.root in arg for arg in argv):
                self._pid_files = [pid_file]
                self.stop()

    def stop(self):
        """Ends the daemons this cluster started (slurmd first), by their pid files."""
        for pid_file in reversed(self._pid_files):
            pid = _read_pid(pid_file)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                if not _alive(pid):
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._pid_files = []


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as ended.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
