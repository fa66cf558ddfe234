"""``./dev bench --only flow``: flow control, a limited target kept within its limits (docs/design.md, "Flow control").

Three parts, each with its own table:

- **On the engine** (this module): the default target limited (``EngineOptions(flow_control=...)``), a receiver that
  takes :data:`HOLD_S` a call (a real sleep) and records each arrival and how many calls are inside it at once, gets
  its timers all due in one second ``D``; ``free``, a target without limits beside it, gets timers due one every
  ``free_every_s`` from ``D`` on, while the backlog runs; the same ``free`` workload runs alone in an engine without
  limits, in the same repeat, the order turning from repeat to repeat. Every timer is created through the HTTP API
  before ``D``.
- **Simulated on AWS** (``bench.scale.flow``): a million timers due in one second to a target limited to 1,000 a
  second, and the same with per-group limits.
- **What a limited delivery costs** (``bench.flow_cost``): every request of the delivery side, counted on the engine,
  limited minus unlimited, priced.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from cdk_delayed_scheduler.local.api_calls import parse_due_ms
from cdk_delayed_scheduler.local.deliveries import Recorder
from cdk_delayed_scheduler.local.gauge import Gauge, most_inside

from . import flow_cost
from .common import BATCH_SIZE, ROOT, Engine, EngineOptions, api_client, distribution, item_statuses, log
from .fmt import met, mmm, num
from .meter import RequestCounter
from .report_outcomes import LATENESS_RATIO, lateness_judged
from .scale import burst_table_wru, params
from .scale import flow as simulated
from .scale.pipeline import SDK_ATTEMPTS

from scheduler_runtime.core import flow as rules  # noqa: E402  (bench.common puts lambda/ on the path)
from scheduler_runtime.core.flow import FlowLimits  # noqa: E402

LAST_MARGIN = 0.10
"""A simulated last start "about" what the slots allow: within this share after it."""
HOLD_S = 0.02
"""How long the limited target takes a call: places held at once are real."""
FREE = "free"
CREATE_LEAD_S = 4.0
CREATES_PER_S = 80.0
"""The creates' lead before ``D``: this, plus the timers at this many a second (the engine takes ~150 a second)."""
_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def busiest_ms(instants_ms: list[int], window_ms: int = 1000) -> int:
    """The most instants in any window of ``window_ms`` (each window starts at one of them)."""
    return simulated.busiest(sorted(instants_ms), window_ms)


def _received(recorder: Recorder, ids: set[str], due_ms: int) -> dict:
    """What ``recorder`` got of ``ids``: delivered, lost, early, repeats (by ``dedupeKey``), the lateness of each
    first arrival; the first and last arrival after ``due_ms``, and the busiest second of arrivals and of starts
    (``firedAt``)."""
    ours = [d for d in recorder.deliveries if d.envelope["id"] in ids]
    first: dict[str, Any] = {}
    for d in sorted(ours, key=lambda d: d.received_ms):
        first.setdefault(d.envelope["id"], d)
    arrivals = [d.received_ms - due_ms for d in first.values()]
    return {"sent": len(ids), "delivered": len(first), "lost": len(ids) - len(first),
            "repeats": len(ours) - len({d.envelope["dedupeKey"] for d in ours}),
            "early": sum(1 for d in ours if d.lateness_ms < 0 or parse_due_ms(d.envelope["firedAt"]) <
                         parse_due_ms(d.envelope["dueAt"])),
            "lateness_ms": distribution(d.lateness_ms for d in first.values()),
            "first_arrival_ms": min(arrivals, default=None), "last_arrival_ms": max(arrivals, default=None),
            "busiest_arrivals": busiest_ms(arrivals),
            "busiest_starts": busiest_ms([parse_due_ms(d.envelope["firedAt"]) for d in first.values()])}


def _create(engine: Engine, bodies: list[dict]) -> None:
    client = api_client(engine.api_url)
    for start in range(0, len(bodies), BATCH_SIZE):
        answer = client.raw("createScheduleBatch", {"schedules": bodies[start:start + BATCH_SIZE]})
        assert item_statuses(answer) == [201] * len(bodies[start:start + BATCH_SIZE]), f"a batch answered {answer.body}"


def one_engine(limits: dict | None, n: int, free_n: int, free_every_s: float, cap_s: float,
               counter: RequestCounter) -> dict:
    """A fresh engine: with ``limits``, ``n`` timers due in one second to the default target so limited; ``free_n``
    to ``free`` (without limits), one every ``free_every_s`` from that second on. The moto calls made from ``D`` to
    the end are counted."""
    limited, free = Recorder(), Recorder()
    gauge = Gauge(limited, HOLD_S)
    options = EngineOptions(target=gauge, flow_control=limits, targets={FREE: free})
    with Engine(options) as engine:
        due_s = math.ceil(time.time() + CREATE_LEAD_S + (n + free_n) / CREATES_PER_S)
        bodies = ([{"id": f"limited-{k}", "dueAt": due_s, "payload": {"k": k}} for k in range(n)]
                  + [{"id": f"free-{k}", "dueAt": round(due_s + k * free_every_s, 3), "payload": {"k": k}, "target": FREE}
                     for k in range(free_n)])
        _create(engine, bodies)
        created_before_due = time.time() < due_s
        time.sleep(max(0.0, due_s - time.time()))  # real time: the burst's second
        counter.reset()
        counter.enabled, started = True, time.monotonic()
        limited_ids, free_ids = {f"limited-{k}" for k in range(n)}, {f"free-{k}" for k in range(free_n)}
        deadline = due_s + cap_s
        complete = all(recorder.wait_for(ids, deadline - time.time()) for recorder, ids in ((limited, limited_ids),
                                                                                          (free, free_ids)))
        seconds = time.monotonic() - started
        counter.enabled = False
        time.sleep(1.0)  # a repeat arrives by now
        calls = counter.snapshot()
        events = dict(engine.stats.events)
    writes = sum(k for (_, service, op, _), k in calls.items() if service == "dynamodb" and op in _WRITES)
    refused = sum(k for (_, service, op, tag), k in calls.items()
                  if service == "dynamodb" and op in _WRITES and tag == "error")
    out = {"due_s": due_s, "created_before_due": created_before_due, "complete": complete,
           "free": _received(free, free_ids, due_s * 1000),
           "moto": {"writes_per_s": writes / seconds, "refused_per_s": refused / seconds, "seconds": seconds},
           "put_back": events.get("put_back", 0), "crowded": events.get("crowded", 0)}
    if n:
        out["limited"] = dict(_received(limited, limited_ids, due_s * 1000), most_in_flight=most_inside(gauge.passages)[0])
    return out


def run_engine(repeats: int, workloads: list[dict], free_every_s: float, counter: RequestCounter) -> dict:
    """Each workload's repeats: the limited backlog with ``free`` beside it, and ``free`` alone, in turn."""
    out: list[dict] = []
    for w in workloads:
        n, limits = w["limited"], w["limits"]
        backlog_s = n / limits["rate"]
        free_n, cap_s = math.ceil(backlog_s / free_every_s), 2 * backlog_s + 30.0
        runs = []
        for r in range(repeats):
            pair: dict = {"order": "beside, alone" if r % 2 == 0 else "alone, beside"}
            for side in (("beside", "alone") if r % 2 == 0 else ("alone", "beside")):
                log(f"flow: {n} timers limited to {json.dumps(limits)} with {free_n} to {FREE!r} beside them"
                    if side == "beside" else f"flow: {free_n} timers to {FREE!r} alone, in an engine without limits")
                pair[side] = one_engine(limits if side == "beside" else None, n if side == "beside" else 0, free_n,
                                        free_every_s, cap_s, counter)
            late = pair["beside"]["limited"]
            alone, beside = (pair[side]["free"]["lateness_ms"].get("p99") for side in ("alone", "beside"))
            log(f"  repeat {r + 1}: {late['delivered']}/{n} delivered, the last "
                f"{(late['last_arrival_ms'] or 0) / 1000:.1f} s after D, busiest second {late['busiest_starts']} starts;"
                f" free p99 alone {alone} ms, beside {beside} ms")
            runs.append(pair)
        out.append({"limited": n, "limits": limits, "interval_ms": FlowLimits(rate=limits["rate"]).interval_us / 1000,
                    "free": free_n, "cap_s": cap_s, "runs": runs})
    return {"hold_ms": HOLD_S * 1000, "free_every_s": free_every_s, "workloads": out}


def _profile() -> tuple[dict, float]:
    """The scale section's profile (the engine's own figures from docs/benchmarks.json where recorded), with this
    model's parameters, and the write units a second the table serves the records at once (a burst's)."""
    path = ROOT / "docs" / "benchmarks.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    profile = params.flow(params.aws(**params.measured(data)))
    return profile, burst_table_wru(profile)


def simulate(n: int, rate: int, grouped_n: int, big: int, small_groups: int, group_rate: int, horizon_s: float,
             events: float = math.inf, beside: dict | None = None) -> dict:
    """``n`` timers due in one second to a target limited to ``rate`` a second; then ``grouped_n`` with ``big`` in
    one group and the rest over ``small_groups``, each group limited to ``group_rate``, for ``horizon_s``. Each stops
    early once it simulated ``events`` (its figures then say so, with the pace it had). Then, with ``beside``
    (``n``, ``free_every_s``, ``free_for_s``), a target without limits beside such a burst: alone, with the burst's
    messages in the delayer queue beside its own, and with them in the flow queue."""
    profile, table = _profile()
    keys = {p.key for p in (*params.PARAMETERS, *params.FLOW_PARAMETERS)}
    out: dict = {"parameters": [dict(p.__dict__) for p in params.FLOW_PARAMETERS], "table_wru": table,
                 "profile": {k: v for k, v in profile.items() if k in keys}, "events_budget": events}
    log(f"flow simulated: {n:,} timers due in one second, rate {rate:,} a second")
    b = out["burst"] = simulated.burst(profile, n, rate, table, events)
    when = f"the last at {b['last_start_s']:,.0f} s" if b["complete"] else f"stopped at {b['stopped_s']:,.0f} s"
    log(f"  {b['delivered']:,} started, {when} (the slots allow {b['allowed_slots_s']:,.0f} s for all), busiest "
        f"second {b['busiest']}, {b['dead_lettered']} dead-lettered, {b['seconds']:.0f} s to simulate")
    log(f"flow simulated: {grouped_n:,} timers, {big:,} in one group and the rest in {small_groups}, group rate "
        f"{group_rate}, for {horizon_s:,.0f} s")
    g = out["grouped"] = simulated.grouped(profile, grouped_n, big, small_groups, rate, group_rate, table, horizon_s,
                                           events)
    log(f"  small groups: {g['small']['delivered']:,} of {g['small']['timers']:,} started, the last at "
        f"{g['small']['last_start_s']} s; big group {g['big']['delivered']:,} started; {g['seconds']:.0f} s to simulate")
    if beside:
        out["beside"] = {}
        for name, limited, flow_queue in (("alone", 0, True), ("shared", beside["n"], False),
                                          ("flow_queue", beside["n"], True)):
            r = out["beside"][name] = simulated.beside(profile, limited, rate, table, beside["free_every_s"],
                                                       beside["free_for_s"], flow_queue, events)
            log(f"flow simulated beside {limited:,} limited ({name}): free p50 {r['free_p50_ms']:,.0f} ms, p99 "
                f"{r['free_p99_ms']:,.0f} ms, max {r['free_max_ms']:,.0f} ms; {r['seconds']:.0f} s to simulate")
    return out


def run(repeats: int, workloads: list[dict], free_every_s: float, cost: dict, simulation: dict) -> dict:
    """The engine's rows, the cost per limited delivery (``cost``: ``flow_cost.run``'s sizes), then the simulation
    (``simulation``: :func:`simulate`'s)."""
    counter = RequestCounter()
    counter.install()
    try:
        engine = run_engine(repeats, workloads, free_every_s, counter)
        costs = flow_cost.run(counter=counter, **cost)
    finally:
        counter.uninstall()
    return {"engine": engine, "cost": costs, "simulation": simulate(**simulation)}


# --- the report ------------------------------------------------------------------------------------------------
def _limited_row(w: dict) -> dict:
    """One workload's figures over its repeats (medians, ranges; lost, early and repeats summed)."""
    n, limits = w["limited"], w["limits"]
    runs = [r["beside"] for r in w["runs"]]
    got = [r["limited"] for r in runs]
    rate, places = limits.get("rate"), limits.get("maxInFlight")
    starts, arrivals = [g["busiest_starts"] for g in got], [g["busiest_arrivals"] for g in got]
    last = [None if g["last_arrival_ms"] is None else g["last_arrival_ms"] / 1000 for g in got]
    spans = [(g["last_arrival_ms"] - g["first_arrival_ms"]) / 1000 for g in got if g["delivered"] > 1]
    lost, early, repeats = (sum(g[k] for g in got) for k in ("lost", "early", "repeats"))
    held = all(s <= rate for s in starts) and all(g["most_in_flight"] <= (places or math.inf) for g in got)
    what = f"`rate` {rate}" + (f", `maxInFlight` {places}" if places else "")
    return {"what": what, "n": num(n), "held": held and not lost and not early,
            "row": [f"{num(n)} due in one second; {what}",
                    f"{mmm([g['delivered'] for g in got])} / {lost} / {early} / {repeats}",
                    f"{mmm(last, 1)} s ({num(n / rate)} s; spaced {num(n * w['interval_ms'] / 1000, 1)} s)",
                    f"{mmm(starts)} / {mmm(arrivals)} ({rate})", mmm([n / s for s in spans if s], 1),
                    f"{mmm([g['most_in_flight'] for g in got])} ({places or 'none'})",
                    mmm([r["put_back"] / n for r in runs], 2),
                    f"{mmm([r['moto']['writes_per_s'] for r in runs])} "
                    f"({mmm([r['moto']['refused_per_s'] for r in runs])} refused)"],
            "complete": sum(1 for r in runs if r["complete"]), "repeats": len(runs),
            "created": sum(1 for r in runs if r["created_before_due"]),
            "moto": mmm([r["moto"]["writes_per_s"] for r in runs]),
            "writes_per_timer": mmm([r["moto"]["writes_per_s"] * r["moto"]["seconds"] / n for r in runs], 1)}


def _free(w: dict) -> dict:
    """The target without limits alone and beside the workload, and the verdict on the pairs' ratios."""
    pairs = [{side: {"all": dict(r[side]["free"]["lateness_ms"], early=r[side]["free"]["early"])}
              for side in ("alone", "beside")} for r in w["runs"]]
    judged = lateness_judged([{"off": p["alone"], "on": p["beside"]} for p in pairs])
    qs = ("p50", "p99", "max")
    rows = [[label, *(mmm([p[side]["all"].get(q) for p in pairs]) for q in qs),
             f"{sum(r[side]['free']['lost'] for r in w['runs'])} / {sum(r[side]['free']['early'] for r in w['runs'])}", ratio]
            for label, side, ratio in (("alone (an engine without limits)", "alone", ""),
                                       (f"beside {num(w['limited'])} limited", "beside",
                                        " / ".join(f"{judged['median'][q]:.2f}" for q in qs)))]
    lost = sum(r[side]["free"]["lost"] for r in w["runs"] for side in ("alone", "beside"))
    return {"rows": rows, "met": judged["met"] and not lost, "p50": f"{judged['median']['p50']:.2f}",
            "p99": f"{judged['median']['p99']:.2f}"}


def engine_figures(e: dict, data: dict) -> dict:
    ceiling = (((data.get("burst") or {}).get("ceiling") or {}).get("calls_per_s") or {}).get("UpdateItem")
    workloads = []
    for w in e["workloads"]:
        row, free = _limited_row(w), _free(w)
        workloads.append({"part": "engine_workload", "what": row["what"], "n": row["n"], "row": [row["row"]],
                          "held": met(row["held"]), "complete": row["complete"], "repeats": row["repeats"],
                          "created": row["created"],
                          "cap_s": num(w["cap_s"]), "moto": row["moto"], "writes_per_timer": row["writes_per_timer"],
                          "free_rows": free["rows"], "free_met": met(free["met"]), "free_p50": free["p50"],
                          "free_p99": free["p99"], "ratio": f"{LATENESS_RATIO:.2f}",
                          "why": {"part": "free_why", "moto": row["moto"],
                                  "ceiling": {"part": "ceiling", "ups": num(ceiling)} if ceiling else None}
                          if not free["met"] else None,
                          "summary_row": {"part": "engine_row", "what": row["what"], "n": row["n"],
                                          "held": met(row["held"]), "complete": row["complete"],
                                          "repeats": row["repeats"], "free_met": met(free["met"]),
                                          "free_p50": free["p50"], "free_p99": free["p99"],
                                          "ratio": f"{LATENESS_RATIO:.2f}"}})
    repeats = max((len(w["runs"]) for w in e["workloads"]), default=0)
    return {"part": "engine", "repeats": repeats, "hold_ms": num(e["hold_ms"]), "every": e["free_every_s"],
            "workloads": workloads}


def _sim_last(r: dict) -> str:
    """The last start; for a run stopped before every timer started, how many had by then, and the projection."""
    if r["delivered"] + r["dead_lettered"] >= r["timers"]:
        return num(r["last_start_s"])
    pace = r.get("projected_last_s")
    projected = "" if pace is None else f"; at its last minute's pace, all by {num(pace)}"
    return f"{num(r['delivered'])} by {num(r['stopped_s'])}{projected}"


def _sim_row(what: str, r: dict) -> list:
    return [what, f"{num(r['delivered'])} / {num(r['dead_lettered'])}", _sim_last(r),
            f"{num(r['busiest'])} ({num(r['rate'])})", r["early"], num(r["mean_per_s"]),
            f"{num(r['item_writes'])} / {num(r['item_refused'])} / {num(r['item_throttled'])}",
            f"{num(r['crowded'])} / {num(r['looked_again'])} / {num(r['sent_back'])} / {num(r['put_back_early'])}",
            num(r["slots_missed"]),
            f"{num(r['failed'])} ({num(r['record_throttled'])})", f"{r['billed_s_per_delivery'] * 1000:,.0f}",
            f"{num(r['quota_spent'])} of {num(r['pollers'])}"]


def _received_by(r: dict) -> dict:
    """When every create's message had had its first receive (the pollers' ramp), or how many had by the end."""
    if r.get("all_received_s") is None:
        return {"part": "sim_not_received", "n": num(r["first_receives"])}
    return {"part": "sim_received", "s": num(r["all_received_s"])}


def _sim_verdict(b: dict) -> dict:
    """The million's verdicts: its last start (projected when the run stopped first), its rate, none dead-lettered."""
    complete = b["delivered"] + b["dead_lettered"] >= b["timers"]
    last = b["last_start_s"] if complete else b.get("projected_last_s")
    within = last is not None and last <= b["allowed_slots_s"] * (1 + LAST_MARGIN)
    stopped = None if complete else {
        "part": "sim_stopped", "stopped": num(b["stopped_s"]), "events": num(b["events"]),
        "starts": num(b["recent_starts_per_s"]), "crowded": num(b["recent_crowded_per_s"]), "failed": num(b["failed"])}
    why = None if within else {
        "part": "sim_why", "items": "item" if b.get("target_items", 1) == 1 else f"{b['target_items']} items",
        "writes": num(b["item_writes"]), "refused": num(b["item_refused"]),
        "throttled": num(b["item_throttled"]), "mean": num(b["mean_per_s"]), "rate": num(b["rate"]),
        "received": _received_by(b)}
    return {"n": num(b["timers"]), "rate": num(b["rate"]), "last": _sim_last(b), "allowed": num(b["allowed_slots_s"]),
            "margin": f"{LAST_MARGIN:.0%}", "within": met(within), "busiest": num(b["busiest"]),
            "early": b["early"], "held": met(b["busiest"] <= b["rate"] and b["early"] == 0),
            "dead": num(b["dead_lettered"]), "none_dead": met(b["dead_lettered"] == 0), "stopped": stopped, "why": why}


def _sim_groups(g: dict) -> dict:
    """The grouped run: the small groups' last start against their own rate and the target's slots, every rate."""
    small, big = g["small"], g["big"]
    share = small["timers"] * g["interval_ms"] / 1000  # the small groups alone on the target's slots
    small_ok = small["last_start_s"] is not None and small["delivered"] == small["timers"] and \
        small["last_start_s"] <= max(small["allowed_slots_s"], share) * (1 + LAST_MARGIN)
    rates = big["busiest"] <= g["group_rate"] and small["busiest"] <= g["group_rate"] and g["busiest"] <= g["rate"]
    return {"g_n": num(g["timers"]), "groups": g["groups"], "g_big": num(big["timers"]), "g_small": g["groups"] - 1,
            "g_small_n": num(small["timers"]), "g_rate": g["group_rate"], "g_interval_ms": f"{g['group_interval_ms']:.1f}",
            "g_horizon": num(g["stopped_s"]), "g_paced": num(g["paced"]), "g_paced_kept": num(g.get("paced_kept")), "g_crowded": num(g["crowded"]),
            "small_last": num(small["last_start_s"]), "small_done": f"{num(small['delivered'])} of {num(small['timers'])}",
            "small_own": num(small["allowed_slots_s"], 1), "small_share": num(share), "small_met": met(small_ok),
            "small_busiest": small["busiest"], "big_busiest": big["busiest"], "big_started": num(big["delivered"]),
            "big_mean": num(big["mean_per_s"], 1), "target_busiest": num(g["busiest"]), "rates_met": met(rates),
            "g_received": _received_by(g), "g_together": _together(g),
            "small_received": num(small.get("last_first_receive_s"))}


def _together(g: dict, kind: str = "group") -> str:
    """How the slots (``kind``: ``group`` or ``target``) of a batch's first asks were taken together: how many, in how
    many writes."""
    together, writes = g.get(f"{kind}_slots_together"), g.get(f"{kind}_slot_writes_together")
    if together is None or writes is None:
        return "not in the model of this run"
    if not writes:
        return "none here"
    of = f" of its {num(g['group_slots'])} group slots" if kind == "group" else ""
    return f"{num(together)}{of} in {num(writes)} writes, {together / writes:.1f} a write"


def _sim_beside(s: dict | None) -> dict | None:
    """A target without limits beside a limited burst: its lateness alone, beside the burst's messages in the delayer
    queue, and beside them in the flow queue (the verdict: the engine's ratio bound on the p50 and p99)."""
    if not s:
        return None
    alone, shared, fq = s["alone"], s["shared"], s["flow_queue"]

    def lateness(r: dict) -> str:
        return f"p50 {num(r['free_p50_ms'])} ms, p99 {num(r['free_p99_ms'])} ms, most {num(r['free_max_ms'])} ms"
    kept = all(fq[k] <= alone[k] * LATENESS_RATIO for k in ("free_p50_ms", "free_p99_ms"))
    return {"part": "sim_beside", "b_n": num(fq["limited"]), "b_rate": num(fq["rate"]), "b_free": num(fq["free"]),
            "b_every": fq["free_every_s"], "b_alone": lateness(alone), "b_shared": lateness(shared),
            "b_fq": lateness(fq), "b_ratio": f"{LATENESS_RATIO:.2f}", "b_met": met(kept),
            "b_started": f"{num(fq['free_started'])} of {num(fq['free'])}"}


def simulation_figures(s: dict) -> dict:
    """The simulated part of the flow section: the model's constants and parameters, its rows, the verdicts."""
    b, g = s["burst"], s["grouped"]
    verdict, groups = _sim_verdict(b), _sim_groups(g)
    return {"part": "simulation", **verdict, **groups, "interval_ms": f"{b['interval_ms']:.2f}",
            "table_wru": num(s["table_wru"]), "tolerance_ms": num(rules.START_TOLERANCE_MS),
            "wait_in_place_ms": num(rules.WAIT_IN_PLACE_MS), "tries": simulated.WRITE_TRIES,
            "sdk_attempts": SDK_ATTEMPTS, "look_again_s": rules.LOOK_AGAIN_SECONDS, "room_tries": rules.ROOM_TRIES,
            "crowded_max_s": rules.CROWDED_BACKOFF_MAX_SECONDS, "starts_per_item": num(rules.STARTS_PER_ITEM),
            "items": num(b.get("target_items", 1)), "beside": _sim_beside(s.get("beside")),
            "together": _together(b, "target"),
            "lead_min": rules.LEAD_MIN_MS,
            "lead_max": rules.LEAD_MAX_MS, "pollers": num(b["pollers"]), "seconds": num(b["seconds"] + g["seconds"]),
            "parameters": [[f"`{p['key']}`", num(s["profile"].get(p["key"], p["value"]), 3 if p["value"] < 1 else 0),
                            p["unit"], p["what"], p["source"]] for p in s["parameters"]],
            "rows": [_sim_row(f"{num(b['timers'])} due in one second, rate {num(b['rate'])}", b),
                     _sim_row(f"{num(g['timers'])} in {g['groups']} groups, perGroup rate {g['group_rate']}", g)],
            "summary_rows": [{"part": "sim_row", **verdict}, {"part": "sim_group_row", **groups}]}


def figures(data: dict) -> dict | None:
    """The flow section's figures from the whole JSON; None when not measured."""
    f = data.get("flow") or {}
    parts = {"engine": engine_figures(f["engine"], data) if f.get("engine") else None,
             "simulation": simulation_figures(f["simulation"]) if f.get("simulation") else None,
             "cost": flow_cost.figures(f["cost"]) if f.get("cost") else None}
    if not any(parts.values()):
        return None
    rows = [*(w["summary_row"] for w in (parts["engine"] or {}).get("workloads", [])),
            *((parts["simulation"] or {}).get("summary_rows") or []),
            *([parts["cost"]["summary_row"]] if parts["cost"] else [])]
    return {**parts, "tolerance_ms": num(rules.START_TOLERANCE_MS), "summary_rows": rows}
