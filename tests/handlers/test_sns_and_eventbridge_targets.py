"""SNS topics and EventBridge buses as targets, through dispatcher handler events on in-process moto:
a delivery arrives where a consumer reads it (a queue subscribed to the topic, a queue a rule on the
bus targets), with the envelope as the message or the event's detail; a FIFO topic gets the message
group and the deduplication id a FIFO queue gets; and each failure is classified as the SQS target's
are: throttling and internal errors retried, a denied permission, a missing topic or bus and an
invalid request parked at once with the reason."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from scheduler_runtime.aws.targets import fifo_deduplication_id

from .conftest import aws_client, call_api, faulty, schedule
from .dispatching import dispatch, receive
from .target_delivery import ACCOUNT, deliver_once, parked_reason, raises

pytestmark = pytest.mark.usefixtures("virtual_clock")

SOURCE, DETAIL_TYPE = "com.example.timers", "Timer due"


@pytest.fixture
def fanout(aws, monkeypatch) -> dict[str, str]:
    """Targets ``alerts`` (a standard topic), ``ordered-alerts`` (a FIFO topic with a message group),
    ``by-id-alerts`` (the same FIFO topic without one), ``events`` (a custom bus), ``no-topic`` and
    ``no-bus`` (neither exists); each existing one read through a queue. {name: the queue's URL}."""
    sns = aws_client("sns")
    events = aws_client("events")
    queues = {name: aws.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"] for name, attributes in (
        ("alerts-inbox", {}), ("ordered-inbox.fifo", {"FifoQueue": "true"}), ("events-inbox", {}))}
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    fifo_topic = sns.create_topic(Name="alerts.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    for topic_arn, queue in ((topic, "alerts-inbox"), (fifo_topic, "ordered-inbox.fifo")):
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn(aws, queues[queue]),
                      Attributes={"RawMessageDelivery": "true"})
    bus = events.create_event_bus(Name="timers")["EventBusArn"]
    events.put_rule(Name="due-timers", EventBusName="timers",
                    EventPattern=json.dumps({"source": [SOURCE], "detail-type": [DETAIL_TYPE]}))
    events.put_targets(Rule="due-timers", EventBusName="timers",
                       Targets=[{"Id": "inbox", "Arn": queue_arn(aws, queues["events-inbox"])}])
    targets = json.loads(os.environ["TARGETS"])
    targets.update({
        "alerts": {"type": "sns", "topicArn": topic, "fifo": False},
        "ordered-alerts": {"type": "sns", "topicArn": fifo_topic, "fifo": True, "messageGroupId": "orders"},
        "by-id-alerts": {"type": "sns", "topicArn": fifo_topic, "fifo": True},
        "events": {"type": "eventbridge", "eventBusArn": bus, "detailType": DETAIL_TYPE, "source": SOURCE},
        "no-topic": {"type": "sns", "topicArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:gone", "fifo": False},
        "no-bus": {"type": "eventbridge", "eventBusArn": f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/gone",
                   "detailType": DETAIL_TYPE, "source": SOURCE},
    })
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    return {"alerts": queues["alerts-inbox"], "ordered-alerts": queues["ordered-inbox.fifo"],
            "by-id-alerts": queues["ordered-inbox.fifo"], "events": queues["events-inbox"]}


def queue_arn(aws, url: str) -> str:
    return aws.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


# --- deliveries arrive ---------------------------------------------------------------------------


def test_a_schedule_published_to_a_topic_arrives_in_a_subscribed_queue_as_the_envelope(aws, fanout):
    assert deliver_once(aws, "sns-1", "alerts", payload={"hello": "topic"}) == {"batchItemFailures": []}
    [arrived] = aws.wait_for_messages(fanout["alerts"])
    envelope = json.loads(arrived["body"])  # raw message delivery: the queue's message is the envelope
    assert set(envelope) == {"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}
    assert (envelope["id"], envelope["payload"], envelope["target"]) == ("sns-1", {"hello": "topic"}, "alerts")
    assert arrived["messageAttributes"]["dedupeKey"]["stringValue"] == envelope["dedupeKey"]
    assert call_api("GET", "/schedules/sns-1")[1]["status"] == "FIRED"


def test_a_fifo_topic_gets_the_configured_group_and_the_deduplication_id_of_the_dedupe_key(aws, fanout):
    assert deliver_once(aws, "sns-fifo", "ordered-alerts") == {"batchItemFailures": []}
    [arrived] = aws.wait_for_messages(fanout["ordered-alerts"])
    envelope = json.loads(arrived["body"])
    assert arrived["attributes"]["MessageGroupId"] == "orders"
    assert arrived["attributes"]["MessageDeduplicationId"] == fifo_deduplication_id(envelope["dedupeKey"]) \
        == hashlib.sha256(envelope["dedupeKey"].encode()).hexdigest()


def test_a_fifo_topic_without_a_configured_group_groups_by_schedule_id(aws, fanout):
    assert deliver_once(aws, "by-id", "by-id-alerts") == {"batchItemFailures": []}
    [arrived] = aws.wait_for_messages(fanout["by-id-alerts"])
    assert arrived["attributes"]["MessageGroupId"] == "by-id"


def test_a_repeated_delivery_to_a_fifo_topic_is_dropped_by_its_deduplication_id(aws, fanout):
    schedule("twice", 0, target="ordered-alerts")
    [message] = aws.receive(aws.delayer_url)
    published: list[dict] = []

    def publish(real, **kwargs):
        published.append(kwargs)
        return real.publish(**kwargs)

    with faulty("sns", publish=publish):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
        assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # SQS handed the message out again
    first, again = published
    assert json.loads(again["Message"])["attempt"] == 2
    assert again["MessageDeduplicationId"] == first["MessageDeduplicationId"]
    assert len(aws.receive(fanout["ordered-alerts"])) == 1


def test_a_schedule_put_on_a_bus_reaches_a_rules_queue_with_the_envelope_as_detail(aws, fanout):
    assert deliver_once(aws, "eb-1", "events", payload=[1, "two"]) == {"batchItemFailures": []}
    [arrived] = aws.wait_for_messages(fanout["events"])
    event = json.loads(arrived["body"])
    assert (event["source"], event["detail-type"]) == (SOURCE, DETAIL_TYPE)
    assert (event["detail"]["id"], event["detail"]["payload"], event["detail"]["attempt"]) == ("eb-1", [1, "two"], 1)
    assert set(event["detail"]) == {"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}
    assert call_api("GET", "/schedules/eb-1")[1]["status"] == "FIRED"


# --- failures: retried, or parked at once with the reason ---------------------------------------


@pytest.mark.parametrize("code", ["Throttled", "KMSThrottling", "InternalError"])
def test_a_throttled_or_failing_publish_is_retried(aws, fanout, code):
    schedule("sns-retry", 0, target="alerts")
    [message] = aws.receive(aws.delayer_url)
    with faulty("sns", publish=raises(code, "Publish")):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert aws.receive(aws.dlq_url) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # the retry, once SNS takes it
    assert json.loads(aws.wait_for_messages(fanout["alerts"])[0]["body"])["attempt"] == 2


def test_a_topic_that_does_not_exist_parks_the_schedule_at_once_with_the_reason(aws, fanout):
    assert deliver_once(aws, "lost", "no-topic") == {"batchItemFailures": []}
    reason = parked_reason(aws, "lost")
    assert reason.startswith("undeliverable (attempt 1, not retried): ")
    assert f"topic arn:aws:sns:us-east-1:{ACCOUNT}:gone refuses the envelope for good: NotFound" in reason


def test_an_envelope_larger_than_the_topic_takes_is_parked_at_once_with_the_reason(aws, fanout):
    payload = "x" * (262_144 - 100)  # accepted by the API (at most 256 KiB serialized); its envelope is not by SNS
    assert deliver_once(aws, "too-big", "alerts", payload=payload) == {"batchItemFailures": []}
    reason = parked_reason(aws, "too-big")
    assert "refuses the envelope for good: InvalidParameter" in reason and "Message too long" in reason
    assert aws.receive(fanout["alerts"]) == []


@pytest.mark.parametrize("code", ["AuthorizationError", "KMSAccessDenied", "InvalidParameter"])
def test_a_denied_or_invalid_publish_parks_the_schedule_at_once(aws, fanout, code):
    with faulty("sns", publish=raises(code, "Publish")):
        assert deliver_once(aws, "denied", "alerts") == {"batchItemFailures": []}
    assert f"refuses the envelope for good: {code}: injected" in parked_reason(aws, "denied")


def test_a_bus_that_does_not_exist_parks_the_schedule_at_once_with_the_reason(aws, fanout):
    assert deliver_once(aws, "no-bus", "no-bus") == {"batchItemFailures": []}
    reason = parked_reason(aws, "no-bus")
    assert reason.startswith("undeliverable (attempt 1, not retried): ")
    assert "event-bus/gone refuses the envelope for good: ResourceNotFoundException" in reason


def failed_entry(code: str):
    def put_events(real, **kwargs):
        return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": code, "ErrorMessage": f"{code} (injected)"}]}
    return put_events


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalFailure"])
def test_a_failed_entry_that_may_pass_later_is_retried_with_its_error_code(aws, fanout, code):
    schedule("eb-retry", 0, target="events")
    [message] = aws.receive(aws.delayer_url)
    retry = {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    with faulty("events", put_events=failed_entry(code)):
        assert [dispatch(receive(message, count)) for count in (1, 2, 3)] == [retry, retry, {"batchItemFailures": []}]
    [parked] = aws.receive(aws.dlq_url)
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    assert reason.startswith("delivery failed after 3 attempts: ")
    assert f"failed the entry: {code}: {code} (injected)" in reason


@pytest.mark.parametrize("code", ["AccessDeniedException", "NotAuthorizedForSourceException", "MalformedDetail"])
def test_a_failed_entry_that_no_retry_can_change_parks_the_schedule_at_once(aws, fanout, code):
    with faulty("events", put_events=failed_entry(code)):
        assert deliver_once(aws, "eb-denied", "events") == {"batchItemFailures": []}
    assert f"refuses the envelope for good: {code}: {code} (injected)" in parked_reason(aws, "eb-denied")


@pytest.mark.parametrize(("code", "retried"), [("InternalException", True), ("ThrottlingException", True),
                                               ("AccessDeniedException", False)])
def test_a_failed_put_events_request_is_classified_by_its_error_code(aws, fanout, code, retried):
    schedule("eb-request", 0, target="events")
    [message] = aws.receive(aws.delayer_url)
    with faulty("events", put_events=raises(code, "PutEvents")):
        failures = dispatch(receive(message, 1))["batchItemFailures"]
    assert failures == ([{"itemIdentifier": message["messageId"]}] if retried else [])
    assert (aws.receive(aws.dlq_url) == []) is retried
