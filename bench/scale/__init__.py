"""``./dev bench --only scale``: a discrete-event simulation of the deployed pipeline on AWS.

The parameters (``params.PARAMETERS``) are AWS's documented default quotas, each with its page,
and stated AWS service latencies; the handlers' own work comes from the engine's measurements in
docs/benchmarks.json (the cost and burst sections). The same model, run with the local engine's
own limits (moto's measured call rates, the engine's dispatcher concurrency), is checked against
the engine's measured bursts of 1,000 and 10,000 (the calibration).
"""

from __future__ import annotations

import json
import math
import random
import time

from ..common import ROOT, log
from . import cost, params, scenarios
from .pipeline import Delivery

from scheduler_runtime.aws.periodic import ARM_LEAD_MS  # noqa: E402  (bench.common puts lambda/ on the path)

TARGET_S = 60.0  # 1,000,000 timers due in one second: last delivery within this, none early
SPARSE_TARGET_MS = 100.0  # sparse traffic (one timer every 10 minutes): p99 lateness within this


def _profiles(data: dict) -> tuple[dict, dict]:
    base = params.aws(**params.measured(data))
    section = data.get("cost") or {}
    for path, usd in cost.other_per_million(section).items():
        base[f"other_usd_per_million_{path}"] = usd
    base["waiting_bytes_per_timer"] = cost.waiting_bytes(section)
    base["emf_bytes_per_invocation"] = cost.emf_bytes_per_invocation(section)
    periodic = section.get("periodic") or {}
    periodic_profile = dict(base, wru_per_delivery=periodic.get("wru", 2.0),
                            extra_per_delivery_s=base["lat_sqs_s"])  # arming the next occurrence first
    return base, periodic_profile


def burst_table_wru(p: dict) -> float:
    """What the on-demand table serves at once during a burst: a new table's figure or twice the previous
    peak, whichever is higher, at most the table quota. The previous peak is the sweeper's claims of the
    same timers (about 14 minutes before they are due), one WRU per claim."""
    claims = min(p["claim_threads"] / p["lat_ddb_write_s"], 16 * p["ddb_partition_wru"])
    return min(p["ddb_table_wru"], max(p["ddb_new_table_wru"], 2 * claims))


def calibration(data: dict) -> dict:
    """The engine's recorded bursts against the simulation with the engine's limits."""
    burst = data.get("burst") or {}
    if not burst.get("by_size") or not burst.get("ceiling"):
        return {"missing": "no recorded burst section in docs/benchmarks.json"}
    profile = params.engine(burst)
    profile.update(params.measured(data))
    out: dict = {"ceiling_calls_per_s": burst["ceiling"]["calls_per_s"], "dispatcher_pollers": profile["esm_max"],
                 "sizes": {}}
    for size, runs in sorted(burst["by_size"].items(), key=lambda kv: int(kv[0])):
        n = int(size)
        measured = sorted(r["time_to_last_s"] if r["complete"] else r["projected_time_to_last_s"] for r in runs)
        due = [scenarios.DUE0 + (i * 1000 // n) / 1000 for i in range(n)]
        rng = random.Random(n)
        visible = [scenarios.DUE0 - rng.random() for _ in due]
        sim = Delivery(profile, due, visible, math.inf).run()
        median = measured[len(measured) // 2]
        out["sizes"][size] = {"engine_s": measured, "engine_median_s": median,
                              "engine_complete": all(r["complete"] for r in runs),
                              "simulated_s": sim.last_delivery_s, "ratio": sim.last_delivery_s / median}
    return out


def run(bursts: list[int], raised_burst: int, rates: list[float], poisson_s: float, periodic_n: int,
        periodic_s: float, create_rates: list[float], create_s: float, waiting_n: int,
        provisioned_rate: float = 10.0, provisioned_s: float = 600.0, sparse_gap_s: float = 600.0) -> dict:
    data = json.loads((ROOT / "docs" / "benchmarks.json").read_text())
    aws, periodic = _profiles(data)
    started = time.monotonic()
    out: dict = {"parameters": [dict(p.__dict__, value=aws.get(p.key, p.value)) for p in params.PARAMETERS],  # as used
                 "profile": aws, "rows": [], "target_s": TARGET_S, "sparse_target_ms": SPARSE_TARGET_MS}
    log("scale: calibration against the engine's recorded bursts")
    out["calibration"] = calibration(data)
    table = burst_table_wru(aws)
    out["burst_table_wru"] = table
    for n in bursts:
        log(f"scale: burst {n:,}")
        out["rows"].append(scenarios.burst(aws, n, table))
    # the table pre-warmed to its on-demand quota: the construct's warm_throughput prop
    warm = f"`warm_throughput=WarmThroughput(write_units_per_second={aws['ddb_table_wru']:.0f})`"
    raised = [
        (warm, {}, aws["ddb_table_wru"]),
        (f"{warm}, provisioned pollers", {"provisioned": 1}, aws["ddb_table_wru"]),
        (f"{warm}, provisioned pollers (min 100, max 1,000) and 10,000 Lambda concurrency",
         {"provisioned": 1, "prov_min_pollers": 100, "prov_max_pollers": 1_000, "lambda_account_concurrency": 10_000},
         aws["ddb_table_wru"]),
    ]
    out["raised"] = []
    for label, change, wru in raised:
        log(f"scale: burst {raised_burst:,} with {label}")
        row = scenarios.burst(dict(aws, **change), raised_burst, wru, name=f"burst {raised_burst:,}: {label}")
        out["raised"].append(dict(row, change=change))
    for rate in rates:
        for pollers, how in (("scaled", "pollers scaled to the load"), ("max", "pollers at the maximum")):
            log(f"scale: Poisson due times at {rate:,.0f}/s, {how}")
            out["rows"].append(scenarios.poisson(aws, rate, poisson_s, pollers=pollers,
                                                 name=f"due times Poisson at {rate:,.0f}/s, {how}"))
    lead = aws["lat_cold_start_s"]
    log(f"scale: sparse traffic, one due every {sparse_gap_s:.0f} s, without and with a lead of {lead:g} s")
    out["sparse"] = scenarios.cold_start_lead(aws, sparse_gap_s, 10.0, poisson_s, lead)
    out["rows"].append(out["sparse"][0])
    rate = periodic_n / 60
    log(f"scale: {periodic_n:,} periodic timers every minute ({rate:,.0f} occurrences/s) for {periodic_s:.0f} s")
    out["rows"].append(scenarios.poisson(periodic, rate, periodic_s, path="periodic", pollers="max", warmup_s=5.0,
                                         early_s=ARM_LEAD_MS / 1000, name=(
        f"{periodic_n:,} periodic timers every minute, phases spread ({periodic_s:.0f} s of it), pollers at the maximum")))
    out["creates"] = []
    for rate in create_rates:
        log(f"scale: sustained creates at {rate:,.0f}/s")
        c = scenarios.creates(aws, rate, create_s, aws["ddb_table_wru"])
        out["creates"].append(c)
        ebs = min(rate, aws["ebs_create_per_s"])  # what EventBridge Scheduler accepted is what it then delivers
        out["rows"].append(scenarios.poisson(aws, c["accepted_per_s"], create_s, path="short_single", pollers="max",
                                             ebs_rate_per_s=ebs, warmup_s=5.0, name=(
            f"sustained creates at {rate:,.0f}/s: the {c['accepted_per_s']:,.0f}/s accepted, delivered "
            "(pollers at the maximum)")))
    out["provisioned"] = []
    for auto in (False, True):
        how = ("`TableCapacity.autoscaled()` from 5 WCU (target tracking at 70 %)" if auto else
               "`BillingMode.PROVISIONED`, no `provisioned_capacity` (5 WCU)")
        log(f"scale: creates at {provisioned_rate:,.0f}/s on a provisioned table, {how}")
        row = scenarios.provisioned(aws, provisioned_rate, provisioned_s, aws["ddb_provisioned_wcu"], auto, name=(
            f"{provisioned_rate:,.0f} short creates/s (Poisson, 60 s timers) for {provisioned_s:.0f} s, {how}"))
        out["rows"].append(row)
        out["provisioned"].append(row)
    out["waiting"] = scenarios.waiting(aws, waiting_n)
    out["seconds"] = time.monotonic() - started
    return out
