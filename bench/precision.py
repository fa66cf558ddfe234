"""Precision: N timers, each due a random 2-22 s after its creation, created while the run is under way.

Timers are created through the HTTP API the way a live system receives them: each at its
own moment, from 6 clients, due ``lead_s`` (uniform, 2-22 s by default) after it. Two runs
of it:

- **default window** (the construct's 870 s), as a new user runs the engine: every timer is
  **short** (the api sends it straight to the delayer queue);
- **5 s window, 1 s sweeps**: timers due more than 5 s ahead are **long** (they wait as
  timer items until a sweep claims them, and the enqueuer sends them on), so both paths run.

A third set runs the default window with each delivery lever (``LEVERS``): the dispatcher mapping's
batching window and a larger batch (the engine's poller gathers as the mapping does, and messages
are sent to surface that much early), ``SECOND`` precision, and both.

A fourth set runs in pairs: the default window's workload (the same seed) without outcome events and
with them (a recorder as the outcomes target, every kind), one right after the other,
the order alternating from pair to pair, so that both meet the same machine state.

The path each timer actually took is read from the runtime's ``created`` log (its status:
QUEUED or SCHEDULED), not assumed. Lateness is measured at the target: receive wall time
minus ``dueAt``.
"""

from __future__ import annotations

import collections
import random
import threading
import time

from .common import BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, api_client, distribution, log

from scheduler_runtime.core.contract import OUTCOME_KINDS  # noqa: E402  (bench.common puts lambda/ on the path)

MIXED_WINDOW_S = 5
LEVERS = (
    ("batching window 1 s, batch 100", {"dispatcher_max_batching_window": 1, "dispatcher_batch_size": 100}),
    ("SECOND precision", {"precision": "SECOND"}),
    ("SECOND precision, batching window 1 s, batch 100",
     {"precision": "SECOND", "dispatcher_max_batching_window": 1, "dispatcher_batch_size": 100}),
)
"""(label, engine options) of each delivery lever measured beside the defaults."""
SWEEP_S = 1.0
WORKERS = 6


def run_once(n: int, span_s: float, seed: int, counter=None, dispatcher_max_concurrency: int | None = None,
             profile: bool = False, lead_s: tuple[float, float] = (2.0, 22.0), window_s: int | None = None,
             options: dict | None = None, outcomes: Collector | None = None) -> dict:
    """One run; ``outcomes``: a recorder that receives every kind of outcome event (``EngineOptions.outcomes``)."""
    rng = random.Random(seed)
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    tap.install()
    opts = EngineOptions(target=collector, sweep_interval=SWEEP_S)
    if window_s:
        opts.delay_window = window_s
    if dispatcher_max_concurrency:
        opts.dispatcher_max_concurrency = dispatcher_max_concurrency
    if outcomes is not None:
        opts.outcomes, opts.outcome_kinds = outcomes, OUTCOME_KINDS
    for name, value in (options or {}).items():
        setattr(opts, name, value)
    opts.__post_init__()  # the options' own checks, for the levers set after construction
    try:
        with BenchEngine(opts, times) as eng:
            client = api_client(eng.api_url)
            client.raw("createSchedule", {"delaySeconds": 0, "payload": {"warm": True}})
            collector.wait_for(1, 30)
            base = collector.count()
            start = time.time()
            t0 = start + lead_s[1] + 1.0
            plan = []
            for i in range(n):
                due = t0 + span_s * i / n + rng.random() * span_s / n
                lead = rng.uniform(*lead_s)
                plan.append((due - lead, f"p-{seed}-{i:05d}", due, "short" if lead <= opts.delay_window else "long"))
            plan.sort()
            intended = {sid: path for _, sid, _, path in plan}
            created_lag: list[float] = []
            created_times: list = []
            retries = [0]
            lock = threading.Lock()
            queue = list(reversed(plan))

            def worker() -> None:
                while True:
                    with lock:
                        if not queue:
                            return
                        create_at, sid, due, _ = queue.pop()
                    wait = create_at - time.time()
                    if wait > 0:
                        time.sleep(wait)
                    attempts = client.raw("createSchedule", {"id": sid, "dueAt": round(due, 3),
                                                             "payload": {"bench": "precision"}}).attempts
                    with lock:
                        created_lag.append(time.time() - create_at)
                        created_times.append((sid, time.time()))
                        retries[0] += attempts - 1

            if counter is not None:
                counter.reset()
                counter.enabled = True
            prof = None
            if profile:
                from .profiler import Profiler

                prof = Profiler(interval=0.02)
                prof.start()
            threads = [threading.Thread(target=worker, daemon=True) for _ in range(WORKERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            last_due = max(d for _, _, d, _ in plan)
            collector.wait_for(base + n, max(1.0, last_due + 30 - time.time()))
            if outcomes is not None:  # the warm-up's and every timer's outcome event
                outcomes.wait_for(1 + n, 30)
            if prof:
                prof.stop()
            if counter is not None:
                counter.enabled = False
            by_path: dict[str, list[float]] = {"short": [], "long": []}
            seen = set()
            early = {"short": 0, "long": 0}
            for sid, _, late in collector.lateness():
                if not sid.startswith(f"p-{seed}-"):
                    continue
                path = tap.path_of.get(sid, "unknown")
                by_path.setdefault(path, []).append(late)
                if late < 0:
                    early[path] = early.get(path, 0) + 1
                seen.add(sid)
            # Where the late ones lost their time: each stage's instant relative to dueAt (s).
            due_of = {sid: due for _, sid, due, _ in plan}
            created_at = dict(created_times)
            series, stages = [], []
            for sid, received, late in collector.lateness():
                if sid not in due_of:
                    continue
                st = tap.stage_times.get(sid, {})
                due = due_of[sid]
                rel = lambda t: None if t is None else round(t - due, 4)  # noqa: E731
                path = tap.path_of.get(sid, "unknown")
                # A short timer is enqueued by its create (the api sends it, then logs `created`).
                enqueued = st.get("enqueued") or (st.get("created") if path == "short" else None)
                row = {"late_ms": round(late, 1), "path": path,
                       "created": rel(created_at.get(sid)), "claimed": rel(st.get("claimed")),
                       "enqueued": rel(enqueued), "fired_late_ms": st.get("firedLateMs")}
                stages.append(row)
                series.append((round(due - t0, 3), round(late, 1), row["path"]))
            stages.sort(key=lambda r: -r["late_ms"])
            tail = stages[: max(1, len(stages) // 100)]

            def med(key: str, rows: list) -> float | None:
                v = sorted(r[key] for r in rows if r.get(key) is not None)
                return v[len(v) // 2] if v else None

            late_rows = [r for r in stages if r["late_ms"] > 100]
            stage_summary = {
                "slowest_1pct": {k: med(k, tail) for k in ("late_ms", "created", "claimed", "enqueued", "fired_late_ms")},
                "all": {k: med(k, stages) for k in ("late_ms", "created", "claimed", "enqueued", "fired_late_ms")},
                "late_over_100ms": len(late_rows),
                "late_over_100ms_enqueued_after_due_minus_1s": sum(
                    1 for r in late_rows if r["enqueued"] is not None and r["enqueued"] > -1.0),
                "late_over_100ms_fired_late_over_100ms": sum(
                    1 for r in late_rows if (r["fired_late_ms"] or 0) > 100),
                "slowest_10": stages[:10],
            }
            mismatched = sum(1 for sid, path in intended.items() if sid in tap.path_of and tap.path_of[sid] != path)
            all_late = [x for v in by_path.values() for x in v]
            return {
                "n": n,
                "delivered": len(seen),
                "undelivered": n - len(seen),
                "by_path": {p: {**distribution(v), "early": early.get(p, 0)} for p, v in by_path.items() if v},
                "all": {**distribution(all_late), "early": sum(early.values())},
                "path_differs_from_plan": mismatched,
                "create_lag_s": distribution(created_lag),
                "create_retries_5xx": retries[0],
                "errors": dict(tap.errors),
                "error_samples": tap.error_samples,
                "moto_errors": tap.moto_errors,
                "moto_error_samples": tap.moto_error_samples,
                "put_back": eng.stats.events["put_back"],
                "dispatcher_fired_late_ms": distribution(eng.stats.lateness_ms),
                "duplicates": sum(1 for c in collections.Counter(
                    sid for sid, _, _ in collector.lateness() if sid in due_of).values() if c > 1),
                "series": series,
                "stages": stage_summary,
                "handler_ms": {k: distribution(v) for k, v in times.durations.items()},
                "handler_records": {k: distribution(v) for k, v in times.records.items()},
                "wall_s": time.time() - start,
                **({"profile": prof.report()} if prof else {}),
                **({"outcomes": _outcomes(outcomes, collector, set(due_of))} if outcomes is not None else {}),
            }
    finally:
        tap.uninstall()


def _outcomes(recorder: Collector, deliveries: Collector, ids: set[str]) -> dict:
    """The outcome events of ``ids`` a run's recorder received: how many, of which kinds, and how long after its
    delivery reached the target each arrived (ms)."""
    delivered = {sid: t for sid, t, _ in deliveries.lateness() if sid in ids}
    with recorder.lock:
        events = [(t, e) for t, e in recorder.received if e.get("id") in ids]
    return {"events": len(events), "kinds": dict(collections.Counter(e["outcome"] for _, e in events)),
            "after_delivery_ms": distribution((t - delivered[e["id"]]) * 1000 for t, e in events if e["id"] in delivered)}


def run_outcome_pairs(repeats: int, n: int, span_s: float, lead_s: tuple[float, float]) -> list[dict]:
    """``repeats`` pairs of the default window's workload, without outcome events and with them (a recorder, every
    kind), in turn; the first of each pair alternates."""
    pairs = []
    for r in range(repeats):
        pair: dict = {}
        for on in ((False, True) if r % 2 == 0 else (True, False)):
            log(f"precision, outcomes {'on' if on else 'off'} (pair {r + 1}/{repeats}): {n} timers over {span_s:.0f} s")
            res = run_once(n, span_s, seed=r + 1, lead_s=lead_s, outcomes=Collector() if on else None)
            res.pop("series")
            a = res["all"]
            log(f"  delivered {res['delivered']}/{n}; p50 {a.get('p50', 0):.0f} p99 {a.get('p99', 0):.0f} "
                f"max {a.get('max', 0):.0f} ms; early {a['early']}"
                + (f"; {res['outcomes']['events']} outcome events" if on else ""))
            pair["on" if on else "off"] = res
        pairs.append(pair)
    return pairs


def run(repeats: int, n: int, span_s: float, lead_s: tuple[float, float] = (2.0, 22.0), mixed_repeats: int = 1,
        lever_repeats: int | None = None, outcome_repeats: int | None = None) -> dict:
    """The run sets; each lever runs ``lever_repeats`` times, and the outcome pairs ``outcome_repeats`` (default:
    ``repeats``)."""
    lever_repeats = repeats if lever_repeats is None else lever_repeats
    outcome_repeats = repeats if outcome_repeats is None else outcome_repeats
    out: dict = {"n": n, "span_s": span_s, "lead_s": list(lead_s), "window_s": None, "mixed_window_s": MIXED_WINDOW_S,
                 "sweep_interval_s": SWEEP_S, "runs": [], "mixed_runs": [], "outcome_kinds": list(OUTCOME_KINDS),
                 "lever_runs": [{"lever": label, "options": options, "runs": []} for label, options in LEVERS]}
    sets = [("runs", repeats, None, None, out["runs"]), ("mixed_runs", mixed_repeats, MIXED_WINDOW_S, None, out["mixed_runs"])]
    sets += [(lever["lever"], lever_repeats, None, lever["options"], lever["runs"]) for lever in out["lever_runs"]]
    for label, count, window, options, into in sets:
        for r in range(count):
            log(f"precision {r + 1}/{count}: {n} timers, each due {lead_s[0]:.0f}-{lead_s[1]:.0f} s after its create, "
                f"over {span_s:.0f} s; window {window or 'default'}" + (f"; {label}" if options else ""))
            res = run_once(n, span_s, seed=r + 1, profile=(r == 0 and label == "runs"), lead_s=lead_s, window_s=window,
                           options=options)
            a = res["all"]
            log(f"  delivered {res['delivered']}/{n}; p50 {a.get('p50', 0):.0f} p99 {a.get('p99', 0):.0f} "
                f"max {a.get('max', 0):.0f} ms; early {a['early']}; by path "
                + ", ".join(f"{p} p99 {v.get('p99', 0):.0f}" for p, v in res["by_path"].items()))
            if options:  # the plots read the default sets' series only
                res.pop("series")
            into.append(res)
    out["outcome_pairs"] = run_outcome_pairs(outcome_repeats, n, span_s, lead_s)
    return out
