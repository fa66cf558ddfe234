"""The redrive section of docs/benchmarks.md and its row of the summary, from ``bench.redrive``'s JSON."""

from __future__ import annotations

from .report_kit import median_range


def _rate(r: dict) -> str:
    return median_range(r["per_second"], 1)


def summary_rows(r: dict | None) -> list[str]:
    if not r or not r.get("per_second"):
        return ["| redrive from the dead-letter queue on the engine, messages a second | not measured | | |"]
    return [f"| redrive from the dead-letter queue on the engine, messages a second, median (min – max) of "
            f"{r['repeats']} runs of {r['messages']} | {_rate(r)} | | |"]


def section(r: dict | None) -> list[str]:
    if not r or not r.get("per_second"):
        return []
    return ["## Redrive", "",
            "`./dev bench --only redrive` (bench/redrive.py): on a fresh engine, "
            f"{r['messages']} schedules (`retry.maxAttempts` 1) fail their one attempt against a target that refuses "
            "and are parked in the dead-letter queue; the target is mended; `Engine.redrive()` is timed (each message "
            "re-armed with a conditional write, sent back in batches of ten, then deleted). Every schedule must then "
            "arrive exactly once more, with attempt 2, or the run fails. The rate is the engine's, bounded by moto's "
            "conditional writes; on AWS the same code runs against DynamoDB and SQS.", "",
            "| runs | messages each | messages a second, median (min – max) |", "|---|---|---|",
            f"| {r['repeats']} | {r['messages']} | {_rate(r)} |", ""]
