"""A limited target under pressure, on virtual time: writes to its item slower than the start tolerance (a loaded
table) still let every delivery start at a slot, since a delivery takes its place before its slot; and a write the
table refuses for capacity sends the delivery back to wait, unspent, instead of failing its message, longer each time
it is refused again."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.aws.flow import FlowStore
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits
from scheduler_runtime.core.timeparse import parse_rfc3339 as ms

from .conftest import call_api
from .dispatching import dispatch, receive
from .flow_controlling import create, dispatch_one_at_a_time, limit
from .virtual_time import iso, now_ms, receivable_instants, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
LIMITS = {"rate": 4, "maxInFlight": 2}
SLOW_MS = 3 * flow.START_TOLERANCE_MS
"""How long each write to the target's item takes in the slow test: three start tolerances."""


def slow_writes(monkeypatch, took_ms: int) -> None:
    """Every write to a limited target's item takes ``took_ms`` of virtual time."""
    real_update = FlowStore._update

    def slow(self, *args, **kwargs):
        virtual().advance(took_ms / 1000)
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(FlowStore, "_update", slow)


@pytest.mark.parametrize("limits", [LIMITS, {"rate": 1, "periodSeconds": 2, "maxInFlight": 1}],
                         ids=["slots-waited-in-the-dispatcher", "slots-waited-in-the-queue"])
def test_writes_slower_than_the_start_tolerance_still_start_every_delivery_at_a_slot(aws, monkeypatch, limits):
    limit(aws, monkeypatch, "mailer", limits)
    slow_writes(monkeypatch, SLOW_MS)
    due_ms = now_ms() + 5000
    for n in range(8):
        create(f"mail-{n}", due_ms, "mailer")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert sorted(e["id"] for e in delivered) == [f"mail-{n}" for n in range(8)]
    fired = [ms(e["firedAt"]) for e in delivered]
    interval_ms = FlowLimits.of({"flowControl": limits}).interval_us / 1000
    assert min(later - earlier for earlier, later in zip(fired, fired[1:])) >= interval_ms  # the rate held
    # a few slots missed while the lead learns how slow the writes are; then none
    assert fired[0] >= due_ms and fired[-1] - due_ms < 11 * interval_ms + 8 * 4 * SLOW_MS


class Crowding:
    """A DynamoDB client whose writes are refused for capacity (after the SDK's own tries) while ``left`` counts."""

    def __init__(self, ddb, left: list[int], only_key: str | None = None) -> None:
        self._ddb, self._left, self._only_key = ddb, left, only_key

    def update_item(self, **request):
        if self._left[0] > 0 and self._only_key in (None, request["Key"]["pk"]["S"]):
            self._left[0] -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "rate"}},
                              "UpdateItem")
        return self._ddb.update_item(**request)

    def __getattr__(self, name):
        return getattr(self._ddb, name)


def test_a_write_refused_for_capacity_sends_the_delivery_back_to_wait_unspent(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", LIMITS)
    real_init, refusals_left = FlowStore.__init__, [2]
    monkeypatch.setattr(FlowStore, "__init__", lambda self, dynamodb, table_name: real_init(
        self, Crowding(dynamodb, refusals_left), table_name))
    due_ms = now_ms() + 5000
    create("crowded", due_ms, "mailer", retry={"maxAttempts": 1})
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}  # not failed: sent back to wait
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    assert aws.receive(aws.delayer_url) == []  # it waits out its pause
    virtual().advance(flow.LOOK_AGAIN_SECONDS)
    [waiting] = aws.receive(aws.delayer_url)
    assert json.loads(waiting["body"])["room"] == {"target": "mailer", "crowded": 1}
    assert dispatch(receive(waiting, 1)) == {"batchItemFailures": []}  # refused again: back again, still unspent
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert [(e["id"], e["attempt"]) for e in delivered] == [("crowded", 1)]
    second_wait = flow.crowded_delay_seconds(2, "crowded")
    assert 1 <= second_wait <= 2
    assert delivered[0]["firedAt"] == iso(due_ms + (flow.LOOK_AGAIN_SECONDS + second_wait) * 1000)


def test_a_delivery_refused_for_capacity_again_and_again_waits_longer_each_time_up_to_a_minute(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", LIMITS)
    real_init, refusals_left = FlowStore.__init__, [8]  # the first write of each of 8 receives
    monkeypatch.setattr(FlowStore, "__init__", lambda self, dynamodb, table_name: real_init(
        self, Crowding(dynamodb, refusals_left), table_name))
    due_ms = now_ms() + 5000
    create("crowded", due_ms, "mailer", retry={"maxAttempts": 1})
    virtual().move_to(due_ms)
    waits = []
    while refusals_left[0] > 0:
        [message] = aws.receive(aws.delayer_url)
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
        [instant] = receivable_instants(aws.delayer_url)
        waits.append((instant - virtual().now_ms()) // 1000)
        virtual().move_to(instant)
    assert waits == [flow.crowded_delay_seconds(times, "crowded") for times in range(1, len(waits) + 1)]
    assert waits[0] == 1 and all(2 ** (k - 1) <= wait <= 2 ** k for k, wait in enumerate(waits[1:6], 1))
    assert max(waits) <= flow.CROWDED_BACKOFF_MAX_SECONDS and waits[-1] >= flow.CROWDED_BACKOFF_MAX_SECONDS // 2
    delivered = dispatch_one_at_a_time(aws, virtual().now_ms() + 60_000)
    assert [(e["id"], e["attempt"], e["firedAt"]) for e in delivered] == [("crowded", 1, iso(virtual().now_ms()))]
    assert call_api("GET", "/schedules/crowded")[1]["status"] == "FIRED"


def test_a_grouped_delivery_refused_for_capacity_at_its_target_keeps_its_group_slot(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 10, "perGroup": {"rate": 1, "periodSeconds": 2}})
    real_init, refusals_left = FlowStore.__init__, [1]
    monkeypatch.setattr(FlowStore, "__init__", lambda self, dynamodb, table_name: real_init(
        self, Crowding(dynamodb, refusals_left, only_key=flow.flow_key("mailer").pk), table_name))
    due_ms = now_ms() + 5000
    create("tenant-1", due_ms, "mailer", group="tenant")
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    virtual().advance(flow.LOOK_AGAIN_SECONDS)
    [waiting] = aws.receive(aws.delayer_url)
    assert json.loads(waiting["body"])["room"] == {"target": "mailer", "group": "tenant", "groupSlot": due_ms,
                                                  "crowded": 1}
    assert dispatch(receive(waiting, 1)) == {"batchItemFailures": []}  # its group slot passed: the target's now
    assert [json.loads(m["body"])["id"] for m in aws.take(aws.target_url)] == ["tenant-1"]
