"""Suite: ``./dev test`` timed from a fresh clone of the committed code, as CI runs it.

The clone goes to a temporary directory; its set-up (the venv through uv, the pinned CDK CLI
through npm) is part of the time, with the machine's package caches as CI finds them.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time

from .common import ROOT, log, spread


def run_once() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "clone", "--quiet", str(ROOT), clone], check=True)
        start = time.monotonic()
        done = subprocess.run(["./dev", "test", "-q", "-p", "no:cacheprovider"], cwd=clone, capture_output=True, text=True,
                              env={**os.environ, "CI": "true"}, stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        lines = done.stdout.strip().splitlines()
        failures = [line[:300] for line in lines if line.startswith(("FAILED ", "ERROR "))]
        return {"seconds": seconds, "passed": done.returncode == 0, "summary": (lines[-1:] or [""])[0][-200:],
                "failures": failures}


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
