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
from .loader import load_short
from .profiler import Profiler


class BurstEngine(BenchEngine):
    """Writes the burst's items right after the table is created, before any poller starts."""

    def __init__(self, options: EngineOptions, times: HandlerTimes, bodies: list[dict]) -> None:
        super().__init__(options, times)
        self._bodies = bodies
        self.load_s = 0.0
        self.loaded_at = 0.0

    def _load_handlers(self) -> dict:  # the table and the queue exist; no poller runs yet
        handlers = super()._load_handlers()
        self.load_s = load_short(self, self._bodies)
        self.loaded_at = time.time()
        return handlers


def run_once(n: int, lead_s: float, cap_s: float, profile: bool, counter=None) -> dict:
    """Create n timers at once (bulk-written before the pollers start), due lead_s later, in one second."""
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    tap.install()
    due_s = float(int(time.time() + 3 + n / 400 + lead_s))  # the load runs at roughly 400-1,000 timers/s here
    bodies = [{"id": f"burst-{i:05d}", "dueAt": due_s + (i * 1000 // n) / 1000, "payload": {"i": i}} for i in range(n)]
    # the defaults: the construct's window (870 s), 60 s sweeps, the engine's dispatcher concurrency
    opts = EngineOptions(target=collector)
    result: dict = {"n": n, "due_at_epoch_s": due_s, "path": "short", "delay_window_s": opts.delay_window,
                    "dispatcher_workers": opts.dispatcher_max_concurrency}
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


def run(repeats: int, sizes: list[int], lead_s: float, cap_s: dict | float, capacity_s: float = 3.0) -> dict:
    from .engine import ceiling
    from .meter import RequestCounter

    caps = cap_s if isinstance(cap_s, dict) else {n: cap_s for n in sizes}
    out: dict = {"sizes": sizes, "lead_s": lead_s, "cap_s": caps, "by_size": {}}
    log("burst: moto's ceiling for the calls a delivery needs, in this run")
    out["ceiling"] = ceiling(capacity_s)
    log(f"  {out['ceiling']['deliveries_per_s']:.0f} deliveries/s ({out['ceiling']['calls_per_s']})")
    counter = RequestCounter()
    counter.install()
    for n in sizes:
        runs = []
        cap = float(caps[str(n)] if str(n) in caps else caps[n])
        for r in range(repeats):
            log(f"burst {n:,} {r + 1}/{repeats}: due in one second, created {lead_s:.0f} s before; cap {cap:.0f} s")
            res = run_once(n, lead_s, cap, profile=(r == 0), counter=counter)
            res["rate_over_ceiling"] = (res["delivered_rate_per_s"] or 0) / out["ceiling"]["deliveries_per_s"]
            p99 = res["lateness_ms"].get("p99", float("nan"))
            log(f"  delivered {res['delivered']}/{n} within {res['wall_s']:.0f} s of due; loaded in {res['load_s']:.1f} s; "
                f"rate {res['delivered_rate_per_s'] or 0:.1f}/s ({res['rate_over_ceiling']:.0%} of the ceiling); "
                f"last after {res['time_to_last_s'] or float('nan'):.1f} s; p99 {p99:.0f} ms")
            runs.append(res)
        out["by_size"][str(n)] = runs
    counter.uninstall()
    return out
