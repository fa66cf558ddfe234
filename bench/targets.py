"""Targets: how late each kind of target receives its deliveries on the local engine.

For each kind, a fresh engine (default options) with one named target of that kind, one delivery to it
first (a fresh engine's first delivery to a kind creates that service's client: a cold start, which the
coldstart section measures), then ``n`` timers created through the HTTP API ahead of time, due spread over ``span_s`` seconds (the short path: due
within the delay window). Lateness is measured where a consumer gets the delivery, minus ``dueAt``:

- **lambda**: the wall time the engine's local function is called (through the runtime's Lambda target);
- **sqs**, **sns**, **eventbridge**: the ``SentTimestamp`` of the message in the queue the delivery
  arrives in (the queue itself; one subscribed to the topic with raw delivery; the one a rule on the
  bus sends to), as moto stamps it: the moment the message entered that queue;
- **stepfunctions**: the ``startDate`` of the execution the delivery started, as moto stamps it;
- **https**: the wall time a receiver on 127.0.0.1 gets the POST (plain HTTP to loopback, as the engine
  allows), after checking its signature with the shipped ``verify_signature``.
"""

from __future__ import annotations

import json
import time

from cdk_delayed_scheduler.envelope import Envelope
from cdk_delayed_scheduler.local.chaos_targets import SignedReceiver
from cdk_delayed_scheduler.local.deliveries import (BusTarget, HttpsTarget, QueueTarget, StateMachineTarget,
                                                    TopicTarget)
from cdk_delayed_scheduler.local.named_targets import executions

from .common import Collector, Engine, EngineOptions, SchedulerClient, api_client, distribution, log

TARGET = "measured"
KINDS = ("lambda", "sqs", "sns", "eventbridge", "stepfunctions", "https")
SECRET = "bench-signing-secret"
P99_TARGET_MS = 100.0


def _named(kind: str, collector: Collector, receiver: SignedReceiver) -> object:
    return {"lambda": collector, "sqs": QueueTarget(), "sns": TopicTarget(),
            "eventbridge": BusTarget(detail_type="Bench delivery", source="bench.targets"),
            "stepfunctions": StateMachineTarget(), "https": HttpsTarget(receiver.url, SECRET)}[kind]


def _received_lateness_ms(collector: Collector) -> list[float]:
    """Each delivery's arrival at the collector (the local function, or the HTTPS receiver) minus its ``dueAt``."""
    return [late for _, _, late in collector.lateness()]


def _started_lateness_ms(eng: Engine, n: int, timeout_s: float, known: frozenset[str]) -> list[float]:
    """Each execution's ``startDate`` minus its input's ``dueAt``, in ms, less the executions in ``known``."""
    stepfunctions, arn = eng.client("stepfunctions"), eng.target_state_machine_arns[TARGET]
    deadline = time.monotonic() + timeout_s
    while True:
        started = executions(stepfunctions, arn, known)
        if len(started) >= n or time.monotonic() > deadline:
            return [e.started_ms - Envelope.from_event(e.envelope).due_at.timestamp() * 1000 for e in started]
        time.sleep(1.0)


def _arrived(eng: Engine, kind: str, collector: Collector, n: int, timeout_s: float,
             known: frozenset[str] = frozenset()) -> list[float]:
    """The lateness of the first ``n`` deliveries to the target, read where they arrive."""
    if kind in ("lambda", "https"):
        collector.wait_for(n, timeout_s)
        return _received_lateness_ms(collector)
    if kind == "stepfunctions":
        return _started_lateness_ms(eng, n, timeout_s, known)
    return _queued_lateness_ms(eng, n, timeout_s)


def _warm_up(eng: Engine, client: SchedulerClient, kind: str, collector: Collector) -> None:
    """One delivery to the target before the measured ones, as the precision section does: a fresh engine's
    first delivery to a kind creates that service's client (the cold start, measured in its own section)."""
    status, _ = client.raw("createSchedule", {"id": f"{kind}-warm", "delaySeconds": 0, "payload": {"warm": True},
                                              "target": TARGET})
    assert status == 201, f"the warm-up create answered {status}"
    assert len(_arrived(eng, kind, collector, 1, 30)) == 1, "the warm-up delivery did not arrive"
    with collector.lock:
        collector.received.clear()


def _queued_lateness_ms(eng: Engine, n: int, timeout_s: float) -> list[float]:
    """Each delivery's ``SentTimestamp`` in its queue minus its ``dueAt``, in ms (received, then deleted)."""
    sqs, url = eng.client("sqs"), eng.target_queue_urls[TARGET]
    lateness: list[float] = []
    deadline = time.monotonic() + timeout_s
    while len(lateness) < n and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                       AttributeNames=["SentTimestamp"]).get("Messages", [])
        for message in messages:
            envelope = Envelope.from_event(json.loads(message["Body"]))
            lateness.append(int(message["Attributes"]["SentTimestamp"]) - envelope.due_at.timestamp() * 1000)
        if messages:
            sqs.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
    return lateness


def run_kind(kind: str, n: int, span_s: float) -> dict:
    collector = Collector()
    receiver = SignedReceiver(SECRET, lambda envelope, _headers, _ms: collector(envelope))
    with Engine(EngineOptions(target=Collector(), targets={TARGET: _named(kind, collector, receiver)})) as eng:
        client = api_client(eng.api_url)
        _warm_up(eng, client, kind, collector)
        warm = frozenset(e.arn for e in executions(eng.client("stepfunctions"), eng.target_state_machine_arns[TARGET])) \
            if kind == "stepfunctions" else frozenset()
        first_due = time.time() + 6.0  # the creates (a few seconds at most) end before the first is due
        for i in range(n):
            due = first_due + span_s * i / n
            status, _ = client.raw("createSchedule", {"id": f"{kind}-{i:04d}", "dueAt": round(due, 3),
                                                      "payload": {"i": i}, "target": TARGET})
            assert status == 201, f"create {i} answered {status}"
        lateness = _arrived(eng, kind, collector, n, first_due + span_s - time.time() + 30, warm)
    receiver.stop()
    figures = distribution(lateness)
    figures.update(early=sum(1 for late in lateness if late < 0), lost=n - len(lateness),
                   met=bool(lateness) and len(lateness) == n and figures["p99"] <= P99_TARGET_MS
                   and all(late >= 0 for late in lateness))
    log(f"targets {kind}: {len(lateness)}/{n} delivered, p50 {figures.get('p50', float('nan')):.0f} ms, "
        f"p99 {figures.get('p99', float('nan')):.0f} ms, early {figures['early']}")
    return figures


def run(n: int, span_s: float) -> dict:
    return {"n": n, "span_s": span_s, "p99_target_ms": P99_TARGET_MS,
            "kinds": {kind: run_kind(kind, n, span_s) for kind in KINDS}}
