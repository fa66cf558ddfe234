"""Suite: both test tiers timed from a fresh clone of the committed code, as CI runs them.

``./dev test`` runs the quick tier (every test not marked e2e or slow); ``./dev test --all`` the full tier
(what CI runs). Each goes in its own fresh clone in a temporary directory; its set-up (the venv through uv,
the pinned CDK CLI through npm) is part of the wall time, with the machine's package caches as CI finds them.
Besides the wall time and pytest's own time, the CPU the run used (user and system seconds of every process it
started and waited for: pytest's workers, the moto servers, the CDK toolkit's node processes, the early runs):
on this machine's cores it is the floor under the tier's time, whatever the scheduling. After the full tier,
its early runs (tests/conftest.py's ``EARLY_RUNS``) run again in the same clone, all at once as the session
starts them, each one's CPU counted, to show their share of it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import tempfile
import time
from collections import defaultdict

from .common import ROOT, log

TIERS = {"quick": ("./dev", "test"), "full": ("./dev", "test", "--all")}
TARGETS_S = {"quick": 120, "full": 480}  # pytest's own seconds, on a machine where common.LOOP takes LOOP_REFERENCE_S


def run_tier(tier: str, paths: tuple[str, ...] = ()) -> dict:
    """One tier from a fresh clone (``paths``: run only those, a smoke of this code path)."""
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
        if tier == "full" and not paths:
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


def run(repeats: int, paths: tuple[str, ...] = ()) -> dict:
    runs = []
    for r in range(repeats):
        run: dict = {}
        for tier in TIERS:
            log(f"suite {r + 1}/{repeats}: {' '.join(TIERS[tier])} from a fresh clone")
            res = run_tier(tier, tuple(paths))
            log(f"  {res['seconds']:.0f} s, {'passed' if res['passed'] else 'FAILED'}: {res['summary']}")
            for failure in res["failures"]:
                log(f"    {failure}")
            run[tier] = res
        runs.append(run)
    return {"runs": runs, "targets_s": TARGETS_S}
