"""The testing kit's section of docs/benchmarks.md and its rows of the summary, from ``bench.kit``'s JSON."""

from __future__ import annotations

from .report_engine import fmt, target


def median_range(figure: dict, nd: int) -> str:
    """``median (min – max)`` of a repeated figure."""
    return f"{fmt(figure['median'], nd)} ({fmt(figure['min'], nd)} – {fmt(figure['max'], nd)})"


def summary_rows(k: dict | None) -> list[str]:
    if not k or not k.get("start_s"):
        return ["| testing kit: start / stop of `local_scheduler()` | not measured | < 1 s / < 0.5 s | |"]
    return [f"| testing kit: start / stop of `local_scheduler()`, median (min – max) of {k['repeats']} | "
            f"{median_range(k['start_s'], 2)} s / {median_range(k['stop_s'], 2)} s | < {fmt(k['start_target_s'], 0)} s: "
            f"{target(k['start_met'])} / < {fmt(k['stop_target_s'], 1)} s: {target(k['stop_met'])} | "
            "a hand-made fixture: 0.8-1.8 s / 1.6-2.6 s |"]


def section(k: dict | None) -> list[str]:
    if not k or not k.get("start_s"):
        return []
    return ["## Testing kit", "",
            "`./dev bench --only kit` (bench/kit.py): `with local_scheduler() as timers:` as a user's test runs it, "
            f"{k['repeats']} times in one process after a first start: start (entering the block: an empty account in "
            "the process's shared moto child, the engine, the runtime's clock), a body that schedules one timer a "
            "minute ahead and lets the minute pass with `timers.advance(minutes=1)`, and stop (leaving the block).", "",
            "| figure | median (min – max) | target |", "|---|---|---|",
            f"| start | {median_range(k['start_s'], 3)} s | < {fmt(k['start_target_s'], 0)} s: {target(k['start_met'])} |",
            f"| stop | {median_range(k['stop_s'], 3)} s | < {fmt(k['stop_target_s'], 1)} s: {target(k['stop_met'])} |",
            f"| `advance(minutes=1)` delivering one timer | {median_range(k['advance_one_minute_s'], 3)} s | |",
            f"| first start in a process (starts the moto child, imports the engine and the runtime) | "
            f"{fmt(k['first_start_s'], 2)} s | |",
            f"| the pytest plugin's import (pytest loaded already), 5 fresh interpreters | "
            f"{median_range(k['plugin_import_ms'], 1)} ms | |", ""]
