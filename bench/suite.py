"""Suite: both test tiers timed from a fresh clone of the committed code, as CI runs them.

``./dev test`` runs the quick tier (every test not marked e2e or slow); ``./dev test --all`` the full tier
(what CI runs). Each goes in its own fresh clone in a temporary directory; its set-up (the venv through uv,
the pinned CDK CLI through npm) is part of the wall time, with the machine's package caches as CI finds them.
Besides the wall time and pytest's own time, the CPU the run used (user and system seconds of every process it
started and waited for: pytest's workers, the moto servers, the CDK toolkit's node processes, the early runs):
on this machine's cores it is the floor under the tier's time, whatever the scheduling. After the full tier,
its early runs (tests/conftest.py's ``EARLY_RUNS``) run again in the same clone, all at once as the session
starts them, each one's CPU counted, to show their share of it.

Then the loaded run: the full tier several times in a row, each from its own fresh clone, while a burner (``BURN``,
a pure-Python busy loop in a child process) keeps one core busy, to show that the tier passes within its target at
load, never flaking. Each run's CPU is its own processes' (the burner is reaped only after the last run); the
burner's CPU during each run and the 1-minute load average before and after it are recorded beside it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

from .common import ROOT, log

TIERS = {"quick": ("./dev", "test"), "full": ("./dev", "test", "--all")}
TARGETS_S = {"quick": 120, "full": 480}  # pytest's own seconds, on a machine where common.LOOP takes LOOP_REFERENCE_S


def run_tier(tier: str, paths: tuple[str, ...] = (), time_early_runs: bool = True) -> dict:
    """One tier from a fresh clone (``paths``: run only those, a smoke of this code path); after the full tier,
    its early runs run again unless ``time_early_runs`` is false."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "clone", "--quiet", str(ROOT), clone], check=True)
        start, cpu = time.monotonic(), _children_cpu()
        done = subprocess.run([*TIERS[tier], "-q", "-p", "no:cacheprovider", "--durations=0", "--durations-min=0.05",
                               *paths], cwd=clone, capture_output=True, text=True, env={**os.environ, "CI": "true"},
                              stdin=subprocess.DEVNULL)
        seconds, cpu_seconds = time.monotonic() - start, _children_cpu() - cpu
        lines = done.stdout.strip().splitlines()
        summary = (lines[-1:] or [""])[0]
        pytest_seconds = re.search(r" in ([0-9.]+)s", summary)
        out = {"seconds": seconds, "passed": done.returncode == 0,
               "summary": summary[-200:], "failures": [line[:300] for line in lines if line.startswith(("FAILED ", "ERROR "))],
               "pytest_seconds": float(pytest_seconds[1]) if pytest_seconds else None,
               "slowest_modules": slowest_modules(lines), "cpu_seconds": cpu_seconds, "cores": os.cpu_count()}
        if tier == "full" and not paths and time_early_runs:
            out["early_runs"] = early_runs_cpu(clone)
        return out


def _children_cpu() -> float:
    """User and system CPU seconds of this process's children that have ended (and theirs, waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def early_runs_cpu(clone: str) -> list[dict]:
    """Each of the clone's early runs, started together as the test session starts them: its CPU seconds (its
    processes' user and system time) and its exit code."""
    script = ("import json, os, subprocess, sys\n"
              "sys.path.insert(0, 'tests')\n"
              "from conftest import EARLY_RUNS\n"
              "procs = [(run.name, subprocess.Popen(run.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))"
              " for run in EARLY_RUNS]\n"
              "out = []\n"
              "for name, proc in procs:\n"
              "    _, status, usage = os.wait4(proc.pid, 0)\n"
              "    out.append({'name': name, 'cpu_seconds': usage.ru_utime + usage.ru_stime, 'exit': status >> 8})\n"
              "print(json.dumps(out))\n")
    done = subprocess.run([os.path.join(clone, ".venv", "bin", "python"), "-c", script], cwd=clone, capture_output=True,
                          text=True, env={**os.environ, "CI": "true", "PYTHONPATH": os.pathsep.join(
                              [os.path.join(clone, "src"), os.path.join(clone, "lambda")])}, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        log(f"  early runs could not be timed: {done.stderr.strip()[-300:]}")
        return []
    return json.loads(done.stdout.strip().splitlines()[-1])


DURATION = re.compile(r"^([0-9.]+)s (setup|call|teardown) +([^:\s]+)::")


def slowest_modules(lines: list[str], count: int = 10) -> list[tuple[str, float]]:
    """The ``count`` modules with the most test time (setup, call and teardown, summed over both workers'
    share of them), from pytest's ``--durations`` lines."""
    per_module: dict[str, float] = defaultdict(float)
    for line in lines:
        match = DURATION.match(line)
        if match:
            per_module[match[3]] += float(match[1])
    return sorted(per_module.items(), key=lambda item: -item[1])[:count]


BURN = ("import os\n"
        "parent = os.getppid()\n"
        "while os.getppid() == parent:\n"
        "    for _ in range(1_000_000):\n"
        "        pass\n")
"""The burner's program: a pure-Python busy loop that spins one core. Every million iterations it checks that the
process that started it still runs, so that it ends by itself if the benchmark dies without stopping it."""


class Burner:
    """A child process running ``BURN`` for the duration of a ``with`` block: killed and reaped when the block ends,
    however it ends (an error, Ctrl-C)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.total_cpu_seconds: float | None = None  # its CPU in all, once reaped

    def __enter__(self) -> "Burner":
        self.process = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def cpu_seconds(self) -> float:
        """Its user and system CPU seconds so far (from /proc while it runs)."""
        if self.total_cpu_seconds is not None:
            return self.total_cpu_seconds
        assert self.process is not None, "the burner runs only inside its with block"
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)  # not Popen.kill, which may reap it first and lose its CPU figure
        _, status, usage = os.wait4(self.process.pid, 0)  # reaped here, so that its CPU is known exactly
        self.process.returncode = os.waitstatus_to_exitcode(status)
        self.total_cpu_seconds = usage.ru_utime + usage.ru_stime


def failure_name(line: str) -> str:
    """The test a ``FAILED``/``ERROR`` line of pytest's summary names, without its message."""
    return line.split(" ", 1)[-1].split(" - ", 1)[0]


def run_loaded(runs: int, paths: tuple[str, ...] = (), tier_run: Callable[..., dict] = run_tier,
               burner: Callable[[], Burner] = Burner) -> dict:
    """The full tier ``runs`` times in a row, each from its own fresh clone (``tier_run``), beside a ``burner``
    started before the first and stopped after the last, whatever happens between."""
    out = []
    with burner() as burning:
        for r in range(runs):
            log(f"suite, loaded {r + 1}/{runs}: {' '.join(TIERS['full'])} from a fresh clone beside a CPU burner")
            load_before, burned = os.getloadavg()[0], burning.cpu_seconds()
            res = tier_run("full", paths, time_early_runs=False)
            out.append({"passed": res["passed"], "pytest_seconds": res["pytest_seconds"], "seconds": res["seconds"],
                        "cpu_seconds": res["cpu_seconds"], "failures": [failure_name(f) for f in res["failures"]],
                        "summary": res["summary"], "load_before": load_before, "load_after": os.getloadavg()[0],
                        "burner_cpu_seconds": burning.cpu_seconds() - burned})
            _log_result(res)
    return {"runs": out, "burner_cpu_seconds": burning.cpu_seconds(), "cores": os.cpu_count()}


def _log_result(res: dict) -> None:
    log(f"  {res['seconds']:.0f} s, {'passed' if res['passed'] else 'FAILED'}: {res['summary']}")
    for failure in res["failures"]:
        log(f"    {failure}")


def run(repeats: int, paths: tuple[str, ...] = (), loaded: int = 0) -> dict:
    """Both tiers ``repeats`` times, then the full tier ``loaded`` times in a row beside a CPU burner."""
    runs = []
    for r in range(repeats):
        run: dict = {}
        for tier in TIERS:
            log(f"suite {r + 1}/{repeats}: {' '.join(TIERS[tier])} from a fresh clone")
            res = run_tier(tier, tuple(paths))
            _log_result(res)
            run[tier] = res
        runs.append(run)
    out = {"runs": runs, "targets_s": TARGETS_S}
    if loaded:
        out["loaded"] = run_loaded(loaded, tuple(paths))
    return out
