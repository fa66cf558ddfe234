"""Shared harness: an instrumented engine, a collecting target, an API client, counters, statistics.

Everything here observes the engine from the outside or through its public
options. The only intrusions are bench-process-only wrappers: each handler is
wrapped to time its invocations and the EMF metric sink to measure its lines
(``BenchEngine._load_handlers``); ``bench.meter.RequestCounter`` wraps
``botocore.client.BaseClient._make_api_call`` to count AWS requests. None of
them changes what the runtime does.
"""

from __future__ import annotations

import collections
import logging
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
for _p in (ROOT / "src", ROOT / "lambda"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from cdk_delayed_scheduler.client import Answer, SchedulerClient  # noqa: E402
from cdk_delayed_scheduler.local import Engine, EngineOptions  # noqa: E402

from scheduler_runtime.core.timeparse import parse_rfc3339  # noqa: E402

from scheduler_runtime.core.contract import MAX_BATCH_SIZE as BATCH_SIZE  # noqa: E402  (the batch endpoint's limit)


# --- statistics ----------------------------------------------------------------
def percentile(sorted_values: list, q: float) -> float:
    """Nearest-rank percentile of an already sorted list (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(q / 100 * len(sorted_values) + 0.5)) - 1))
    return float(sorted_values[k])


def distribution(values: Iterable[float]) -> dict:
    v = sorted(values)
    if not v:
        return {"n": 0}
    return {
        "n": len(v),
        "min": v[0],
        "p50": percentile(v, 50),
        "p90": percentile(v, 90),
        "p99": percentile(v, 99),
        "max": v[-1],
        "mean": statistics.fmean(v),
    }


def spread(values: Iterable[float]) -> dict:
    """min / median / max of the repeats of one figure."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"min": None, "median": None, "max": None, "runs": []}
    return {"min": v[0], "median": statistics.median(v), "max": v[-1], "runs": list(values)}


# --- the target --------------------------------------------------------------------
class Collector:
    """The delivery target: records the wall time each envelope arrives."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[tuple[float, dict]] = []
        self._cond = threading.Condition(self.lock)

    def __call__(self, envelope: dict) -> None:
        t = time.time()
        with self._cond:
            self.received.append((t, envelope))
            self._cond.notify_all()

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def wait_for(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.received) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return True

    def lateness(self) -> list[tuple[str, float, float]]:
        """``(id, receive time, lateness ms)`` per delivery: receive wall time minus dueAt."""
        with self.lock:
            items = list(self.received)
        return [(e["id"], t, t * 1000 - parse_rfc3339(e["dueAt"])) for t, e in items]


# --- logs: claims by path, errors --------------------------------------------------------
PATH_OF_STATUS = {"QUEUED": "short", "SCHEDULED": "long"}
"""The path a create took, by the status its ``created`` event logged: ``short`` (sent straight
to the delayer queue, due within the window) or ``long`` (a timer item, claimed by a sweep)."""


class LogTap(logging.Handler):
    """Reads the runtime's structured logs: each id's path and stage times; counts errors and moto 500s."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.path_of: dict[str, str] = {}  # id -> "short" | "long", from the runtime's `created` event
        self.claimed_by: dict[str, str] = {}
        self.stage_times: dict[str, dict] = {}  # id -> {claimed, enqueued, delivered: wall time; firedLateMs}
        self.errors: collections.Counter = collections.Counter()
        self.error_samples: list[str] = []
        self.moto_errors = 0
        self.moto_error_samples: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event in ("created", "claimed", "enqueued", "delivered"):
            fields = getattr(record, "fields", {})
            with self._lock:
                if event == "created":
                    self.path_of.setdefault(fields.get("id", "?"), PATH_OF_STATUS.get(fields.get("status"), "unknown"))
                stages = self.stage_times.setdefault(fields.get("id", "?"), {})
                stages.setdefault(event, record.created)
                if event == "delivered":
                    stages["firedLateMs"] = fields.get("lateMs")
                if event == "claimed":
                    self.claimed_by.setdefault(fields["id"], fields.get("by", "?"))
            return
        if record.name == "werkzeug":
            if record.levelno >= logging.ERROR:
                with self._lock:
                    self.moto_errors += 1
                    if len(self.moto_error_samples) < 3 and record.exc_info:
                        exc = record.exc_info[1]
                        self.moto_error_samples.append(f"{type(exc).__name__}: {exc}")
            return
        if record.levelno >= logging.WARNING:
            key = f"{record.name}: {event or str(record.msg)[:80]}"  # the format string: one key per kind
            with self._lock:
                self.errors[key] += 1
                if len(self.error_samples) < 5 and record.exc_info:
                    exc = record.exc_info[1]
                    self.error_samples.append(f"{record.getMessage()[:100]} <- {type(exc).__name__}: {str(exc)[:200]}")

    def install(self) -> None:
        for name in ("scheduler_runtime", "cdk_delayed_scheduler.local", "werkzeug"):
            lg = logging.getLogger(name)
            lg.addHandler(self)
            lg.propagate = False

    def uninstall(self) -> None:
        for name in ("scheduler_runtime", "cdk_delayed_scheduler.local", "werkzeug"):
            lg = logging.getLogger(name)
            lg.removeHandler(self)
            # Work still running after an engine stopped (a long sweep's claim threads) logs connection
            # errors against the stopped moto; between runs that is noise, not a finding of the next run.
            if not any(isinstance(h, logging.NullHandler) for h in lg.handlers):
                lg.addHandler(logging.NullHandler())


# --- handler timing -----------------------------------------------------------------
OUTCOME_MESSAGE_PREFIX = '{"outcome":'
"""How an outcome event's delayer message begins, as ``scheduler_runtime.core.outcomes.message_body`` writes it."""


class HandlerTimes:
    """Per function: invocations, wall duration of each, records per invocation and how many of them were outcome
    events' messages (in step, index by index), the sweeper's claims per sweep, and the byte length of each EMF
    metric line written."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.durations: dict[str, list[float]] = collections.defaultdict(list)
        self.records: dict[str, list[int]] = collections.defaultdict(list)
        self.claimed: dict[str, list[int | None]] = collections.defaultdict(list)
        self.outcome_records: dict[str, list[int]] = collections.defaultdict(list)
        self.metric_lines: list[int] = []
        self.enabled = True

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(event: Any, context: Any = None) -> Any:
            start = time.perf_counter()
            result = None
            try:
                result = fn(event, context)
                return result
            finally:
                if self.enabled:
                    elapsed = (time.perf_counter() - start) * 1000
                    records = event.get("Records", []) if isinstance(event, dict) and "Records" in event else None
                    n = 1 if records is None else len(records)
                    outcomes = sum(1 for r in records or () if str(r.get("body", "")).startswith(OUTCOME_MESSAGE_PREFIX))
                    with self.lock:
                        self.durations[name].append(elapsed)
                        self.records[name].append(n)
                        self.outcome_records[name].append(outcomes)
                        self.claimed[name].append(  # in step with durations; None when not a sweep's answer
                            int(result["claimed"]) if isinstance(result, dict) and "claimed" in result else None)

        return timed

    def metric_line(self, line: str) -> None:
        if self.enabled:
            with self.lock:
                self.metric_lines.append(len(line.encode("utf-8")))

    def reset(self) -> None:
        with self.lock:
            self.durations.clear()
            self.records.clear()
            self.claimed.clear()
            self.outcome_records.clear()
            self.metric_lines.clear()


class BenchEngine(Engine):
    """The engine, unchanged, with each handler wrapped to time its invocations."""

    def __init__(self, options: EngineOptions, times: HandlerTimes) -> None:
        super().__init__(options)
        self.times = times

    def _load_handlers(self) -> dict:
        handlers = super()._load_handlers()
        from scheduler_runtime import observability

        engine_sink = observability._metric_sink  # the engine's (a debug log line); EMF lines are also measured

        def sink(line: str) -> None:
            self.times.metric_line(line)
            engine_sink(line)

        observability.set_metric_sink(sink)
        return {name: self.times.wrap(name, fn) for name, fn in handlers.items()}


# --- the HTTP API client ---------------------------------------------------------------
def api_client(api_url: str, timeout_seconds: float = 60.0) -> SchedulerClient:
    """The engine's API for raw calls (:meth:`SchedulerClient.raw`, each answered ``(status, body)`` with its
    ``attempts``): unsigned, over kept-alive connections shared by the threads (10 at most); a 429 or a 5xx is
    sent again, up to 5 attempts in all (the API says it may be)."""
    return SchedulerClient(api_url, sign=False, max_attempts=5, backoff_base=0.05, timeout=timeout_seconds)


def item_statuses(answer: Answer) -> list[int]:
    """A ``createScheduleBatch`` answer's statuses, one per item in request order (none when the call failed)."""
    return [item.get("status") for item in answer.body.get("results", [])] if answer.status == 200 else []


# --- per-thread CPU (Linux /proc), to name the limiter ----------------------------------------
def thread_cpu_seconds() -> dict[int, float]:
    """CPU seconds (user + system) per native thread id of this process."""
    out: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    base = Path("/proc/self/task")
    for task in base.iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return out


def process_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def machine() -> dict:
    info = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gb"] = round(int(mem) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        import boto3
        import moto

        info["moto"] = moto.__version__
        info["boto3"] = boto3.__version__
    except ImportError:
        pass
    return info


LOOP = ("import time\nt = time.perf_counter()\ntotal = 0\nfor i in range(10_000_000):\n    total += i\n"
        "print(time.perf_counter() - t)\n")
"""The machine-speed reference: a pure-Python loop of 10 million additions, as ``python -c`` runs it."""
LOOP_REFERENCE_S = 0.6
"""``LOOP``'s seconds on the machine that the limits of the test suite and of the engine are read against."""


def loop_seconds(repeats: int = 3) -> dict:
    """``LOOP``'s seconds in ``repeats`` fresh interpreters, and their median."""
    import subprocess

    times = [float(subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, check=True).stdout)
             for _ in range(repeats)]
    return {"median_s": statistics.median(times), "runs": times}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)
