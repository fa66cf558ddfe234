"""What the delivery levers do to spread-out traffic: the dispatcher mapping's batching window (with
``SUB_SECOND`` precision, messages sent to surface that much early), ``SECOND`` precision, and both.

For each lever, the scale simulation (``bench.scale``) forms the dispatcher's batches for due times
spread as Poisson arrivals at each rate, under both readings of the mapping's scaling (pollers scaled to
the load, pollers at the maximum), and gives the deliveries' lateness on AWS's stated latencies; the
bill of short timers with single creates is then priced as the cost section prices spread-out traffic
(``bench.cost_spread``): the measured bill of materials, with the simulated invocations and billed time
in place of the dispatcher's. The costlier reading is the price judged against the target.
"""

from __future__ import annotations

from .cost_spread import RATES, READINGS, bill_kind
from .scale import scenarios as scale_scenarios

WINDOW_S = 1
BATCH = 100
KIND = "short, single creates"
TARGET_RATE, TARGET_USD = 10, 2.00  # short timers, 10 a second spread out, single creates, HTTP API, on demand

# (label, the mapping's settings in the simulation's profile, how messages surface)
LEVERS = (
    ("none (the defaults: SUB_SECOND, no window, batch 10)", {}, {}),
    (f"batching window {WINDOW_S} s, batch {BATCH} (SUB_SECOND: sent {WINDOW_S} s early)",
     {"esm_window_s": WINDOW_S, "esm_batch": BATCH}, {"lead_s": float(WINDOW_S)}),
    ("SECOND precision (no window, batch 10)", {}, {"second": True}),
    (f"SECOND precision, batching window {WINDOW_S} s, batch {BATCH}",
     {"esm_window_s": WINDOW_S, "esm_batch": BATCH}, {"second": True}),
)


def price(scenarios: dict, profile: dict, pools: dict, access_log: dict, payload: str,
          rates: tuple = RATES) -> dict:
    """Each lever at each rate: both readings' formation (invocations, billed time, lateness) and bill."""
    rows = []
    for label, change, surfacing in LEVERS:
        for rate in rates:
            cells = {}
            for pollers in READINGS:
                f = scale_scenarios.batch_formation(dict(profile, **change), rate, pollers, **surfacing)
                b = bill_kind(scenarios, KIND, payload, pools, access_log, f)
                cells[pollers] = {"formation": f, "total_on_demand": b["total_on_demand"],
                                  "dispatcher_usd": _dispatcher_usd(b), "groups": b["groups"]}
            worst = max(cells, key=lambda k: cells[k]["total_on_demand"])
            rows.append({"lever": label, "rate": rate, "readings": cells, "costlier": worst})
    return {"kind": KIND, "payload": payload, "window_s": WINDOW_S, "batch": BATCH, "rows": rows,
            "target": {"rate": TARGET_RATE, "usd": TARGET_USD}}


def _dispatcher_usd(b: dict) -> float:
    """USD per million of what the levers change in a bill: the dispatcher's invocations and duration, the
    mapping's receives and deletes, and the dispatcher's EMF line (one an invocation); its FIRED write stays."""
    return sum(r["usd_od"] for r in b.get("rows", []) if "dispatcher" in r["item"] and r["group"] != "DynamoDB")
