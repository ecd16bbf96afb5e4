"""The CPU a command costs: its own and every process it starts, for the benchmarks.

rwb's Python workers are forked by a fork-server that lets the kernel reap them
(SIGCHLD ignored), so their CPU time reaches no parent's rusage when the server
outlives them: `getrusage(RUSAGE_CHILDREN)` counts a varying share of the workers.
A cgroup counts every process in it, reaped by whoever, so where this process may
make a cgroup v2 group (root in a container, a delegated subtree) each command runs in
one of its own, and its CPU is the group's `cpu.stat` usage. Elsewhere the meter
falls back to rusage, having made this process the subreaper of the command's
orphans (so a worker whose parent died is waited for, and counted, here), and says
that its figures count only the workers that were waited for.

    meter = CpuMeter()
    seconds, cpu, status = meter.run(["rwb", "run", ...], env=..., stdout=..., stderr=...)
    meter.close()
"""

import os
import resource
import subprocess
import time


def _cgroup2_root():
    """Where a cgroup v2 hierarchy is mounted, or None."""
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return parts[1]
    except OSError:
        pass
    return None


def _become_subreaper():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


class CpuMeter:
    def __init__(self, name="rwb-bench"):
        self.group = None
        root = _cgroup2_root()
        if root:
            group = os.path.join(root, f"{name}-{os.getpid()}")
            try:
                os.makedirs(group, exist_ok=True)
                self._usage(group)  # readable: the group counts CPU
                self.group = group
            except OSError:
                try:
                    os.rmdir(group)
                except OSError:
                    pass
        self.subreaper = self.group is None and _become_subreaper()

    def describe(self):
        if self.group:
            return "cpu: every process of the run, counted by its cgroup"
        if self.subreaper:
            return ("cpu: rusage of the run and the workers waited for (no cgroup here: "
                    "workers reaped by the kernel are not counted)")
        return "cpu: rusage of the run and the children it waited for (no cgroup, no subreaper)"

    @staticmethod
    def _usage(group):
        with open(os.path.join(group, "cpu.stat")) as f:
            for line in f:
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
        raise OSError("no usage_usec in cpu.stat")

    def _join(self):
        # in the child, before exec: the command and all it starts are in the group
        with open(os.path.join(self.group, "cgroup.procs"), "w") as f:
            f.write("0")

    def _drain(self, timeout=10.0):
        """Waits until every process of the run has ended (its CPU is then counted)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.group:
                with open(os.path.join(self.group, "cgroup.events")) as f:
                    if "populated 0" in f.read():
                        return
            else:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return
                if pid != 0:
                    continue
            time.sleep(0.005)

    def run(self, args, **popen):
        """Runs `args` to its end: (elapsed seconds, CPU seconds, exit code)."""
        if self.group:
            before = self._usage(self.group)
            popen["preexec_fn"] = self._join
        else:
            rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
            before = rusage.ru_utime + rusage.ru_stime
        started = time.perf_counter()
        child = subprocess.Popen(args, **popen)
        code = child.wait()
        elapsed = time.perf_counter() - started
        self._drain()
        if self.group:
            cpu = self._usage(self.group) - before
        else:
            rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = rusage.ru_utime + rusage.ru_stime - before
        return elapsed, cpu, code

    def close(self):
        if self.group:
            try:
                os.rmdir(self.group)
            except OSError:
                pass


def median_interval(ratios):
    """A distribution-free interval for the median of `ratios` (order statistics of
    the binomial(n, 1/2)): its bounds and their confidence, or None below 6 values."""
    from math import comb

    n = len(ratios)
    if n < 6:
        return None
    r = sorted(ratios)
    best = None
    for k in range(1, n // 2 + 1):
        # P(r_k <= median <= r_{n-k+1}) = 1 - 2 * P(Binomial(n, 1/2) < k)
        confidence = 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n
        if confidence >= 0.9:
            best = (r[k - 1], r[n - k], confidence)
    return best
