"""Suite: ``./dev test`` timed from a fresh clone of the committed code, as CI runs it.

The clone goes to a temporary directory; its set-up (the venv through uv, the pinned CDK CLI
through npm) is part of the time, with the machine's package caches as CI finds them.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections import defaultdict

from .common import ROOT, log, spread


def run_once() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "clone", "--quiet", str(ROOT), clone], check=True)
        start = time.monotonic()
        done = subprocess.run(["./dev", "test", "-q", "-p", "no:cacheprovider", "--durations=0", "--durations-min=0.05"],
                              cwd=clone, capture_output=True, text=True, env={**os.environ, "CI": "true"},
                              stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        lines = done.stdout.strip().splitlines()
        failures = [line[:300] for line in lines if line.startswith(("FAILED ", "ERROR "))]
        summary = (lines[-1:] or [""])[0]
        pytest_seconds = re.search(r" in ([0-9.]+)s", summary)
        return {"seconds": seconds, "passed": done.returncode == 0, "summary": summary[-200:], "failures": failures,
                "pytest_seconds": float(pytest_seconds[1]) if pytest_seconds else None,
                "slowest_modules": slowest_modules(lines)}


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


def run(repeats: int) -> dict:
    runs = []
    for r in range(repeats):
        log(f"suite {r + 1}/{repeats}: ./dev test from a fresh clone")
        res = run_once()
        log(f"  {res['seconds']:.0f} s, {'passed' if res['passed'] else 'FAILED'}: {res['summary']}")
        for failure in res["failures"]:
            log(f"    {failure}")
        runs.append(res)
    return {"runs": runs, "seconds": spread([r["seconds"] for r in runs])}
