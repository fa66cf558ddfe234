"""Periodic timers as the handler tests make and watch them: a PUT through the api, the occurrence waiting in
the delayer queue, what reached the target queue, and the CloudFormation events of one declared in a stack."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from scheduler_runtime.aws.definitions import DefinitionStore

from .conftest import call_api


def put(periodic_id: str, body: dict) -> dict:
    status, answer = call_api("PUT", f"/periodic/{periodic_id}", body)
    assert status in (200, 201), answer
    return answer


def occurrence(aws, timeout: float = 5.0) -> dict:
    [message] = aws.wait_for_messages(aws.delayer_url, timeout)
    return message


def delivered(aws) -> list[dict]:
    return [json.loads(m["body"]) for m in aws.take(aws.target_url)]


@dataclass
class SlowWrite:
    """A write that another call started and that lands late: what was read while it was pending, and its answer."""

    read: list = field(default_factory=list)
    """Every definition read in the block, in order: those before the write landed, then those after."""
    landed: list = field(default_factory=list)


@contextmanager
def landing_in_the_first_wait_after_a_read(virtual_clock, monkeypatch, write: Callable[[], Any]) -> Iterator[SlowWrite]:
    """On virtual time, in the block: ``write`` runs (lands) in the first wait on the clock after something read a
    definition, as a slow write of another call lands while a dispatcher waits for it, neither sooner nor later."""
    slow = SlowWrite()
    real_get, real_sleep = DefinitionStore.get, virtual_clock.sleep

    def get(definitions, periodic_id):
        definition = real_get(definitions, periodic_id)
        slow.read.append(definition)
        return definition

    def sleep(seconds):
        real_sleep(seconds)
        if slow.read and not slow.landed:
            slow.landed.append(write())

    with monkeypatch.context() as patched:
        patched.setattr(DefinitionStore, "get", get)
        patched.setattr(virtual_clock, "sleep", sleep)
        yield slow


NIGHTLY = {"cron": "0 2 * * ? *", "timeZone": "Europe/Paris", "payload": {"report": "daily"}}


def event(request_type: str, periodic_id: str = "nightly", definition: Any = None, *,
          physical: Optional[str] = None, old: Optional[dict] = None) -> dict:
    """An event as CloudFormation sends it (the provider framework passes it on unchanged)."""
    token = "arn:aws:lambda:eu-west-1:123456789012:function:framework-onEvent"
    properties = {"ServiceToken": token, "Id": periodic_id,
                  "Definition": definition if isinstance(definition, str) else json.dumps(definition)}
    body = {"RequestType": request_type, "ServiceToken": token, "ResponseURL": "https://example.invalid/response",
            "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/App/1", "RequestId": "req-1",
            "LogicalResourceId": "TimersPeriodicnightly", "ResourceType": "Custom::DelayedSchedulerPeriodic",
            "ResourceProperties": properties}
    if physical is not None:
        body["PhysicalResourceId"] = physical
    if old is not None:
        body["OldResourceProperties"] = old
    return body
