"""Ingest: schedules per second through the local engine's HTTP API.

- single: one client, one keep-alive connection, POSTs one after another;
- concurrent: 8 clients POSTing at once;
- batch: ``POST /schedule-batches`` with 25 schedules per request, from one
  client and from 8.

Timers are due in a day, beyond the (default 900 s) window, so they rest in the
table and the measurement is the create path only (the fast-track handler
still reads each INSERT and declines it, as it would in AWS).

Two diagnostics are measured beside the rates: the api handler called directly
(no HTTP), and a ``GET`` of an unknown id over HTTP, to separate the HTTP
layer's cost from the handler's.
"""

from __future__ import annotations

import json
import threading
import time

from .common import ApiClient, BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, distribution, log

CONCURRENCY = 8
BATCH = 25  # POST /schedule-batches takes 1-25 schedules


def _engine_run(n_single: int, n_concurrent: int, tag: str, nodelay: bool = False) -> dict:
    from cdk_delayed_scheduler.local import servers

    previous = getattr(servers._QuietHandler, "disable_nagle_algorithm", False)
    if nodelay:  # a what-if, bench process only: TCP_NODELAY on the engine's HTTP servers
        servers._QuietHandler.disable_nagle_algorithm = True
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    tap.install()
    out: dict = {}
    try:
        with BenchEngine(EngineOptions(target=collector), times) as eng:
            client = ApiClient(eng.api_url)
            due = time.time() + 86_400
            client.create({"payload": {"warm": True}, "dueAt": due})
            # single client
            lat = []
            start = time.perf_counter()
            for i in range(n_single):
                a = time.perf_counter()
                status, _ = client.create({"id": f"{tag}-s-{i}", "dueAt": due, "payload": {"i": i}})
                lat.append((time.perf_counter() - a) * 1000)
            elapsed = time.perf_counter() - start
            out["single_per_s"] = n_single / elapsed
            out["single_latency_ms"] = distribution(lat)
            if n_concurrent:
                # concurrent clients
                before = dict(client.status)
                next_i = [0]
                lock = threading.Lock()
                retries = [0]

                def worker() -> None:
                    while True:
                        with lock:
                            i = next_i[0]
                            next_i[0] += 1
                        if i >= n_concurrent:
                            return
                        _, attempts = client.create({"id": f"{tag}-c-{i}", "dueAt": due, "payload": {"i": i}})
                        if attempts > 1:
                            with lock:
                                retries[0] += attempts - 1

                threads = [threading.Thread(target=worker, daemon=True) for _ in range(CONCURRENCY)]
                start = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                elapsed = time.perf_counter() - start
                out["concurrent_per_s"] = n_concurrent / elapsed
                out["concurrent_5xx"] = sum(v for k, v in client.status.items() if k >= 500) - sum(
                    v for k, v in before.items() if k >= 500)
                out["concurrent_retries"] = retries[0]
                out["moto_errors"] = tap.moto_errors
                out["moto_error_samples"] = tap.moto_error_samples
            # the batch endpoint: POST /schedule-batches, 25 per request, from one client and from 8
            for clients, key in ((1, "batch"), (CONCURRENCY, "batch_concurrent")):
                n_batch = n_concurrent or n_single
                chunks = [[{"id": f"{tag}-{key}-{i}", "dueAt": due, "payload": {"i": i}}
                           for i in range(k, min(k + BATCH, n_batch))] for k in range(0, n_batch, BATCH)]
                bad = [0]
                lock = threading.Lock()

                def send_batches(my_chunks: list) -> None:
                    for chunk in my_chunks:
                        status, items = client.create_batch(chunk)
                        if status != 200 or any(st not in (200, 201) for st in items):
                            with lock:
                                bad[0] += 1

                start = time.perf_counter()
                threads = [threading.Thread(target=send_batches, args=(chunks[c::clients],), daemon=True)
                           for c in range(clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                out[f"{key}_per_s"] = n_batch / (time.perf_counter() - start)
                out[f"{key}_failed_requests"] = bad[0]
            # diagnostics: the handler without HTTP, and the HTTP layer without DynamoDB work
            from scheduler_runtime.handlers import api as api_module

            direct = []
            for i in range(50):
                event = {"httpMethod": "POST", "path": "/schedules", "headers": {}, "pathParameters": None,
                         "body": json.dumps({"id": f"{tag}-d-{i}", "dueAt": due, "payload": {"i": i}})}
                a = time.perf_counter()
                api_module.handler(event, None)
                direct.append((time.perf_counter() - a) * 1000)
            out["handler_direct_create_ms"] = distribution(direct)
            rt = []
            for i in range(50):
                a = time.perf_counter()
                client.request("GET", "/schedules/does-not-exist")
                rt.append((time.perf_counter() - a) * 1000)
            out["http_get_404_ms"] = distribution(rt)
            out["table_items_at_end"] = 2 * (n_single + 3 * n_concurrent + 51)
    finally:
        tap.uninstall()
        servers._QuietHandler.disable_nagle_algorithm = previous
    return out


def run(repeats: int, n_single: int, n_concurrent: int) -> dict:
    out: dict = {"n_single": n_single, "n_concurrent": n_concurrent, "concurrency": CONCURRENCY, "batch": BATCH,
                 "runs": []}
    for r in range(repeats):
        log(f"ingest {r + 1}/{repeats}: {n_single} sequential POSTs, {n_concurrent} from {CONCURRENCY} clients")
        res = _engine_run(n_single, n_concurrent, f"i{r}")
        log(f"  single {res['single_per_s']:.1f}/s, concurrent {res['concurrent_per_s']:.1f}/s, "
            f"batches of {BATCH}: {res['batch_per_s']:.1f}/s from 1 client, {res['batch_concurrent_per_s']:.1f}/s from {CONCURRENCY} "
            f"({res['concurrent_5xx']} answers 5xx), GET-404 round trip p50 {res['http_get_404_ms']['p50']:.0f} ms, "
            f"handler alone p50 {res['handler_direct_create_ms']['p50']:.0f} ms")
        out["runs"].append(res)
    from cdk_delayed_scheduler.local import servers

    if getattr(servers._QuietHandler, "disable_nagle_algorithm", False):
        return out  # the engine sets TCP_NODELAY itself (since a0271a4): nothing to ask "what if" about
    log("ingest what-if: the same single-client run with TCP_NODELAY on the engine's HTTP servers (bench-side patch)")
    res = _engine_run(n_single, 0, "nd", nodelay=True)
    log(f"  single {res['single_per_s']:.1f}/s, GET-404 round trip p50 {res['http_get_404_ms']['p50']:.0f} ms")
    out["what_if_nodelay"] = res
    return out
