"""The operator's redrive as the handler tests run it: a schedule parked after its only attempt, a run of the
redrive, and a run cut short before its delete."""

from __future__ import annotations

import pytest

from cdk_delayed_scheduler.operator import redrive
from scheduler_runtime.aws import context
from scheduler_runtime.aws.redrive import Redrive

from .conftest import REGION, call_api
from .dispatching import dispatch, receive
from .retrying import create


class Killed(BaseException):
    """The operator's process ending: nothing after this point of the run happens."""


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
