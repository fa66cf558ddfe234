"""The operator's redrive as the handler tests run it: a schedule parked after its only attempt, a run of the
redrive, a run cut short before its delete, and a run whose deliveries are tried (and parked again) at once."""

from __future__ import annotations

from typing import Any

import pytest

from cdk_delayed_scheduler.operator import redrive
from scheduler_runtime.aws import context
from scheduler_runtime.aws.redrive import Redrive

from .conftest import REGION, call_api
from .dispatching import dispatch, receive
from .retrying import create


class Killed(BaseException):
    """The operator's process ending: nothing after this point of the run happens."""


class SentBackTooOften(BaseException):
    """A run that sends the same schedules back again and again: stopped, rather than left to run forever."""


def park(aws, schedule_id: str) -> None:
    """A schedule whose only attempt failed: FAILED, its envelope parked in the dead-letter queue."""
    create(schedule_id, {"maxAttempts": 1})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert call_api("GET", f"/schedules/{schedule_id}")[1]["status"] == "FAILED"


def run(aws, **selection):
    return redrive(table_name=aws.table, delayer_queue=aws.delayer_url, dead_letter_queue=aws.dlq_url,
                   region_name=REGION, **selection)


def cut_short_before_its_delete(aws) -> None:
    """A run that re-arms and sends, then ends before its delete; its message is visible again a second later."""
    ctx = context.current()

    class DiesAtDelete:
        def __getattr__(self, name):
            if name == "delete_message_batch":
                raise Killed
            return getattr(ctx.sqs, name)

    with pytest.raises(Killed):
        Redrive(ctx.dynamodb, DiesAtDelete(), aws.table, aws.delayer_url, aws.dlq_url,
                visibility_timeout_seconds=1).run()


class DispatchedAtOnce:
    """The run's SQS client, with the dispatcher handed what the delayer queue holds right after each send to it,
    as a busy Lambda would: a redriven delivery to the broken target fails and is parked again while the run goes
    on. ``dispatched`` counts the deliveries tried; past ``most`` it stops the run (:class:`SentBackTooOften`)."""

    def __init__(self, aws, sqs, most: int = 3) -> None:
        self._aws, self._sqs, self._most = aws, sqs, most
        self.dispatched = 0

    def __getattr__(self, name):
        return getattr(self._sqs, name)

    def send_message_batch(self, **request):
        answer = self._sqs.send_message_batch(**request)
        for message in self._aws.receive(self._aws.delayer_url):
            if self.dispatched == self._most:
                raise SentBackTooOften(f"the run sent its schedules back {self.dispatched} times and went on")
            assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
            self.dispatched += 1
        return answer


def run_dispatched_at_once(aws) -> tuple[Any, DispatchedAtOnce]:
    """A run whose sends are dispatched at once (:class:`DispatchedAtOnce`): its report, and the client."""
    ctx = context.current()
    sqs = DispatchedAtOnce(aws, ctx.sqs)
    return Redrive(ctx.dynamodb, sqs, aws.table, aws.delayer_url, aws.dlq_url).run(), sqs
