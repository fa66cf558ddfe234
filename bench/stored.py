"""What docs/benchmarks.json keeps of a section's run: what the tables, the plots and the summary read (medians,
ranges, percentiles, counts), not every raw sample. ``compact`` runs on each section as it ends; ``dump`` writes
the JSON with lists of numbers on one line."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

CURVE_POINTS = 101  # a burst's cumulative deliveries over time, as the plot draws them
_SAMPLES = ("errors", "error_samples", "moto_error_samples", "log_samples")


def compact(section: str, value: Any) -> Any:
    """``value``, the figures ``section`` measured, without the raw samples that nothing reads."""
    if not isinstance(value, dict) or value.get("failed"):
        return value
    if section == "precision":
        for run in [*value.get("runs", []), *value.get("mixed_runs", []),
                    *(run for lever in value.get("lever_runs", []) for run in lever["runs"]),
                    *(run for pair in value.get("outcome_pairs", []) for run in pair.values())]:
            _drop(run)
    elif section == "burst":
        for runs in value.get("by_size", {}).values():
            for run in runs:
                if "timeline_s" in run:
                    run["curve"] = curve(run.pop("timeline_s"))
                _drop(run)
    elif section == "cost":
        scenarios = value.get("scenarios", {})
        if any("functions" in s for s in scenarios.values()):
            value["dispatcher_batches"] = dispatcher_batches(scenarios)
        for s in scenarios.values():
            _drop(s, "functions", "request_bytes", "metric_lines", "calls", "capacity")
    return value


def _drop(run: dict, *keys: str) -> None:
    for key in (*keys, *_SAMPLES):
        run.pop(key, None)
    (run.get("stages") or {}).pop("slowest_10", None)


def curve(times: list[float]) -> list[list[float]]:
    """Cumulative deliveries at up to ``CURVE_POINTS`` instants, the first and the last included: ``[seconds, count]``."""
    t = sorted(times)
    if len(t) <= CURVE_POINTS:
        return [[round(x, 3), i + 1] for i, x in enumerate(t)]
    picked = sorted({round(j * (len(t) - 1) / (CURVE_POINTS - 1)) for j in range(CURVE_POINTS)})
    return [[round(t[i], 3), i + 1] for i in picked]


def dispatcher_batches(scenarios: dict) -> list[dict]:
    """The dispatcher's invocations of every scenario by the messages they carried: count and billed ms (whole ms)."""
    pool: dict[int, list[int]] = {}
    for s in scenarios.values():
        f = s["functions"].get("dispatcher")
        for records, ms in zip(f["records"], f["ms"]) if f else ():
            pool.setdefault(records, []).append(math.ceil(ms))
    return [{"messages": records, "invocations": len(v), "mean_ms": statistics.fmean(v), "p50_ms": statistics.median(v),
             "max_ms": max(v)} for records, v in sorted(pool.items())]


def dump(data: dict) -> str:
    """``data`` as JSON, one key a line, each list of scalars and each small dict of scalars on one line."""
    def inline(value: Any) -> bool:  # a list of scalars; a dict of a few scalars
        if isinstance(value, dict):
            return len(json.dumps(value, default=str)) <= 120 and not any(isinstance(x, (dict, list)) for x in value.values())
        return all(not isinstance(x, (dict, list)) for x in value)

    def write(value: Any, indent: str) -> str:
        if isinstance(value, dict) and value and not inline(value):
            inner = indent + " "
            return "{\n" + ",\n".join(f"{inner}{json.dumps(k)}: {write(v, inner)}" for k, v in value.items()) + f"\n{indent}}}"
        if isinstance(value, list) and value and not inline(value):
            inner = indent + " "
            return "[\n" + ",\n".join(inner + write(v, inner) for v in value) + f"\n{indent}]"
        return json.dumps(value, default=str)

    return write(data, "") + "\n"
