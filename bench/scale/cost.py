"""The cost of a scenario: the dispatcher's invocations, billed time and SQS calls from the simulated
batch formation (and its EMF line, one a batch); everything else per timer from the cost section's
measured bill of materials.

The cost section prices the heavy case at full batches of ten, and spread-out traffic with
:func:`bench.scale.scenarios.batch_formation` (``bench.cost_spread``). Here the dispatcher's
invocations per timer, billed milliseconds (each invocation waits out its messages' sub-second
remainders) and the mapping's receives and deletes are counted in the simulation instead, and
the rest of the measured bill (API Gateway, the api function, DynamoDB, the enqueuer and the
sweeper, logs) is taken per timer as measured. Fixed monthly costs (idle sweeps, the mapping's
empty long polls, metrics) are left out, as in the cost section's per-timer tables.
"""

from __future__ import annotations

from ..pricing import PRICES

DISPATCHER_MB = PRICES["lambda_memory_mb"]["dispatcher"]
_SIM_PRICED = ("Lambda", "SQS")  # the dispatcher's lines that the simulation replaces, and its EMF line:
_EMF_LINE = "dispatcher EMF metric line"  # one a batch


def other_per_million(cost_section: dict) -> dict[str, float]:
    """USD per million timers of everything but the dispatcher's invocations, duration, receives and deletes:
    ``short`` and ``long`` with batch creates (ten a request, the cost section's headline), ``short_single``
    with one create a request, ``periodic`` per occurrence."""
    out: dict[str, float] = {}
    for path in ("short", "long"):
        rows = ((cost_section.get("headline") or {}).get(path) or {}).get("rows") or []
        out[path] = sum(r["usd_od"] for r in rows
                        if not (r["group"] in _SIM_PRICED and "dispatcher" in r["item"]) and r["item"] != _EMF_LINE)
    doors = (cost_section.get("doors") or {}).get("short") or {}
    if "short" in out and doors.get("http/single") and doors.get("http/batch"):
        # one create a request instead of ten: only the create side differs between the two measured bills
        out["short_single"] = out["short"] + doors["http/single"]["total_on_demand"] - doors["http/batch"]["total_on_demand"]
    periodic = cost_section.get("periodic")
    if periodic:
        sqs = periodic["sqs"]
        mapping_calls = sum(v for k, v in sqs.items() if "esm:sqs:dispatcher" in k)
        out["periodic"] = (periodic["total_on_demand"] - periodic["groups"]["Lambda"]["usd_od"]
                           - mapping_calls * PRICES["sqs_per_million_requests"] - periodic.get("emf_usd", 0.0))
    return out


def emf_bytes_per_invocation(cost_section: dict) -> float:
    """Ingested bytes of the dispatcher's EMF line, one a batch: the headline's per-timer share times its batch."""
    rows = ((cost_section.get("headline") or {}).get("short") or {}).get("rows") or []
    per_timer = sum(r["quantity"] for r in rows if r["item"] == _EMF_LINE)
    return per_timer * (cost_section.get("levels") or {}).get("heavy", 10)


def waiting_bytes(cost_section: dict) -> float:
    """Stored bytes of a waiting long timer: its record and its timer item as measured, plus 100 bytes each."""
    summary = (((cost_section.get("scenarios") or {}).get("long/heavy/1KB") or {}).get("summary") or {})
    sizes = [r["item_bytes_mean"] for r in summary.get("billable", [])
             if r["operation"] == "PutItem" and r["caller"] == "api" and "item_bytes_mean" in r]
    return sum(sizes) + 100 * len(sizes) if sizes else 2 * 1124.0


def dispatcher_usd(invocations: float, billed_ms: float, receives: float) -> float:
    """USD of the dispatcher's ``invocations`` (each followed by the mapping's delete), their ``billed_ms``
    in all, and the mapping's non-empty ``receives``."""
    gb_s = billed_ms / 1000 * DISPATCHER_MB / 1024
    return (invocations * PRICES["lambda_per_million_requests"] / 1e6 + gb_s * PRICES["lambda_arm_per_gb_second"]
            + (receives + invocations) * PRICES["sqs_per_million_requests"] / 1e6)


def scenario(profile: dict, out, n: int, path: str) -> dict:
    """USD of the scenario's ``n`` timers, and per million."""
    if not n:
        return {}
    inv = len(out.batches)
    dispatcher = (dispatcher_usd(inv, sum(out.billed_ms), out.receives - out.empty_receives)
                  + inv * profile.get("emf_bytes_per_invocation", 0.0) * PRICES["cw_logs_per_gb"] / 1e9)
    other = profile.get(f"other_usd_per_million_{path}", float("nan")) * n / 1e6
    return {"usd": dispatcher + other, "per_million": (dispatcher + other) / n * 1e6,
            "dispatcher_per_million": dispatcher / n * 1e6, "invocations_per_timer": inv / n,
            "billed_ms_per_invocation": sum(out.billed_ms) / inv if inv else 0.0,
            "billed_ms_per_timer": sum(out.billed_ms) / n}
