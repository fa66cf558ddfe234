"""Cold start: the import time of each handler module, in a fresh interpreter, ``-X importtime``."""

from __future__ import annotations

import os
import subprocess
import sys

from .common import ROOT, log, spread

HANDLERS = ("api", "sweeper", "enqueuer", "dispatcher")


def import_ms(module: str) -> tuple[float, list]:
    """Cumulative import time of ``module`` (ms) and its five heaviest imports."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lambda"), "PYTHONDONTWRITEBYTECODE": "0"}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, env=env, cwd=str(ROOT), check=True,
    )
    total = 0.0
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        parts = line[len("import time:"):].split("|")
        cumulative_us, raw_name = int(parts[1]), parts[2].rstrip()
        name = raw_name.strip()
        depth = (len(raw_name) - len(raw_name.lstrip()) - 1) // 2
        rows.append((cumulative_us, name, depth))
        if name == module:
            total = cumulative_us / 1000
    # the heaviest imports directly under the handler's package tree, third-party or stdlib
    top, seen = [], set()
    for us, name, _ in sorted(rows, reverse=True):
        package = name.split(".")[0]
        if package == "scheduler_runtime" or package in seen:
            continue
        seen.add(package)
        top.append((name, us / 1000))
    return total, top[:5]


def run(repeats: int) -> dict:
    out: dict = {"repeats": repeats, "handlers": {}}
    for h in HANDLERS:
        module = f"scheduler_runtime.handlers.{h}"
        import_ms(module)  # warm the bytecode cache and the page cache: we measure imports, not compiles
        values, heavy = [], []
        for _ in range(repeats):
            ms, heavy = import_ms(module)
            values.append(ms)
        out["handlers"][h] = {**spread(values), "heaviest_top_level_imports_ms": heavy}
        log(f"cold start {h}: median {out['handlers'][h]['median']:.0f} ms")
    return out
