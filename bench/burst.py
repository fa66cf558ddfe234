"""Burst: N timers due in the same second, through the local engine with its default window.

The timers are due well within the window, so they are **short** timers: the API would send
each straight to the delayer queue and then write its record. The burst writes exactly that
before the engine's pollers start (SendMessageBatch of the messages, each delayed by the
whole seconds left when it is sent, and BatchWriteItem of the records, built by the
runtime's own validation, token and item code), because 10,000 creates through the API,
even through the batch endpoint, take minutes on moto (see the ingest section). Everything
after the write is the real pipeline: delayer queue (DelaySeconds) -> dispatcher -> Lambda
Invoke of the local target.

The due second is set far enough ahead that every message is in the queue before it; a run
where that did not happen is flagged, not hidden.
"""

from __future__ import annotations

import time

from .common import (
    BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, distribution, log,
)
from .profiler import Profiler


def bulk_load(engine: BenchEngine, bodies: list[dict]) -> float:
    """Send each body's delayer message, then write its record, as the API does for a short timer.

    Returns the seconds taken.
    """
    import boto3

    from scheduler_runtime.aws.store import ScheduleRecord
    from scheduler_runtime.core import keys, states
    from scheduler_runtime.core.envelope import TimerRef
    from scheduler_runtime.core.timeparse import now_ms
    from scheduler_runtime.core.validation import validate_create
    from scheduler_runtime.core.window import enqueue_delay_seconds

    ddb = boto3.client("dynamodb", endpoint_url=engine.endpoint_url, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=engine.endpoint_url, region_name="us-east-1")
    now = now_ms()
    start = time.monotonic()
    refs, records = [], []
    for body in bodies:
        req = validate_create(body, now, ["default"], "default")
        token = keys.new_token()
        refs.append(TimerRef(req.schedule_id, req.due_ms, token, now))
        records.append(ScheduleRecord(req.schedule_id, req.due_ms, req.payload_json, req.target, states.QUEUED, token,
                                      req.request_hash, now).to_item())
    for i in range(0, len(refs), 10):
        sent = now_ms()
        entries = [{"Id": str(k), "MessageBody": ref.to_message_body(),
                    "DelaySeconds": enqueue_delay_seconds(ref.due_ms, sent)} for k, ref in enumerate(refs[i : i + 10])]
        failed = sqs.send_message_batch(QueueUrl=engine.queue_url, Entries=entries).get("Failed")
        if failed:
            raise RuntimeError(f"burst load: SQS refused {len(failed)} messages")
    for i in range(0, len(records), 25):
        requests = {engine.table_name: [{"PutRequest": {"Item": it}} for it in records[i : i + 25]]}
        while requests:
            requests = ddb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or None
    return time.monotonic() - start


class BurstEngine(BenchEngine):
    """Writes the burst's items right after the table is created, before any poller starts."""

    def __init__(self, options: EngineOptions, times: HandlerTimes, bodies: list[dict]) -> None:
        super().__init__(options, times)
        self._bodies = bodies
        self.load_s = 0.0
        self.loaded_at = 0.0

    def _provision(self, session) -> None:  # noqa: ANN001
        super()._provision(session)
        self.load_s = bulk_load(self, self._bodies)
        self.loaded_at = time.time()


def run_once(n: int, lead_s: float, cap_s: float, profile: bool, counter=None) -> dict:
    """Create n timers at once (bulk-written before the pollers start), due lead_s later, in one second."""
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    tap.install()
    due_s = float(int(time.time() + 3 + n / 700 + lead_s))  # the load runs at roughly 700-1,000 timers/s here
    bodies = [{"id": f"burst-{i:05d}", "dueAt": due_s + (i * 1000 // n) / 1000, "payload": {"i": i}} for i in range(n)]
    # the defaults: the construct's window (870 s), 60 s sweeps, 4 concurrent dispatcher invocations
    opts = EngineOptions(target=collector)
    result: dict = {"n": n, "due_at_epoch_s": due_s, "path": "short", "delay_window_s": opts.delay_window,
                    "dispatcher_workers": opts.dispatcher_workers}
    try:
        eng = BurstEngine(opts, times, bodies)
        eng.start()
        try:
            result["load_s"] = eng.load_s
            result["lead_s"] = due_s - eng.loaded_at
            prof = Profiler() if profile else None
            if prof:
                prof.start()
            if counter is not None:
                counter.reset()
                counter.enabled = True
            counted_from = time.monotonic()
            deadline = due_s + cap_s
            while time.time() < deadline and collector.count() < n:
                time.sleep(0.05)
            t_end = time.time()
            if counter is not None:
                counter.enabled = False
                calls = counter.snapshot()
                seconds = time.monotonic() - counted_from
                moto_calls = sum(k for (c, svc, op, tag), k in calls.items() if svc != "lambda")
                by_op: dict = {}
                for (c, svc, op, tag), k in calls.items():
                    by_op[f"{svc} {op}{' ' + tag if tag else ''}"] = by_op.get(f"{svc} {op}{' ' + tag if tag else ''}", 0) + k
                result["aws_requests"] = {"to_moto": moto_calls, "seconds": seconds,
                                          "moto_requests_per_s": moto_calls / seconds if seconds else None,
                                          "lambda_invokes": sum(k for (c, svc, op, tag), k in calls.items() if svc == "lambda"),
                                          "by_operation": dict(sorted(by_op.items(), key=lambda kv: -kv[1]))}
            if prof:
                prof.stop()
            lat = collector.lateness()
            ids = [i for (i, _, _) in lat]
            after_due = sorted(t - due_s for _, t, _ in lat)
            lateness = [x for _, _, x in lat]
            delivered = len(set(ids))
            window = [t for t in after_due if t >= 0]
            rate = None
            if len(window) >= 2 and window[-1] > window[0]:
                rate = (len(window) - 1) / (window[-1] - window[0])
            result.update(
                delivered=delivered,
                complete=delivered >= n,
                cap_s=cap_s,
                duplicates=len(ids) - delivered,
                early=sum(1 for x in lateness if x < 0),
                time_to_last_s=(after_due[-1] if delivered >= n else None),
                delivered_rate_per_s=rate,
                projected_time_to_last_s=(after_due[-1] if delivered >= n else (n / rate if rate else None)),
                loaded_before_due=eng.loaded_at < due_s,
                lateness_ms=distribution(lateness),
                timeline_s=after_due,
                put_back=eng.stats.events["put_back"],
                errors=dict(tap.errors),
                error_samples=tap.error_samples,
                moto_errors=tap.moto_errors,
                moto_error_samples=tap.moto_error_samples,
                handler_ms={k: distribution(v) for k, v in times.durations.items()},
                handler_records={k: distribution(v) for k, v in times.records.items()},
                wall_s=t_end - due_s,
            )
            if prof:
                result["profile"] = prof.report()
        finally:
            eng.stop()
    finally:
        tap.uninstall()
    return result


def moto_capacity(seconds: float = 3.0) -> dict:
    """Requests per second moto answers here (GetItem on a small table), from 1 and from 8 threads."""
    import threading

    from scheduler_runtime.aws.context import current

    out = {}
    with BenchEngine(EngineOptions(target=Collector(), sweep_interval=3600), HandlerTimes()) as eng:
        ddb = current().dynamodb
        key = {"pk": {"S": "SCHEDULE#none"}, "sk": {"S": "RECORD"}}
        for threads in (1, 8):
            count = [0]
            lock = threading.Lock()
            stop = time.monotonic() + seconds

            def loop() -> None:
                while time.monotonic() < stop:
                    ddb.get_item(TableName=eng.table_name, Key=key)
                    with lock:
                        count[0] += 1

            ts = [threading.Thread(target=loop) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            out[f"get_item_per_s_{threads}_threads"] = count[0] / seconds
    return out


def run(repeats: int, n: int, lead_s: float, cap_s: float, capacity_s: float = 3.0) -> dict:
    from .meter import RequestCounter

    out: dict = {"n": n, "lead_s": lead_s, "cap_s": cap_s, "runs": []}
    log("burst: moto's request capacity on this machine (GetItem, idle engine)")
    out["moto_capacity"] = moto_capacity(capacity_s)
    log(f"  {out['moto_capacity']}")
    counter = RequestCounter()
    counter.install()
    for r in range(repeats):
        log(f"burst {r + 1}/{repeats}: {n} timers due in one second, created {lead_s:.0f} s before; cap {cap_s:.0f} s")
        res = run_once(n, lead_s, cap_s, profile=(r == 0), counter=counter)
        p99 = res["lateness_ms"].get("p99", float("nan"))
        log(f"  delivered {res['delivered']}/{n} within {res['wall_s']:.0f} s of due; loaded in {res['load_s']:.1f} s; "
            f"rate {res['delivered_rate_per_s'] or 0:.1f}/s; "
            f"projected last {res['projected_time_to_last_s'] or float('nan'):.0f} s; p99 {p99:.0f} ms")
        out["runs"].append(res)
    counter.uninstall()
    return out
