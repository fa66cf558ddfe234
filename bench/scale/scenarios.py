"""The scenarios, their outputs, and EventBridge Scheduler's figures for the same load.

Each scenario returns one row: the time to the last delivery (after the first due second),
lateness p50/p99/max, early deliveries, throttles by service, the dispatcher's batch sizes and
the scenario's cost (``bench.scale.cost``), with EventBridge Scheduler's figures beside them.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter

from . import cost
from .des import Bucket, percentile
from .pipeline import Delivery, Outcome, long_path_feed

from scheduler_runtime.core.contract import DISPATCHER_KEEP_WARM_EVERY_MINUTES  # noqa: E402  (bench.common puts lambda/ on the path)

DUE0 = 10_000.0  # the first due second of every scenario (simulated seconds)
WARM_EVERY_S = DISPATCHER_KEEP_WARM_EVERY_MINUTES * 60.0
"""How often the construct's keep-warm rule invokes the dispatcher (``dispatcher_keep_warm``)."""


def _row(name: str, n: int, out: Outcome, usd: dict, ebs: dict, **extra) -> dict:
    late = sorted(out.lateness)
    sizes = Counter(out.batches)
    inv = len(out.batches)
    return {
        "scenario": name, "timers": n, "delivered": len(late),
        "last_delivery_s": out.last_delivery_s if late else None,
        "lateness_ms": {"p50": percentile(late, 50) * 1000, "p99": percentile(late, 99) * 1000,
                        "max": late[-1] * 1000} if late else None,
        "early": sum(1 for x in late if x < 0), "failed_deliveries": out.failed,
        "throttles": dict(out.throttles), "peak_concurrency": out.peak_concurrency,
        "peak_table_writes_per_s": out.peak_writes_per_s,
        "invocations": inv, "cold_starts": sum(out.cold), "mean_batch": (sum(out.batches) / inv) if inv else None,
        "batch_share": {str(k): sizes[k] / inv for k in sorted(sizes)} if inv else {},
        "pings": len(out.pings), "ping_cold_starts": sum(out.ping_cold),
        "events": out.events, "cost": usd, "ebs": ebs, **extra,
    }


def burst(profile: dict, n: int, ddb_wru: float, seed: int = 1, name: str | None = None) -> dict:
    """``n`` long timers due in the same second, created hours before: swept, enqueued, delivered."""
    rng = random.Random(seed)
    due = [DUE0 + i / n for i in range(n)]
    in_queue, feed = long_path_feed(profile, due, ddb_wru)
    visible = [max(q, d - rng.random()) for q, d in zip(in_queue, due)]
    out = Delivery(profile, due, visible, ddb_wru).run()
    late_feeds = sum(1 for q, d in zip(in_queue, due) if q > d - 1)
    return _row(name or f"burst {n:,} due in one second (long path)", n, out, cost.scenario(profile, out, n, "long"),
                ebs_burst(profile, n), feed=feed, fed_after_due_minus_1s=late_feeds, table_wru=ddb_wru,
                table_quota_wru=profile["ddb_table_wru"])


def poisson(profile: dict, rate: float, seconds: float, seed: int = 1, path: str = "short",
            name: str | None = None, min_timers: int = 2000, pollers: str = "scaled",
            ebs_rate_per_s: float | None = None, warmup_s: float = 60.0, early_s: float | None = None,
            lead_s: float = 0.0, second: bool = False) -> dict:
    """Due times as Poisson arrivals at ``rate`` a second for ``seconds``; short timers already in the queue.

    Each message becomes visible ``early_s`` before its due time, or, when None, ``lead_s`` and a
    uniformly random fraction of a second before it (a delay of whole seconds counted from a send at a
    random moment, less the lead, rounded down); with ``second`` (``SECOND`` precision, the seconds left
    rounded up), a random fraction of a second after it.

    ``pollers``: ``"scaled"``, the mapping starts at its start concurrency, adds its step each second
    it leaves messages visible and gives a step back each second its pollers find the queue empty;
    ``"max"``, it holds its maximum throughout (every message finds an idle poller: the smallest
    batches). AWS does not document its scaling rule closely enough to choose; the two bound it.
    """
    rng = random.Random(seed)
    seconds = max(seconds, min_timers / rate)  # enough deliveries for a p99 at low rates
    due, t = [], DUE0 - warmup_s  # the first warm-up_s seconds let the mapping scale; they are left out
    while True:
        t += rng.expovariate(rate)
        if t >= DUE0 + seconds:
            break
        due.append(t)
    visible = [d + rng.random() if second else d - (lead_s + rng.random() if early_s is None else early_s) for d in due]
    out = Delivery(profile, due, visible, profile["ddb_table_wru"], start_pollers=math.inf if pollers == "max" else None,
                   scale_down=pollers == "scaled").run().since(DUE0)
    n = len(out.lateness)
    out.last_delivery_s = out.drain_s  # a steady load has no one due second: the last delivery after the last due time
    return _row(name or f"due times Poisson at {rate:,.0f}/s for {seconds:.0f} s", n, out,
                cost.scenario(profile, out, n, path), ebs_rate(profile, ebs_rate_per_s or rate, n), pollers=pollers)


def cold_start_lead(profile: dict, gap_s: float, dense_rate: float, dense_s: float, lead_s: float,
                    warm_every_s: float = WARM_EVERY_S) -> list[dict]:
    """Sparse traffic, due times as Poisson arrivals one every ``gap_s`` seconds, where a dispatcher invocation
    finds no environment kept (``lambda_idle_keep_s``) more often than not and starts cold; and ``dense_rate`` a
    second for ``dense_s`` (pollers at the maximum: the most invocations, each paying a lead). Each as sent (no
    lead); with its messages sent to surface ``lead_s`` earlier (a lead in the delay rule, as a batching window's
    is): a cold invocation's init then runs while the message would have waited, and a warm one waits the lead out,
    billed; and, with no lead, with the dispatcher pinged every ``warm_every_s`` (``Delivery._rule``): the
    environment a ping used is kept for the next invocation, and the init happens in a ping, not before a delivery."""
    rows = []
    for rate, seconds, pollers, what in ((1 / gap_s, 0.0, "scaled", f"one every {gap_s / 60:g} minutes (sparse)"),
                                         (dense_rate, dense_s, "max", f"{dense_rate:,.0f}/s")):
        for lead, every in ((0.0, None), (lead_s, None), (0.0, warm_every_s)):
            how = (f"kept warm by a ping every {every:g} s" if every else
                   f"sent to surface {lead:g} s earlier" if lead else "no lead")
            row = poisson(dict(profile, warm_every_s=every), rate, seconds, pollers=pollers, lead_s=lead,
                          name=f"due times Poisson at {what}, {how}")
            rows.append(dict(row, rate=rate, lead_s=lead, warm_every_s=every))
    return rows


def batch_formation(profile: dict, rate: float, pollers: str, early_s: float | None = None,
                    seconds: float = 60.0, lead_s: float = 0.0, second: bool = False) -> dict:
    """What the dispatcher costs per timer for due times spread as Poisson arrivals at ``rate`` a second:
    its invocations (one receive and one delete each) and billed milliseconds, from the simulated batches;
    and the deliveries' lateness. ``lead_s`` and ``second`` as :func:`poisson` reads them; the mapping's
    batch and window are the profile's (``esm_batch``, ``esm_window_s``)."""
    row = poisson(profile, rate, seconds, pollers=pollers, early_s=early_s,
                  warmup_s=60.0 if pollers == "scaled" else 5.0, lead_s=lead_s, second=second)
    c = row["cost"]
    return {"rate": rate, "pollers": pollers, "early_s": early_s, "timers": row["timers"],
            "lateness_ms": row["lateness_ms"], "early": row["early"],
            "mean_batch": row["mean_batch"], "invocations_per_timer": c["invocations_per_timer"],
            "billed_ms_per_invocation": c["billed_ms_per_invocation"], "billed_ms_per_timer": c["billed_ms_per_timer"]}


def creates(profile: dict, rate: float, seconds: float, ddb_wru: float, seed: int = 1) -> dict:
    """Single creates (one timer a request) at ``rate`` a second: API Gateway, the api function's
    concurrency, the table's writes. A throttled request is refused (the client sees a 429)."""
    p = profile
    rng = random.Random(seed)
    gateway = Bucket(p["apigw_rps"], p["apigw_burst"])
    table = Bucket(ddb_wru)
    scaling = Bucket(p["lambda_scale_per_10s"] / 10, p["lambda_scale_per_10s"])
    running: list[float] = []  # end times of the api invocations in flight
    warm = 0
    throttles = {"apigateway": 0, "lambda": 0, "dynamodb": 0}
    accepted, peak, t = 0, 0, 0.0
    api_s = p["api_ms"] / 1000
    while True:
        t += rng.expovariate(rate)
        if t >= seconds:
            break
        while running and running[0] <= t:
            heapq.heappop(running)
            warm += 1
        if not gateway.admit(t):
            throttles["apigateway"] += 1
            continue
        if len(running) >= p["lambda_account_concurrency"] or (warm == 0 and not scaling.admit(t)):
            throttles["lambda"] += 1
            continue
        warm = max(0, warm - 1)
        written = table.take(t + api_s / 2)  # the record's PutItem, after the send
        if written > t + api_s / 2:
            throttles["dynamodb"] += 1
        heapq.heappush(running, written + api_s / 2)
        peak = max(peak, len(running))
        accepted += 1
    attempted = accepted + sum(throttles.values())
    return {"rate": rate, "seconds": seconds, "attempted": attempted, "accepted": accepted,
            "accepted_per_s": accepted / seconds, "throttles": throttles, "api_peak_concurrency": peak,
            "ebs_accepted_per_s": min(rate, p["ebs_create_per_s"])}


def waiting(profile: dict, n: int) -> dict:
    """``n`` timers waiting beyond the window: nothing moves but storage; the sweeper queries only the window."""
    gb = n * profile["waiting_bytes_per_timer"] / 2**30
    return {"scenario": f"{n:,} waiting timers", "timers": n, "storage_gb": gb,
            "usd_per_month": gb * cost.PRICES["ddb_storage_gb_month"],
            "ebs": {"fits_quota": n <= profile["ebs_schedules"], "quota": profile["ebs_schedules"], "usd_per_month": 0.0}}


def ebs_burst(profile: dict, n: int) -> dict:
    """EventBridge Scheduler: ``n`` schedules due in one second go out at its invocations quota."""
    r = profile["ebs_invocations_per_s"]
    return {"last_delivery_s": n / r, "p50_ms": n / 2 / r * 1000, "p99_ms": 0.99 * n / r * 1000,
            "usd": n * cost.PRICES["eventbridge_scheduler_per_million"] / 1e6}


def ebs_rate(profile: dict, rate: float, n: int) -> dict:
    """EventBridge Scheduler at a steady ``rate``: it keeps up only within its invocations quota."""
    r = profile["ebs_invocations_per_s"]
    return {"keeps_up": rate <= r, "backlog_growth_per_s": max(0.0, rate - r),
            "usd": n * cost.PRICES["eventbridge_scheduler_per_million"] / 1e6}


def provisioned(profile: dict, rate: float, seconds: float, wcu: float, autoscale: bool, delay_s: float = 60.0,
                seed: int = 1, name: str | None = None) -> dict:
    """Short timers created one a request at ``rate`` a second (Poisson) for ``seconds``, each due ``delay_s`` and a
    random fraction of a second later, on a provisioned table of ``wcu`` write units a second: the create's record
    and the dispatcher's FIRED write share it (two units a timer). With ``autoscale``, target tracking raises the
    capacity (``Delivery._autoscale``). Every timer counts (no warm-up left out); pollers at the maximum."""
    rng = random.Random(seed)
    created, t = [], DUE0 - delay_s
    while True:
        t += rng.expovariate(rate)
        if t >= DUE0 - delay_s + seconds:
            break
        created.append(t)
    visible = [c + delay_s for c in created]  # the whole seconds' delay from the send
    due = [v + rng.random() for v in visible]
    scaling = (profile["ddb_autoscale_target"], int(profile["ddb_autoscale_minutes"])) if autoscale else None
    out = Delivery(profile, due, visible, wcu, start_pollers=math.inf, creates=created, autoscale=scaling).run()
    out.last_delivery_s = out.drain_s
    return _row(name or f"{rate:,.0f} creates/s on {wcu:,.0f} WCU", len(created), out, {}, ebs_rate(profile, rate, len(created)),
                offered_writes_per_s=2 * rate, table_wcu=wcu, refused_creates=out.refused, stray_messages=out.stray,
                capacity_steps=[{"t_s": t - (DUE0 - delay_s), "wcu": w} for t, w in out.capacity],
                seconds=seconds, delay_s=delay_s)
