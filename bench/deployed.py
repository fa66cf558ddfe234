"""Deployed on AWS: the figures of ``cdk-delayed-scheduler check --json`` run against a deployed stack.

    cdk-delayed-scheduler check --api-url <TimersApi output> --json > check.json
    ./dev bench --only deployed --check-report check.json

The only section whose figures come from AWS itself; every other one runs the local engine on moto. Nothing here
runs a check: the section stores what the given reports hold, one entry per run (a report of a run already stored
replaces its entry), and keeps the entries already in the JSON, so that a run without reports (a full
``./dev bench`` on a machine with no AWS account) loses none of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import log
from .fmt import num

REPORT_KEYS = ("ok", "run", "lateness", "timers", "periodic", "problems")
"""What a report of ``cdk-delayed-scheduler check --json`` (``CheckReport.to_json()``) holds that the section reads."""
ALL = "all"
"""The report's lateness row of every one-shot timer that must be delivered, whatever its path."""


def read(path: Path) -> dict[str, Any]:
    """The report in the file ``path``; ``ValueError`` naming ``--check-report`` and the file when it is not one."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--check-report {path}: {exc}") from None
    missing = [key for key in REPORT_KEYS if key not in report] if isinstance(report, dict) else list(REPORT_KEYS)
    if missing:
        raise ValueError(f"--check-report {path}: not a report of `cdk-delayed-scheduler check --json` (it has no "
                         f"{', '.join(missing)}; a --dry-run prints a plan, not a report)")
    return report


def entry(report: dict[str, Any]) -> dict[str, Any]:
    """What the section keeps of one report: its run, when its timers fell due and were delivered (the report holds
    no other time, and names no target, region or address), and per path the timers, the lateness (ms) and the
    problems counted; the periodic timer is a row of its own, before ``all``."""
    timers = report["timers"]
    due = sorted(t["dueAt"] for t in timers if t.get("dueAt"))
    fired = sorted(t["firedAt"] for t in timers if t.get("firedAt"))
    paths = [{"path": row["path"], "timers": row["timers"], "delivered": row["delivered"], "early": row["early"],
              "p50_ms": row["p50Ms"], "p99_ms": row["p99Ms"], "max_ms": row["maxMs"],
              "problems": sum(len(t["problems"]) for t in timers if row["path"] in (t["path"], ALL))}
             for row in report["lateness"]]
    periodic = report["periodic"]
    if periodic is not None:
        row = {"path": "periodic", "every_s": periodic["every"], "delivered": periodic["firedCount"],
               "last_ms": periodic["lastLatenessMs"], "problems": len(periodic["problems"])}
        paths = [*(p for p in paths if p["path"] != ALL), row, *(p for p in paths if p["path"] == ALL)]
    return {"run": report["run"], "group": report.get("group"), "ok": report["ok"], "setup_error": report.get("setupError"),
            "first_due_utc": due[0] if due else None, "last_fired_utc": fired[-1] if fired else None,
            "problems": len(report["problems"]), "paths": paths}


def run(reports: list[dict[str, Any]] | None = None, kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """The section: the entries of ``kept`` (what the JSON held), with one for each report, in the order the runs
    fell due."""
    new = [entry(report) for report in reports or []]
    fresh = {e["run"] for e in new}
    runs = [e for e in (kept or {}).get("runs", []) if e["run"] not in fresh] + new
    runs.sort(key=lambda e: e["first_due_utc"] or "")
    log(f"deployed: {len(new)} check report(s) added, {len(runs)} run(s) recorded")
    return {"runs": runs}


# --- what docs/benchmarks.md shows ---------------------------------------------------------------------------------

def figures(data: dict) -> dict:
    """The section's figures: a table per recorded run, or the commands that record one; a summary row only when a
    run is recorded."""
    runs = (data.get("deployed") or {}).get("runs") or []
    if not runs:
        return {"runs": {"part": "empty"}, "summary_row": None}
    latest = runs[-1]
    everything = next((p for p in latest["paths"] if p["path"] == ALL), None)
    return {"runs": [_run(e) for e in runs],
            "summary_row": {"part": "summary_row", "run": latest["run"], "verdict": _verdict(latest),
                            "delivered": num(everything["delivered"] if everything else None),
                            "lateness": " / ".join(num(everything[k] if everything else None)
                                                   for k in ("p50_ms", "p99_ms", "max_ms"))}}


def _run(e: dict) -> dict:
    return {"part": "run", "run": e["run"], "group": e["group"] or "n/a", "first_due": e["first_due_utc"] or "n/a",
            "last_fired": e["last_fired_utc"] or "n/a", "verdict": _verdict(e), "rows": [_row(p) for p in e["paths"]]}


def _row(p: dict) -> list[str]:
    if p["path"] == "periodic":
        last = "" if p["last_ms"] is None else f"{num(p['last_ms'])} (the last occurrence)"
        return [f"periodic, every {num(p['every_s'])} s", "1", f"{num(p['delivered'])} occurrences", "", "", "", last,
                num(p["problems"])]
    label = "all one-shot" if p["path"] == ALL else p["path"]
    return [label, *(num(p[k]) for k in ("timers", "delivered", "early", "p50_ms", "p99_ms", "max_ms", "problems"))]


def _verdict(e: dict) -> str:
    if e["ok"]:
        return "OK, no problem"
    setup = f" (setup failed: {e['setup_error'].replace('|', '/')})" if e["setup_error"] else ""
    return f"**FAILED: {e['problems']} problem{'s' if e['problems'] != 1 else ''}**{setup}"
