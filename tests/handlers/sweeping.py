"""The sweeper and the enqueuer as the handler tests drive them: long timers claimed, the ids their REMOVE
records and sent entries name, a batch send that records or refuses its entries, a Lambda context that runs
out of time, and a fixture that starts each test with no sweep to resume."""

from __future__ import annotations

import json
import threading

import pytest

from cdk_delayed_scheduler.local.pollers import LambdaContext
from scheduler_runtime.aws import shards
from scheduler_runtime.handlers import sweeper

from .conftest import schedule
from .virtual_time import virtual


@pytest.fixture(autouse=True)
def fresh_sandbox():
    """Each test is a cold sandbox: no sweep to resume, no shard count settled (moto is new too)."""
    sweeper._resume_at.clear()
    shards._settled.clear()
    yield
    sweeper._resume_at.clear()
    shards._settled.clear()


def removed_id(record: dict) -> str:
    return record["dynamodb"]["Keys"]["sk"]["S"].split("#", 1)[1]


def sent_ids(entries: list[dict]) -> list[str]:
    return [json.loads(e["MessageBody"])["id"] for e in entries]


def recording_sends(calls: list, respond=None):
    """A ``send_message_batch`` that records each call's entries, then answers with ``respond``
    (``respond(real, call_number, **kwargs)``), or really sends them."""

    def send(real, **kwargs):
        calls.append(kwargs["Entries"])
        if respond is None:
            return real.send_message_batch(**kwargs)
        return respond(real, len(calls), **kwargs)

    return send


def long_timers_claimed(aws, *ids: str, in_seconds: float = 20) -> list[dict]:
    """Create long timers, sweep them, and return their REMOVE records (claims, in stream order)."""
    for schedule_id in ids:
        schedule(schedule_id, in_seconds, long=True)
    assert sweeper.handler({})["claimed"] == len(ids)
    return aws.new_stream_records("REMOVE")


def sweep_at(instant_ms: int) -> int:
    """On virtual time: the sweeper's run at ``instant_ms`` (the clock moved there); how many timers it claimed."""
    virtual().move_to(instant_ms)
    return sweeper.handler({})["claimed"]


def refuse_every_send(real, call_number, **kwargs):
    return {"Successful": [], "Failed": [{"Id": e["Id"], "Code": "InternalError", "SenderFault": False}
                                         for e in kwargs["Entries"]]}


class _StopsAfter(threading.Event):
    """An engine's stopping signal that is set once it has been looked at ``checks`` times."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self._looks_left = checks

    def is_set(self) -> bool:
        self._looks_left -= 1
        if self._looks_left < 0:
            self.set()
        return super().is_set()


def runs_out_after(checks: int) -> LambdaContext:
    """A Lambda context with time to spare for the first ``checks`` checks of its time left, then none."""
    return LambdaContext("sweeper", 60, _StopsAfter(checks))
