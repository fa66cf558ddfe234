"""Ingest: schedules per second through the local engine's HTTP API.

- single: one client, one keep-alive connection, POSTs one after another;
- concurrent: 8 clients POSTing at once;
- batch: ``POST /schedule-batches`` with as many schedules per request as the
  runtime accepts (``MAX_BATCH_SIZE``), from one
  client and from 8.

Each mode runs in a fresh engine with the same number of creates, because
moto's per-create cost grows with the table (a Query walks every item).
Timers are due in a day, beyond the (default 870 s) window: long timers, so
each create writes a timer item and then the record, they rest in the table,
and the measurement is the create path only.

Two diagnostics are measured beside the rates: the api handler called directly
(no HTTP), and a ``GET`` of an unknown id over HTTP, to separate the HTTP
layer's cost from the handler's.

Reschedule latency (single mode, after the creates): ``PATCH /schedules/{id}`` one after another, each
of :data:`RESCHEDULES` kinds on its own created timers: to another day (a new timer; the old one flagged
and deleted), into the window 10 minutes out (a message; the old timer removed), and 5 s out (the same,
with the message announced first: one more write).
"""

from __future__ import annotations

import json
import threading
import time

from .common import (BATCH_SIZE, BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, SchedulerClient,
                     api_client, distribution, item_statuses, log)

from cdk_delayed_scheduler.client._core import route  # noqa: E402  (bench.common puts src/ on the path)

CONCURRENCY = 8
RESCHEDULES = {"long_to_long": {"delaySeconds": 2 * 86_400}, "long_to_window": {"delaySeconds": 600},
               "long_to_soon": {"delaySeconds": 5}}
"""The reschedule kinds measured, by the body each sends."""
BATCH = BATCH_SIZE  # POST /schedule-batches: as many as the runtime accepts per request


def _fresh_engine_rate(mode: str, n: int, tag: str) -> dict:
    """Create n timers in a fresh engine (moto's costs grow with the table, so every mode starts empty)."""
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    tap.install()
    out: dict = {}
    try:
        with BenchEngine(EngineOptions(target=collector), times) as eng:
            client = api_client(eng.api_url)
            due = time.time() + 86_400
            client.raw("createSchedule", {"payload": {"warm": True}, "dueAt": due})
            bodies = [{"id": f"{tag}-{mode}-{i}", "dueAt": due, "payload": {"i": i}} for i in range(n)]
            clients = CONCURRENCY if mode.endswith("concurrent") else 1
            if mode.startswith("batch"):
                units = [bodies[k : k + BATCH] for k in range(0, n, BATCH)]
            else:
                units = [[b] for b in bodies]
            lock = threading.Lock()
            bad, retries, lat = [0], [0], []

            def send(my_units: list) -> None:
                for unit in my_units:
                    a = time.perf_counter()
                    if len(unit) == 1 and not mode.startswith("batch"):
                        answer = client.raw("createSchedule", unit[0])
                        attempts, ok = answer.attempts, answer.status in (200, 201)
                    else:
                        answer = client.raw("createScheduleBatch", {"schedules": unit})
                        attempts = 1
                        ok = answer.status == 200 and all(st in (200, 201) for st in item_statuses(answer))
                    with lock:
                        lat.append((time.perf_counter() - a) * 1000)
                        retries[0] += attempts - 1
                        bad[0] += 0 if ok else 1

            threads = [threading.Thread(target=send, args=(units[c::clients],), daemon=True) for c in range(clients)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - start
            out = {"per_s": n / elapsed, "request_latency_ms": distribution(lat), "failed_requests": bad[0],
                   "retries_after_5xx": retries[0], "moto_errors": tap.moto_errors}
            if mode == "single":
                # diagnostics: the api handler without HTTP, and the HTTP layer without DynamoDB work
                from scheduler_runtime.handlers import api as api_module

                direct, create = [], route("createSchedule", {})
                for i in range(50):
                    event = {"httpMethod": create.method, "path": create.path, "headers": {}, "pathParameters": None,
                             "resource": create.path,
                             "body": json.dumps({"id": f"{tag}-d-{i}", "dueAt": due, "payload": {"i": i}})}
                    a = time.perf_counter()
                    api_module.handler(event, None)
                    direct.append((time.perf_counter() - a) * 1000)
                out["handler_direct_create_ms"] = distribution(direct)
                rt = []
                for i in range(50):
                    a = time.perf_counter()
                    client.raw("getSchedule", id="does-not-exist")
                    rt.append((time.perf_counter() - a) * 1000)
                out["http_get_404_ms"] = distribution(rt)
                out["reschedule_ms"] = _reschedule_latencies(client, [b["id"] for b in bodies])
    finally:
        tap.uninstall()
    return out


def _reschedule_latencies(client: SchedulerClient, ids: list[str]) -> dict:
    """``PATCH /schedules/{id}`` latency by kind (:data:`RESCHEDULES`), each on its own share of ``ids``."""
    out: dict = {}
    share = len(ids) // len(RESCHEDULES)
    for k, (kind, body) in enumerate(RESCHEDULES.items()):
        lat = []
        for schedule_id in ids[k * share:(k + 1) * share]:
            a = time.perf_counter()
            status, answer = client.raw("rescheduleSchedule", body, id=schedule_id)
            lat.append((time.perf_counter() - a) * 1000)
            assert status == 200, answer
        out[kind] = distribution(lat)
    return out


def _engine_run(n: int, tag: str) -> dict:
    res: dict = {}
    for mode in ("single", "concurrent", "batch", "batch_concurrent"):
        r = _fresh_engine_rate(mode, n, tag)
        res[f"{mode}_per_s"] = r["per_s"]
        res[f"{mode}_detail"] = r
        if mode == "single":
            res["single_latency_ms"] = r["request_latency_ms"]
            res["handler_direct_create_ms"] = r["handler_direct_create_ms"]
            res["http_get_404_ms"] = r["http_get_404_ms"]
            res["reschedule_ms"] = r["reschedule_ms"]
    res["concurrent_5xx"] = res["concurrent_detail"]["retries_after_5xx"]
    res["batch_failed_requests"] = res["batch_detail"]["failed_requests"]
    res["batch_concurrent_failed_requests"] = res["batch_concurrent_detail"]["failed_requests"]
    return res


def run(repeats: int, n: int) -> dict:
    out: dict = {"n": n, "concurrency": CONCURRENCY, "batch": BATCH, "runs": []}
    for r in range(repeats):
        log(f"ingest {r + 1}/{repeats}: {n} creates per mode, each mode in a fresh engine")
        res = _engine_run(n, f"i{r}")
        log(f"  single {res['single_per_s']:.1f}/s, {CONCURRENCY} clients {res['concurrent_per_s']:.1f}/s, "
            f"batches of {BATCH}: {res['batch_per_s']:.1f}/s from 1 client, {res['batch_concurrent_per_s']:.1f}/s from "
            f"{CONCURRENCY}; GET-404 round trip p50 {res['http_get_404_ms']['p50']:.0f} ms, "
            f"handler alone p50 {res['handler_direct_create_ms']['p50']:.0f} ms")
        out["runs"].append(res)
    return out
