"""Synth: ``cdk synth`` of the example app (integ/app.py) as a ratio to a single-Lambda app.

Both go through the same pinned aws-cdk CLI (integ/node_modules) with the same
Python, into throw-away output directories, so the ratio compares the apps only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from .common import ROOT, log, spread

CLI = ROOT / "integ" / "node_modules" / ".bin" / "cdk"
EXAMPLE = ROOT / "integ" / "app.py"
BASELINE = ROOT / "bench" / "baseline_app.py"


def _synth(app_file, cwd) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as out:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "integ")]),
               "CDK_DISABLE_CLI_TELEMETRY": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
        cmd = [str(CLI), "synth", "--quiet", "--no-version-reporting", "--no-notices",
               "--app", f"{sys.executable} {app_file}", "--output", out]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"cdk synth of {app_file} failed: {proc.stderr[-800:]}")
        return elapsed


def run(repeats: int) -> dict:
    if not EXAMPLE.is_file():
        log("synth: integ/app.py does not exist yet: not measured")
        return {"measured": False, "reason": "integ/app.py does not exist yet"}
    if not CLI.exists():
        log("synth: the pinned CDK CLI is not installed (run ./dev test once): not measured")
        return {"measured": False, "reason": "integ/node_modules/.bin/cdk is missing (./dev test installs it)"}
    try:
        _synth(BASELINE, ROOT / "bench")  # warm-up: node, jsii and the page cache
        example, baseline = [], []
        for r in range(repeats):
            baseline.append(_synth(BASELINE, ROOT / "bench"))
            example.append(_synth(EXAMPLE, ROOT / "integ"))
            log(f"synth {r + 1}/{repeats}: example {example[-1]:.1f} s, single function {baseline[-1]:.1f} s")
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        log(f"synth failed: {exc}")
        return {"measured": False, "reason": str(exc)[:500]}
    ratios = [e / b for e, b in zip(example, baseline)]
    return {"measured": True, "example_s": spread(example), "baseline_s": spread(baseline), "ratio": spread(ratios)}
