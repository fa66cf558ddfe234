"""Cost per million timers: what the runtime asks of AWS per timer, measured in the engine, then priced.

Each scenario runs in a fresh engine, counts every AWS call the runtime makes
(``common.RequestCounter``), and measures what each call is billed for (``meter.CapacityMeter``:
DynamoDB units from the actual item sizes, SQS 64 KB chunks), every Lambda invocation's
duration and batch size, the runtime's log lines at the default level and the dispatcher's EMF
metric lines (``meter.LogMeter``, ``common.HandlerTimes``). ``pricing.bill`` prices the usage.

Scenarios, for both paths:

- **short**: due 2-3 s after creation (within the window): sent straight to the delayer queue;
- **long**: the window shrunk to 5 s and sweeps every second; due 6-7 s after creation, so each
  waits as a timer item until a sweep claims it;

at three traffic levels, each a number of timers per batch at every batched step (create
request, enqueuer invocation, SQS send, receive and delete, dispatcher invocation):

- **sparse**: 1 (single creates, each alone in every batch);
- **moderate**: 3 (``POST /schedule-batches`` of 3);
- **heavy**: 10, the runtime's and SQS's maximum (``POST /schedule-batches`` of 10).

Short timers of one create request share a send, so they surface together; long timers are
due at the rate of one request's worth per second, so each sweep (every second) claims about
one request's worth. The batch sizes that resulted are measured and reported, not assumed.
The sub-second part of each due time is random: the dispatcher waits out the remainder after
a message surfaces (SQS delays are whole seconds), so its duration depends on it.

A **periodic** scenario prices occurrences of periodic timers: ten definitions every second on
the same grid, counted over ``periodic_waves`` seconds after the first (no create per occurrence);
a second one, beyond the window, runs them every ``PERIODIC_LONG_EVERY_S`` seconds with the long
path's shrunk window, so each next occurrence goes through a timer item, the sweeper and the enqueuer.

Spread-out traffic is then priced with the dispatcher's batches simulated (``bench.cost_spread``):
the scale simulation's batch formation for Poisson due times, at each rate and monthly volume.

**Outcome events** (``bench.cost_outcomes``): the short path at sparse and heavy traffic, without outcomes and with
an SQS outcomes target, in turn; the difference per event, priced per kind of outcomes target. The lean-path bar
(2 DynamoDB writes per short timer, 4 per long one, none added by outcomes) is asserted: the section fails without it.

Payloads: the headline is 1 KB of JSON; heavy traffic also runs with 100 B, 4 KB and 64 KB of
JSON and 1 KB of high-entropy data (``bench.payloads``). A cancel scenario prices a cancel.

The engine runs 10 concurrent dispatcher invocations (its default is 16), as Lambda's SQS mapping
scales out, so that sparse traffic stays one message per invocation.
"""

from __future__ import annotations

import ast
import functools
import json
import random
import time

from . import cost_levers, cost_outcomes, cost_spread, costmodel, payloads
from .common import (BATCH_SIZE, ROOT, BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, api_client,
                     item_statuses, log)
from .meter import CapacityMeter, LogMeter, RequestCounter
from .pricing import PRICES, SECONDS_PER_MONTH
from .scale import params as scale_params

from scheduler_runtime.aws.periodic import ARM_LEAD_MS  # noqa: E402  (bench.common puts lambda/ on the path)
from scheduler_runtime.core.contract import DEFAULT_HISTORY_RETENTION_SECONDS  # noqa: E402

from cdk_delayed_scheduler.client._core import route  # noqa: E402  (bench.common puts src/ on the path)
from cdk_delayed_scheduler.local import QueueTarget  # noqa: E402

LEVELS = {"sparse": 1, "moderate": 3, "heavy": BATCH_SIZE}
SHORT_DELAY_S = 2  # whole seconds; each timer adds a random fraction
SHORT_GAP_S = 0.3  # between create requests of the short path: each surfaces on its own
LONG_WINDOW_S, LONG_SWEEP_S, LONG_LEAD_S = 5, 1.0, 6
PERIODIC_LONG_EVERY_S = 8  # beyond the shrunk window: each next occurrence waits as a timer item
DISPATCHER_WORKERS = 10
HEADLINE_PAYLOAD = "1KB"


def _requests(path: str, per_request: int, n: int, payload: dict, rng: random.Random, t0: float) -> list:
    """``(send at, [bodies])`` per create request."""
    out = []
    for g in range(-(-n // per_request)):
        bodies = []
        for i in range(g * per_request, min(n, (g + 1) * per_request)):
            if path == "short":
                timing = {"delaySeconds": round(SHORT_DELAY_S + rng.random(), 3)}
            else:
                timing = {"dueAt": round(t0 + LONG_LEAD_S + g * LONG_SWEEP_S + rng.random() * LONG_SWEEP_S, 3)}
            bodies.append({"id": f"c-{i:05d}", **timing, "payload": payload})
        out.append((t0 + g * (SHORT_GAP_S if path == "short" else LONG_SWEEP_S), bodies))
    return out


def scenario(path: str, level: str, n: int, payload_label: str, counter: RequestCounter, meter: CapacityMeter,
             cancel: bool = False, outcomes: bool = False) -> dict:
    """One scenario in a fresh engine; ``outcomes``: with an SQS outcomes target (the default kinds), counted until
    every timer's outcome event has arrived in it."""
    per_request = LEVELS[level]
    kind, size = payloads.PAYLOADS[payload_label]
    body_payload = payloads.make(kind, size)
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    logs = LogMeter(counter)
    opts = EngineOptions(target=collector, dispatcher_max_concurrency=DISPATCHER_WORKERS,
                         outcomes=QueueTarget() if outcomes else None)
    if path == "long":
        opts.delay_window, opts.sweep_interval = LONG_WINDOW_S, LONG_SWEEP_S
    tap.install()
    logs.install()
    meter.forget()  # a fresh engine: an empty table
    try:
        with BenchEngine(opts, times) as eng:
            client = api_client(eng.api_url)
            client.raw("createSchedule", {"delaySeconds": 0, "payload": {"warm": True}})
            collector.wait_for(1, 30)
            events = cost_outcomes.OutcomeQueue(eng) if outcomes else None
            if events:
                events.wait_for(1, 30)  # the warm-up's outcome, before counting
            time.sleep(0.5)
            base = collector.count()
            rng = random.Random(f"{path}-{level}-{payload_label}")
            plan = _requests("long" if cancel else path, per_request, n, body_payload, rng, time.time() + 0.2)
            if cancel:  # created uncounted, due in an hour: then only the cancels are counted
                for _, bodies in plan:
                    for b in bodies:
                        client.raw("createSchedule", {**b, "dueAt": time.time() + 3600})
                time.sleep(1.0)
            times.reset()
            counter.reset()
            logs.reset()
            counter.enabled = True
            request_bytes, statuses = [], []
            if cancel:
                for _, bodies in plan:
                    for b in bodies:
                        statuses.append(client.raw("cancelSchedule", id=b["id"]).status)
                time.sleep(1.0)
            else:
                for at, bodies in plan:
                    time.sleep(max(0.0, at - time.time()))
                    if per_request == 1:
                        statuses.append(client.raw("createSchedule", bodies[0]).status)
                        request_bytes.append(len(json.dumps(bodies[0]).encode()))
                    else:
                        answer = client.raw("createScheduleBatch", {"schedules": bodies})
                        statuses.extend(item_statuses(answer) or [answer.status])
                        request_bytes.append(len(json.dumps({"schedules": bodies}).encode()))
                collector.wait_for(base + n, 60 + n * 0.2)
                if events:
                    events.wait_for(1 + n, 60)
                time.sleep(1.0)  # the mapping's DeleteMessageBatch after the last delivery
            counter.enabled = False
            ids = {b["id"] for _, bodies in plan for b in bodies}
            return _measured(
                {"path": path, "level": level, "per_request": per_request, "payload": payload_label, "n": n,
                 "cancel": cancel, "delivered": len({e["id"] for _, e in collector.received if e["id"] in ids}),
                 "create_requests": len(plan), "request_bytes": request_bytes,
                 "statuses": dict(sorted({str(s): statuses.count(s) for s in statuses}.items())),
                 "path_taken": {p: sum(1 for i in ids if tap.path_of.get(i) == p) for p in ("short", "long", "unknown")},
                 **({"outcomes": events.received(ids)} if events else {})},
                counter, meter, times, logs, tap)
    finally:
        logs.uninstall()
        tap.uninstall()


def _measured(head: dict, counter: RequestCounter, meter: CapacityMeter, times: HandlerTimes, logs: LogMeter,
              tap: LogTap) -> dict:
    """A scenario's record: ``head`` (what was asked and delivered) and everything the meters saw."""
    return {
        **head,
        "calls": [{"caller": c, "service": s, "operation": o, "tag": t, "count": k}
                  for (c, s, o, t), k in sorted(counter.snapshot().items())],
        "capacity": [{"caller": c, "service": s, "operation": o, "item": i, **v}
                     for (c, s, o, i), v in sorted(meter.snapshot().items())],
        "functions": {name: {"ms": list(times.durations[name]), "records": list(times.records[name]),
                             "claimed": list(times.claimed[name]), "outcome_records": list(times.outcome_records[name])}
                      for name in times.durations},
        "metric_lines": list(times.metric_lines),
        "log_bytes": {f"{c}|{lvl}": b for (c, lvl), b in logs.bytes.items()},
        "log_lines": {f"{c}|{lvl}": k for (c, lvl), k in logs.lines.items()},
        "log_samples": logs.samples,
        "item_sizes_read_back": meter.shadow_misses,
        "errors": dict(tap.errors),
        "error_samples": tap.error_samples,
    }


def periodic_scenario(waves: int, payload_label: str, counter: RequestCounter, meter: CapacityMeter,
                      every_s: int = 1, beyond_window: bool = False) -> dict:
    """Occurrences of periodic timers: ten definitions every ``every_s`` seconds, all on the same grid, so
    each wave's ten occurrences surface and are dispatched together (the heavy level's batch of 10).

    ``beyond_window``: the window shrunk to ``LONG_WINDOW_S`` and sweeps every ``LONG_SWEEP_S``, with
    ``every_s`` beyond the window, so each next occurrence waits as a timer item and is swept, claimed
    and enqueued, as an hourly or daily cron's is under the default window (the same calls; a cron
    only computes its next due time differently).

    Counting starts right after one wave's occurrences were delivered and stops right after ``waves``
    more were, so it holds ``waves`` deliveries of each definition and as many armings of the next
    occurrence (and, beyond the window, as many claims and sends). There is no create: a definition
    is PUT once, before counting.
    """
    per_wave = LEVELS["heavy"]
    kind, size = payloads.PAYLOADS[payload_label]
    body_payload = payloads.make(kind, size)
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    logs = LogMeter(counter)
    opts = EngineOptions(target=collector, dispatcher_max_concurrency=DISPATCHER_WORKERS)
    if beyond_window:
        assert every_s > LONG_WINDOW_S + 1, "each next occurrence must be due beyond the window"
        opts.delay_window, opts.sweep_interval = LONG_WINDOW_S, LONG_SWEEP_S
    tap.install()
    logs.install()
    meter.forget()
    try:
        with BenchEngine(opts, times) as eng:
            client = api_client(eng.api_url)
            start = round(time.time() + 2.5, 3)
            for i in range(per_wave):
                status, _ = client.raw("putPeriodic", {"every": every_s, "startAt": start, "payload": body_payload},
                                       id=f"p-{i:02d}")
                assert status == 201, status
            collector.wait_for(per_wave, 30)
            time.sleep(0.3)  # the first wave's deletes, before counting
            times.reset()
            counter.reset()
            logs.reset()
            base = collector.count()
            counter.enabled = True
            collector.wait_for(base + waves * per_wave, 30 + waves * 2 * every_s)
            time.sleep(0.3)  # the last wave's deletes; the next wave is due at least 0.7 s later
            counter.enabled = False
            counted = collector.lateness()[base:base + waves * per_wave]
            late = sorted(lateness for _, _, lateness in counted)
            return _measured(
                {"path": "periodic_long" if beyond_window else "periodic", "level": "heavy", "per_request": per_wave,
                 "payload": payload_label, "n": len(counted), "cancel": False, "delivered": len(counted),
                 "create_requests": 0, "request_bytes": [], "statuses": {}, "path_taken": {}, "every_s": every_s,
                 "lateness_ms": {"p50": late[len(late) // 2] if late else None,
                                 "p99": late[min(len(late) - 1, int(len(late) * 0.99))] if late else None,
                                 "max": late[-1] if late else None, "early": sum(1 for x in late if x < 0)}},
                counter, meter, times, logs, tap)
    finally:
        logs.uninstall()
        tap.uninstall()


def access_log_bytes() -> dict:
    """One access log line per door: the construct's formats, rendered with typical values."""
    batch = route("createScheduleBatch", {})
    typical = {"$context.requestId": "Jb3xHhZ5oAMEb4Q=", "$context.identity.sourceIp": "203.0.113.17",
               "$context.identity.caller": "AROAZEXAMPLE7ROLEID:app-session",
               "$context.identity.user": "AROAZEXAMPLE7ROLEID:app-session",
               "$context.requestTime": "21/Nov/2026:22:19:57 +0000", "$context.httpMethod": "POST",
               "$context.routeKey": f"{batch.method} {batch.path}", "$context.resourcePath": batch.path,
               "$context.status": "200", "$context.protocol": "HTTP/1.1", "$context.responseLength": "1187",
               "$context.responseLatency": "48", "$context.integrationErrorMessage": "-",
               "$context.authorizer.error": "-"}
    http_format = None
    try:  # the HTTP API's format, as the construct declares it (read, not imported: no CDK load)
        tree = ast.parse((ROOT / "src" / "cdk_delayed_scheduler" / "_scheduler_apis.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "HTTP_ACCESS_LOG_FORMAT" for t in node.targets):
                http_format = ast.literal_eval(node.value.args[0])
    except (OSError, SyntaxError, ValueError, AttributeError, IndexError):
        pass
    http_format = http_format or {k: v for k, v in zip(
        ("requestId", "ip", "caller", "user", "requestTime", "httpMethod", "routeKey", "status", "protocol",
         "responseLength", "latency", "integrationError", "authorizerError"), typical)}
    rest_format = {"requestId": "$context.requestId", "ip": "$context.identity.sourceIp",
                   "user": "$context.identity.user", "caller": "$context.identity.caller",
                   "requestTime": "$context.requestTime", "httpMethod": "$context.httpMethod",
                   "resourcePath": "$context.resourcePath", "status": "$context.status",
                   "protocol": "$context.protocol", "responseLength": "$context.responseLength"}
    overhead = PRICES["cw_logs_event_overhead_bytes"]

    def render(fmt: dict, request_id: str) -> int:
        values = dict(typical, **{"$context.requestId": request_id})
        return len(json.dumps({k: values.get(v, "-") for k, v in fmt.items()}, separators=(",", ":"))) + overhead

    return {"http": render(http_format, "Jb3xHhZ5oAMEb4Q="),
            "rest": render(rest_format, "4f0e6a3c-2b7d-4c1e-9a55-0d3f1b2c8e77"), "direct": 0}


def _aws_profile() -> dict:
    """The scale simulation's AWS profile, with the engine's own figures recorded in docs/benchmarks.json."""
    path = ROOT / "docs" / "benchmarks.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    return scale_params.aws(**scale_params.measured(data))


def run(n: int, n_long_slow: int = 30, payload_n: int = 40, payload_paths: tuple = ("short", "long"),
        payload_labels: tuple = ("100B", "4KB", "64KB", "1KB-random"), cancel_n: int | None = None,
        levels: tuple = tuple(LEVELS), periodic_waves: int = 10, periodic_long_waves: int = 5) -> dict:
    """``n`` timers per scenario; ``n_long_slow`` create requests at most for the long path's sparse and
    moderate levels (one request a second); ``payload_n`` timers per payload scenario (heavy traffic)."""
    counter, meter = RequestCounter(), CapacityMeter()
    counter.observers.append(meter)
    counter.install()
    scenarios: dict = {}
    try:
        for path in ("short", "long"):
            for level in levels:
                count = n if path == "short" or level == "heavy" else min(n, n_long_slow * LEVELS[level])
                log(f"cost: {path} timers, {level} traffic ({LEVELS[level]} per batch), {count} timers, "
                    f"{HEADLINE_PAYLOAD} payload")
                scenarios[f"{path}/{level}/{HEADLINE_PAYLOAD}"] = scenario(path, level, count, HEADLINE_PAYLOAD,
                                                                           counter, meter)
        for path in payload_paths:
            for label in payload_labels:
                log(f"cost: {path} timers, heavy traffic, {payload_n} timers, {label} payload")
                scenarios[f"{path}/heavy/{label}"] = scenario(path, "heavy", payload_n, label, counter, meter)
        log(f"cost: cancel, {cancel_n or n} long timers due in an hour, then cancelled")
        scenarios["cancel"] = scenario("long", "sparse", cancel_n or n, HEADLINE_PAYLOAD, counter, meter, cancel=True)
        log(f"cost: periodic timers, {periodic_waves} seconds of ten occurrences due together, {HEADLINE_PAYLOAD} payload")
        scenarios[f"periodic/heavy/{HEADLINE_PAYLOAD}"] = periodic_scenario(periodic_waves, HEADLINE_PAYLOAD, counter,
                                                                            meter)
        log(f"cost: periodic timers beyond the window ({LONG_WINDOW_S} s), every {PERIODIC_LONG_EVERY_S} s, "
            f"{periodic_long_waves} waves of ten, {HEADLINE_PAYLOAD} payload")
        scenarios[f"periodic_long/heavy/{HEADLINE_PAYLOAD}"] = periodic_scenario(
            periodic_long_waves, HEADLINE_PAYLOAD, counter, meter, every_s=PERIODIC_LONG_EVERY_S, beyond_window=True)
        outcomes = cost_outcomes.run(functools.partial(scenario, counter=counter, meter=meter), counter, n,
                                     HEADLINE_PAYLOAD)
    finally:
        counter.uninstall()
    for s in scenarios.values():
        s["summary"] = costmodel.summarise(s)
    access_log = access_log_bytes()
    out = costmodel.price_all(scenarios, access_log, LEVELS, HEADLINE_PAYLOAD)
    log(f"cost: the dispatcher's batches simulated for due times spread at {', '.join(map(str, cost_spread.RATES))}/s "
        "and at each monthly volume's rate")
    rates = sorted({*cost_spread.RATES, *(n / SECONDS_PER_MONTH for n in cost_spread.VOLUMES)})
    forms = cost_spread.formations(_aws_profile(), rates, ARM_LEAD_MS / 1000)
    out["spread"] = cost_spread.price(scenarios, forms, costmodel.one_shot_pools(scenarios), access_log,
                                      HEADLINE_PAYLOAD, out["fixed_monthly"]["http"], DEFAULT_HISTORY_RETENTION_SECONDS)
    log("cost: the delivery levers (batching window, SECOND precision) at each spread rate, batches simulated")
    out["levers"] = cost_levers.price(scenarios, _aws_profile(), costmodel.one_shot_pools(scenarios), access_log,
                                      HEADLINE_PAYLOAD)
    out.update(prices=PRICES, levels=LEVELS, headline_payload=HEADLINE_PAYLOAD,
               payloads={label: {"kind": k, "size": size, **payloads.describe(payloads.make(k, size))}
                         for label, (k, size) in payloads.PAYLOADS.items()},
               method={"short_delay_s": SHORT_DELAY_S, "short_gap_s": SHORT_GAP_S, "long_window_s": LONG_WINDOW_S,
                       "long_sweep_s": LONG_SWEEP_S, "long_lead_s": LONG_LEAD_S,
                       "periodic_long_every_s": PERIODIC_LONG_EVERY_S,
                       "dispatcher_workers": DISPATCHER_WORKERS},
               scenarios=scenarios)
    out["outcomes"] = {**outcomes, "lean": cost_outcomes.lean_path(out["targets"], outcomes["levels"])}
    for level, o in outcomes["levels"].items():
        log(f"  outcomes, {level}: ${o['total_on_demand']:.3f} per million events on top of the timer's own, "
            f"the target's request apart; {o['events']} events for {o['timers']} timers")
    for key in ("short", "long"):
        h = out["headline"][key]
        log(f"  {key}, heavy, batch create, HTTP API, {HEADLINE_PAYLOAD}: ${h['total_on_demand']:.2f}/M on demand, "
            f"${h['total_provisioned']:.2f}/M provisioned; {out['writes_per_timer'][key]['requests']:.2f} DynamoDB "
            "writes per timer")
    lean = out["outcomes"]["lean"]
    assert lean["met"], "the lean path: DynamoDB writes per timer over the bar: " + "; ".join(
        f"{r['what']} {r['writes']:.2f} (bar {r['target']})" for r in lean["rows"])
    return out
