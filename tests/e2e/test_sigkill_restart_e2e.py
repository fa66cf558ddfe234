"""SIGKILL the engine mid-run, several times at seeded-random moments, against an AWS endpoint that
outlives it; restart it with the same ``--state-dir`` each time; nothing is lost.

The engine runs as a user runs it, ``cdk-delayed-scheduler local`` in a process of its own, against
a separate moto server (the engine's corrected one) that the test process keeps. Four clients create short timers (the delayer queue), long
ones (the sweeper: a 3 s window, 1 s sweeps), singly and in batches, and cancels some, while the
engine is killed and restarted. A call that got no answer because of a kill is retried, with the same
id and body, once the engine is back. Deliveries go to an HTTP recorder in the test process, which
outlives every kill. The checks are the chaos run's (``local/chaos_checks.py``).
"""

from __future__ import annotations

import collections
import heapq
import json
import random
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import boto3
import pytest

from cdk_delayed_scheduler.client import Answer, SchedulerClient
from cdk_delayed_scheduler.local import EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.chaos_checks import ChaosReport, ClientCalls, Planned, check_one_shots
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import external_moto, wait_until

pytestmark = pytest.mark.e2e
SEED = 7
KILLS = 3
WINDOW_S = 3  # --delay-window: timers due later than this at their create wait for the sweeper
DISPATCHER_TIMEOUT_S = 0.8  # --dispatcher-timeout: the delayer queue's visibility timeout is 6 times it (5 s):
# a delivery under way at a kill is received again after it
CLIENTS = 4
CALL_DEADLINE_S = 30  # a call still unanswered after this (the engine up) fails the test
PREFIX = EngineOptions().name_prefix


class KilledEngine:
    """``cdk-delayed-scheduler local`` in a process of its own, SIGKILLed and restarted on demand.

    ``api()`` waits while the engine is down; ``generation`` counts its starts.
    """

    def __init__(self, endpoint: str, state_dir: Path, target_url: str) -> None:
        self.args = [sys.executable, "-m", "cdk_delayed_scheduler.local.cli", "local", "--port", "0",
                     "--endpoint-url", endpoint, "--state-dir", str(state_dir), "--target-url", target_url,
                     "--delay-window", str(WINDOW_S), "--sweep-interval", "1", "--shard-count", "2",
                     "--dispatcher-timeout", str(DISPATCHER_TIMEOUT_S)]
        self.generation = 0
        self.stderr: list[str] = []
        self._process: subprocess.Popen | None = None
        self._api: SchedulerClient | None = None
        self._up = threading.Condition()

    def start(self) -> None:
        process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        for line in process.stderr:  # up to the start line, then the rest in the background
            self.stderr.append(line)
            match = re.search(r"API on (http://127\.0\.0\.1:\d+)", line)
            if match:
                break
        else:
            raise AssertionError(f"the engine did not start (exit {process.wait()}): {''.join(self.stderr[-20:])}")
        threading.Thread(target=self.stderr.extend, args=(process.stderr,), daemon=True).start()
        with self._up:
            self._process, self._api = process, raw_client(match.group(1), timeout_seconds=5)
            self.generation += 1
            self._up.notify_all()

    def kill(self) -> None:
        with self._up:
            process, self._process, self._api = self._process, None, None
        assert process is not None and process.poll() is None, f"the engine died: {''.join(self.stderr[-20:])}"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def api(self) -> SchedulerClient:
        with self._up:
            self._up.wait_for(lambda: self._api is not None, timeout=60)
            assert self._api is not None, "the engine did not come back"
            return self._api

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGTERM)
            self._process.wait(timeout=30)


class Client:
    """One client of the killed engine: every call retried until it gets an answer that is not a
    429 or a 5xx, with the same id and body; every answer an id got goes into the shared ``calls``."""

    def __init__(self, engine: KilledEngine, calls: ClientCalls, rng: random.Random) -> None:
        self.engine, self.calls, self.rng = engine, calls, rng
        self.timers: list[Planned] = []
        self._cancels: list[tuple[float, str]] = []  # (moment, id), a heap

    def _call(self, operation: str, body: Any = None, **parameters: str) -> Answer:
        """The call once, as it came: status ``None`` when a kill left it without an answer (refused, or cut short)."""
        return self.engine.api().raw(operation, body, **parameters)

    def _until_answered(self, call: Any) -> None:
        def answered() -> bool:
            if call():
                return True
            self.calls.retried += 1
            return False

        wait_until(answered, CALL_DEADLINE_S, "a final answer to a call")

    def create(self, group: list[Planned]) -> None:
        """Create the timers, one call each or in one batch; cancelled ones get a cancel moment."""
        now = time.time()
        for timer in group:
            self.calls.due_ms[timer.schedule_id] = due_ms = int((now + timer.offset_seconds) * 1000)
            if timer.kind == "cancel":
                heapq.heappush(self._cancels, (max(now, due_ms / 1000 - self.rng.uniform(0.3, 1.5)), timer.schedule_id))
        self.timers += group
        bodies = {t.schedule_id: {"id": t.schedule_id, "dueAt": self.calls.due_ms[t.schedule_id] / 1000,
                                  "payload": {"kind": t.kind}} for t in group}

        def attempt() -> bool:
            open_ = [i for i in bodies if not _final((self.calls.creates.get(i) or [None])[-1])]
            if len(group) == 1 and not group[0].batched:
                status, _ = self._call("createSchedule", bodies[open_[0]])
                self.calls.creates.setdefault(open_[0], []).append(status)
                return _final(status)
            status, answer = self._call("createScheduleBatch", {"schedules": [bodies[i] for i in open_]})
            results = answer.get("results") if status == 200 else None
            for n, schedule_id in enumerate(open_):
                self.calls.creates.setdefault(schedule_id, []).append(results[n]["status"] if results else status)
            return all(_final(self.calls.creates[i][-1]) for i in open_)

        self._until_answered(attempt)

    def cancel_due(self, until: float) -> None:
        """Send the cancels whose moment comes before ``until``, each at its moment."""
        while self._cancels and self._cancels[0][0] < until:
            moment, schedule_id = heapq.heappop(self._cancels)
            time.sleep(max(0.0, moment - time.time()))

            def attempt(schedule_id: str = schedule_id) -> bool:
                status, _ = self._call("cancelSchedule", id=schedule_id)
                self.calls.cancels.setdefault(schedule_id, []).append(status)
                return _final(status)

            self._until_answered(attempt)

    def drive(self, plan: Iterator[list[Planned]], creating: threading.Event) -> None:
        """Create the plan's groups one after another while ``creating`` is set, cancelling on the way;
        then send the cancels left."""
        for group in plan:
            if not creating.is_set():
                break
            self.cancel_due(time.time())
            self.create(group)
        self.cancel_due(float("inf"))


def _final(status: int | None) -> bool:
    return status is not None and status != 429 and status < 500


def _plan(rng: random.Random, prefix: str) -> Iterator[list[Planned]]:
    """Groups of timers to create: one alone, or five in a batch; short, long or to be cancelled."""
    kinds = (("short", 0.45, (0.5, WINDOW_S - 0.5)), ("long", 0.35, (WINDOW_S + 1, WINDOW_S + 6)),
             ("cancel", 0.2, (1.5, WINDOW_S + 5)))
    n = 0
    while True:
        batched = rng.random() < 0.3
        group = []
        for _ in range(5 if batched else 1):
            kind, _, (low, high) = rng.choices(kinds, weights=[share for _, share, _ in kinds])[0]
            group.append(Planned(f"{prefix}-{kind}-{n}", kind, rng.uniform(low, high), batched))
            n += 1
        yield group


def _recorder_server(recorder: Recorder, generation: Callable[[], int], generations: list) -> ThreadingHTTPServer:
    """The delivery target: records each envelope, and which engine start delivered it; answers 204."""

    class Record(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            envelope = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            generations.append(generation())
            recorder(envelope)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _quiet(endpoint: str) -> bool:
    """Nothing left that could still deliver: no message in the delayer queue (visible, delayed or in
    flight) and no timer item waiting for the sweeper."""
    session = boto3.session.Session(region_name="us-east-1")
    sqs, ddb = session.client("sqs", endpoint_url=endpoint), session.client("dynamodb", endpoint_url=endpoint)
    url = sqs.get_queue_url(QueueName=f"{PREFIX}-delayer")["QueueUrl"]
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    if any(int(counts[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
                                    "ApproximateNumberOfMessagesNotVisible")):
        return False
    items = ddb.scan(TableName=f"{PREFIX}-schedules", ProjectionExpression="pk")["Items"]  # tests may scan
    return not any(item["pk"]["S"].startswith("TIMER#") for item in items)


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory) -> tuple[ChaosReport, ClientCalls, list, Path]:
    rng = random.Random(SEED)
    recorder, generations, calls = Recorder(), [], ClientCalls()
    state_dir = tmp_path_factory.mktemp("engine-state")
    with external_moto() as endpoint:
        server = _recorder_server(recorder, lambda: engine.generation, generations)
        engine = KilledEngine(endpoint, state_dir, f"http://127.0.0.1:{server.server_address[1]}/deliver")
        clients = [Client(engine, calls, random.Random(rng.random())) for _ in range(CLIENTS)]
        creating = threading.Event()
        creating.set()
        drivers = [threading.Thread(target=c.drive, args=(_plan(random.Random(rng.random()), f"c{k}"), creating),
                                    daemon=True) for k, c in enumerate(clients)]
        try:
            engine.start()
            for driver in drivers:
                driver.start()
            for _ in range(KILLS):
                time.sleep(rng.uniform(1.5, 3.5))  # a seeded-random moment of this start's run
                engine.kill()
                engine.start()
            wait_until(lambda: engine.generation in generations, 30, "a delivery by the engine's last start")
            creating.clear()
            for driver in drivers:
                driver.join(timeout=60)
            assert not any(d.is_alive() for d in drivers), "a client did not finish"
            expected = {i for i, answers in calls.creates.items() if 200 not in calls.cancels.get(i, [])}
            recorder.wait_for(expected, timeout_seconds=30)  # what is missing then, the checks name
            streak = [0]

            def quiet_twice() -> bool:
                streak[0] = streak[0] + 1 if _quiet(endpoint) else 0
                return streak[0] >= 2

            wait_until(quiet_twice, 30, "the engine did not become quiet", interval=0.5)
            timers = [t for c in clients for t in c.timers]
            report = ChaosReport(timers=len(timers), periodic=0, seconds=0, faults={}, fault_stages={},
                                 create_retries=calls.retried)
            check_one_shots(report, timers, calls, recorder, lambda i: engine.api().raw("getSchedule", id=i), parked={})
        finally:
            engine.stop()
            server.shutdown()
    return report, calls, generations, state_dir


def test_nothing_is_lost_early_or_delivered_after_its_cancel(killed_run):
    report, _, _, _ = killed_run
    assert report.ok, "\n".join(report.lines())
    assert report.delivered + report.cancelled == report.timers, "\n".join(report.lines())


def test_the_kills_hit_a_running_engine(killed_run):
    """Each start delivered; some calls lost their answer to a kill and were retried, and some deliveries
    under way at a kill came again (under their dedupeKey); the checkpoints are in the state dir."""
    report, calls, generations, state_dir = killed_run
    per_start = sorted(collections.Counter(generations).items())
    assert [start for start, _ in per_start] == list(range(1, KILLS + 2)), per_start
    assert calls.retried > 0, "no call was under way at a kill"
    assert report.cancelled > 0 and report.duplicates > 0, "\n".join(report.lines())
    assert "enqueuer" in json.loads((state_dir / "checkpoints.json").read_text())
