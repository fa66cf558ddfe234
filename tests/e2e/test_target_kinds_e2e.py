"""Every kind of target the engine makes beside queues, topics and buses (those are in
tests/testing/test_targets_and_setup.py), on one engine, in real time: a Step Functions state machine
(its executions), Lambda functions invoked as an event and synchronously (their handlers), and HTTPS
endpoints (a receiver on 127.0.0.1 that checks every request with the shipped ``verify_signature``)."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Mapping

import pytest

from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.chaos_targets import SignedReceiver
from cdk_delayed_scheduler.local.deliveries import HttpsTarget, LambdaTarget, Recorder, StateMachineTarget
from cdk_delayed_scheduler.local.named_targets import executions
from scheduler_runtime.aws.targets import execution_name

from .conftest import wait_until

pytestmark = pytest.mark.e2e
SECRET = "whsec-local-engine"


@dataclass
class Gate:
    """A handler that holds each call until :meth:`release`; what it was called with, in order."""

    entered: list[str] = field(default_factory=list)
    opened: threading.Event = field(default_factory=threading.Event)

    def __call__(self, event: dict, context: object) -> None:
        self.entered.append(event["id"])
        if not self.opened.wait(30):
            raise TimeoutError("the gate was never opened")

    def release(self) -> None:
        self.opened.set()


class DeliveredIds(logging.Handler):
    """The ids of the runtime's ``delivered`` records (a delivery's end, as the dispatcher saw it)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.ids: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "event", None) == "delivered":
            self.ids.append(getattr(record, "fields", {})["id"])


@dataclass
class Targets:
    engine: Engine
    api: SchedulerClient
    delivered: DeliveredIds
    event_gate: Gate
    sync_gate: Gate
    receiver: SignedReceiver
    verified: list[tuple[str, Mapping[str, str]]]  # the envelope's id, the request's headers


@pytest.fixture(scope="module")
def targets() -> Iterator[Targets]:
    event_gate, sync_gate, delivered = Gate(), Gate(), DeliveredIds()
    verified: list[tuple[str, Mapping[str, str]]] = []
    receiver = SignedReceiver(SECRET, lambda envelope, headers, _received_ms: verified.append((envelope["id"], headers)))
    options = EngineOptions(target=Recorder(), delay_window=2, sweep_interval=1, targets={
        "flow": StateMachineTarget(), "fast": StateMachineTarget(express=True),
        "slow-event": LambdaTarget(event_gate, invocation_type="Event"), "slow-sync": LambdaTarget(sync_gate),
        "hook": HttpsTarget(receiver.url, SECRET, headers={"X-App": "reminders"}, timeout_seconds=5),
        "forged": HttpsTarget(receiver.url, "not-the-receivers-secret")})
    with Engine(options) as engine:
        runtime_logger = logging.getLogger("scheduler_runtime")
        runtime_logger.addHandler(delivered)
        try:
            yield Targets(engine, raw_client(engine.api_url), delivered, event_gate, sync_gate, receiver, verified)
        finally:
            event_gate.release()
            sync_gate.release()
            runtime_logger.removeHandler(delivered)
            receiver.stop()


def test_each_delivery_to_a_state_machine_starts_an_execution_with_the_envelope_as_its_input(targets):
    for n, target in enumerate(("flow", "fast", "flow")):
        status, _ = targets.api.raw("createSchedule", {"id": f"run-{n}", "delaySeconds": 1 + n % 2, "payload": {"n": n},
                                        "target": target})
        assert status == 201
    sfn = targets.engine.client("stepfunctions")
    arns = targets.engine.target_state_machine_arns
    started = wait_until(lambda: (lambda f, x: (f, x) if len(f) == 2 and len(x) == 1 else None)(
        executions(sfn, arns["flow"]), executions(sfn, arns["fast"])), 20, "the executions were not started")
    flow, fast = started
    assert sorted((e.envelope["id"], e.envelope["payload"]["n"]) for e in flow) == [("run-0", 0), ("run-2", 2)]
    assert [(e.envelope["id"], e.envelope["target"]) for e in fast] == [("run-1", "fast")]
    for execution in (*flow, *fast):  # named after the occurrence's dedupeKey, so a second start is refused
        assert execution.arn.rsplit(":", 1)[-1] == execution_name(execution.envelope["dedupeKey"])
        assert execution.started_ms >= parse_due_ms(execution.envelope["dueAt"])  # never early
        assert sfn.describe_execution(executionArn=execution.arn)["status"] == "RUNNING"  # moto runs no workflow
    assert sfn.describe_state_machine(stateMachineArn=arns["fast"])["type"] == "EXPRESS"


def test_a_slow_handler_invoked_as_an_event_does_not_hold_its_delivery_and_a_synchronous_one_does(targets):
    for target in ("slow-event", "slow-sync"):
        body = {"id": f"to-{target}", "delaySeconds": 1, "payload": {}, "target": target}
        assert targets.api.raw("createSchedule", body).status == 201
    wait_until(lambda: targets.event_gate.entered and targets.sync_gate.entered, 20, "the handlers were not called")
    # both handlers are held; the event's delivery ended when Lambda accepted the event
    wait_until(lambda: "to-slow-event" in targets.delivered.ids, 10, "the event's delivery did not end")
    assert "to-slow-sync" not in targets.delivered.ids
    assert "target functions invoked as an event" in " ".join(targets.engine.under_way())
    targets.sync_gate.release()
    wait_until(lambda: "to-slow-sync" in targets.delivered.ids, 10, "the synchronous delivery did not end")
    targets.event_gate.release()
    wait_until(lambda: not targets.engine.under_way(), 10, "the engine did not settle")
    assert (targets.event_gate.entered, targets.sync_gate.entered) == (["to-slow-event"], ["to-slow-sync"])


def test_an_https_target_posts_each_envelope_signed_with_its_secret_and_a_refused_request_is_parked(targets):
    for n in range(3):
        body = {"id": f"hook-{n}", "delaySeconds": 1, "payload": {"n": n}, "target": "hook"}
        assert targets.api.raw("createSchedule", body).status == 201
    body = {"id": "forged-0", "delaySeconds": 1, "payload": {}, "target": "forged"}
    assert targets.api.raw("createSchedule", body).status == 201

    wait_until(lambda: len(targets.verified) == 3, 20, "the signed requests did not arrive")
    assert sorted(id_ for id_, _ in targets.verified) == ["hook-0", "hook-1", "hook-2"]
    for _, headers in targets.verified:
        assert headers["X-App"] == "reminders" and headers["Scheduler-Attempt"] == "1"
    # signed with another secret: the receiver refuses it (401), which the runtime parks at once, not retried
    status, body = wait_until(lambda: (lambda answer: answer if answer[1].get("status") == "FAILED" else None)(
        targets.api.raw("getSchedule", id="forged-0")), 20, "the refused delivery was not parked")
    assert "answered 401" in body["lastError"], body
    assert len(targets.receiver.rejected) == 1 and "signature" in targets.receiver.rejected[0]


def test_local_delivers_to_the_state_machine_and_the_https_endpoint_a_targets_file_names(tmp_path):
    """``cdk-delayed-scheduler local --targets FILE`` with a stepfunctions and an https entry: the engine prints
    the state machine it made, and the receiver gets the signed request."""
    import boto3

    from .launching import Running

    verified: list[str] = []
    receiver = SignedReceiver(SECRET, lambda envelope, _headers, _received_ms: verified.append(envelope["id"]))
    targets_file = tmp_path / "targets.json"
    targets_file.write_text(json.dumps({"flows": {"type": "stepfunctions"},
                                        "hook": {"type": "https", "url": receiver.url, "secret": SECRET}}))
    running = Running("--targets", str(targets_file))
    try:
        line = wait_until(lambda: next((l for l in running.stderr if "executions of the state machine" in l), None),
                          20, "the state machine was not printed")
        machine = re.search(r"target flows: its deliveries start executions of the state machine (\S+)", line).group(1)
        moto = re.search(r"AWS_ENDPOINT_URL=(\S+)", "".join(running.stderr)).group(1)
        for target in ("flows", "hook"):
            body = {"id": f"cli-{target}", "delaySeconds": 1, "payload": {}, "target": target}
            assert running.api.raw("createSchedule", body).status == 201
        sfn = boto3.client("stepfunctions", endpoint_url=moto, region_name="us-east-1")
        started = wait_until(lambda: executions(sfn, machine), 20, "no execution was started")
        assert [e.envelope["id"] for e in started] == ["cli-flows"]
        wait_until(lambda: verified, 20, "the signed request did not arrive")
        assert verified == ["cli-hook"] and receiver.rejected == []
    finally:
        running.stop()
        receiver.stop()
