"""How the dispatcher's requests to a limited target's items are sent, on virtual time: one DynamoDB refuses for
capacity comes back at once, with no retry of the SDK's, and sends its delivery back to wait, unspent (an SDK
backoff would hold the dispatcher and the rest of its batch for seconds); one that met a server error or lost its
connection is sent again and the delivery starts; a batch's group slots whose write keeps failing fail no message
(each asks on its own); and a delivery message names its limited target, so its first receive takes room at once,
with no start write refused to learn the target."""

from __future__ import annotations

import json

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from moto.core.botocore_stubber import MockRawResponse

from scheduler_runtime.aws import context
from scheduler_runtime.aws.store import ScheduleStore
from scheduler_runtime.core import flow

from .conftest import call_api
from .dispatching import dispatch, receive
from .flow_controlling import MADE, MADE_IDS, create, dispatch_one_at_a_time, limit
from .redriving import run as redrive_run
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
CAPACITY = "ProvisionedThroughputExceededException"
REFUSED_URL = "http://127.0.0.1:9/refused"
"""Where a refused request is said to go: never sent (the hook answers it), and no AWS address, so moto's hook
applies nothing."""


class Refusing:
    """A hook before each DynamoDB ``UpdateItem`` of one client: answers the first ``left`` of them to an item whose
    key starts with ``prefix`` (a limited item's) with ``status`` and ``code`` (or raises ``raising``), counting every one it saw. Every ``before-send`` hook
    is called, and the first answer wins: so a refused request is pointed away from moto's."""

    def __init__(self, client, left: int, status: int = 400, code: str = CAPACITY,
                 raising: Exception | None = None, prefix: str = flow.KEY_PREFIX) -> None:
        self.left, self.status, self.code, self.raising, self.prefix = left, status, code, raising, prefix
        self.seen = 0
        client.meta.events.register_first("before-send.dynamodb.UpdateItem", self)

    def __call__(self, request, **_):
        if not json.loads(request.body)["Key"]["pk"]["S"].startswith(self.prefix):
            return None
        self.seen += 1
        if self.left <= 0:
            return None
        self.left -= 1
        if self.raising is not None:
            raise self.raising
        request.url = REFUSED_URL  # moto's hook, called after this one, answers only AWS's addresses: it leaves it
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{self.code}", "message": "injected"})
        return AWSResponse(request.url, self.status, {"x-amzn-ErrorType": self.code},
                           MockRawResponse(body.encode()))


def _one_receive(aws) -> dict:
    [message] = aws.receive(aws.delayer_url)
    answer = dispatch(receive(message, 1))
    if not answer["batchItemFailures"]:
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    return answer


def test_a_limited_items_write_refused_for_capacity_is_not_retried_and_its_delivery_waits_unspent(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 4})
    refusing = Refusing(context.current().flow_dynamodb, left=1)
    due_ms = now_ms() + 5000
    create("crowded", due_ms, "mailer", retry={"maxAttempts": 1})
    virtual().move_to(due_ms)
    assert _one_receive(aws) == {"batchItemFailures": []}
    assert refusing.seen == 1  # one request: no retry of the SDK's
    assert aws.take(aws.target_url) == []
    virtual().advance(flow.crowded_delay_seconds(1, "crowded"))
    assert _one_receive(aws) == {"batchItemFailures": []}
    [delivered] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert (delivered["attempt"], delivered["firedAt"]) == (1, iso(due_ms + 1000))


@pytest.mark.parametrize("refusal", [{"status": 500, "code": "InternalServerError"},
                                     {"raising": EndpointConnectionError(endpoint_url="http://127.0.0.1")}],
                         ids=["server-error", "no-connection"])
def test_a_limited_items_write_that_met_a_server_error_or_no_connection_is_sent_again(aws, monkeypatch, refusal):
    limit(aws, monkeypatch, "mailer", {"rate": 4, "maxInFlight": 1})
    refusing = Refusing(context.current().flow_dynamodb, left=2, **refusal)
    due_ms = now_ms() + 5000
    create("shaken", due_ms, "mailer")
    virtual().move_to(due_ms)
    assert _one_receive(aws) == {"batchItemFailures": []}
    [delivered] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert (delivered["id"], delivered["firedAt"]) == ("shaken", iso(due_ms))
    assert refusing.seen == 2 + 3  # the slot's write, sent three times; the place's and its release, once each
    assert call_api("GET", "/targets/mailer")[1]["inFlight"] == 0


def _counted_starts(monkeypatch) -> list[bool]:
    """Each start write from now on: whether it was made (True) or refused."""
    starts: list[bool] = []
    real_begin = ScheduleStore.begin_delivery

    def counted(self, *args, **kwargs):
        start = real_begin(self, *args, **kwargs)
        starts.append(start.record is not None)
        return start

    monkeypatch.setattr(ScheduleStore, "begin_delivery", counted)
    return starts


@pytest.mark.parametrize("made", MADE, ids=MADE_IDS)
@pytest.mark.parametrize(("flow_control", "room"), [
    ({"rate": 4}, {"target": "mailer"}),
    ({"rate": 4, "perGroup": {"rate": 1}}, {"target": "mailer", "group": "acme"}),
    (None, None),
], ids=["limited", "per-group", "unlimited"])
def test_a_delivery_message_names_its_limited_target_so_its_delivery_makes_one_start_write(
        aws, monkeypatch, made, flow_control, room):
    """However its message was made (a create within the window or beyond it, a reschedule to either), it names a
    limited target, and the first receive takes a slot at once: no start write refused to learn the target."""
    if flow_control is not None:
        limit(aws, monkeypatch, "mailer", flow_control)
    starts = _counted_starts(monkeypatch)
    due_ms = made(aws, "named", "mailer" if flow_control is not None else "default")
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert json.loads(message["body"]).get("room") == room
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert (delivered["id"], delivered["firedAt"]) == ("named", iso(due_ms))
    assert starts == [True]  # the start write, made: none refused to learn the target


@pytest.mark.parametrize("flow_control", [{"rate": 4}, {"rate": 4, "perGroup": {"rate": 1}}],
                         ids=["limited", "per-group"])
def test_a_redriven_delivery_names_its_limited_target_so_it_makes_one_start_write(aws, monkeypatch, flow_control):
    limit(aws, monkeypatch, "mailer", flow_control, queue_url=f"{aws.target_url}-gone")  # the target fails
    due_ms = now_ms() + 5000
    create("again", due_ms, "mailer", group="acme", retry={"maxAttempts": 1})
    virtual().move_to(due_ms)
    assert _one_receive(aws) == {"batchItemFailures": []}
    assert call_api("GET", "/schedules/again")[1]["status"] == "FAILED"
    limit(aws, monkeypatch, "mailer", flow_control)  # mended
    starts = _counted_starts(monkeypatch)
    assert [entry["id"] for entry in redrive_run(aws).moved] == ["again"]
    [message] = aws.receive(aws.delayer_url)
    assert json.loads(message["body"])["room"] == {"target": "mailer", "group": "acme"}
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert (delivered["id"], delivered["attempt"]) == ("again", 2)
    assert starts == [True]  # the start write, made: none refused to learn the target


def test_a_groups_slots_taken_together_whose_write_keeps_failing_fail_no_message_and_each_asks_on_its_own(
        aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"perGroup": {"rate": 1}})
    group_item = flow.flow_key(flow.group_place("mailer", "acme")).pk
    refusing = Refusing(context.current().flow_dynamodb, left=3, status=500, code="InternalServerError",
                        prefix=group_item)
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"member-{n}", due_ms, "mailer", group="acme")
    virtual().move_to(due_ms)
    messages = aws.receive(aws.delayer_url)
    assert dispatch(*(receive(message, 1) for message in messages)) == {"batchItemFailures": []}
    assert refusing.left == 0  # the write of the three slots, sent three times; then each asked alone
    for message in messages:
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    delivered = [json.loads(m["body"])["id"] for m in aws.take(aws.target_url)]
    delivered += [envelope["id"] for envelope in dispatch_one_at_a_time(aws, due_ms + 60_000)]
    assert sorted(delivered) == ["member-0", "member-1", "member-2"]
