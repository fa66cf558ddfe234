"""Outcome events through the api and dispatcher handlers, on virtual time: each occurrence that ends gives one
event to the outcomes target (through the delayer queue), with exact times; a failing outcomes target is
retried, then parked with the reason ``outcome``, and never repeats or fails the delivery; a deployment without
``OUTCOMES`` sends nothing new."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.core import groups

from .conftest import call_api, call_direct
from .dispatching import dispatch, receive
from .grouping import cancel, sweep
from .periodic_timers import put
from .redriving import run
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")


@pytest.fixture
def outcomes(aws, monkeypatch):
    """A deployment whose outcome events go to the SQS queue ``outcomes`` (every kind): its URL."""
    url = aws.sqs.create_queue(QueueName="outcomes")["QueueUrl"]
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": url, "fifo": False},
                                  "kinds": ["DELIVERED", "FAILED", "STALE", "CANCELLED"]})
    return url


def settle_outcomes(monkeypatch, settings: dict) -> None:
    from scheduler_runtime.aws import context

    monkeypatch.setenv("OUTCOMES", json.dumps(settings))
    context._contexts.clear()


def create(schedule_id: str, due_in: float = 10, **extra) -> int:
    due_ms = now_ms() + int(due_in * 1000)
    body = {"id": schedule_id, "dueAt": due_ms / 1000, "payload": {"keep": schedule_id}, **extra}
    status, answer = call_api("POST", "/schedules", body)
    assert status == 201, answer
    return due_ms


def dispatch_at(aws, instant_ms: int, receive_count: int = 1) -> dict:
    """Move to ``instant_ms`` and hand the dispatcher every message of the delayer queue that is visible then."""
    virtual().move_to(instant_ms)
    messages = aws.receive(aws.delayer_url)
    assert messages, "nothing to dispatch"
    return dispatch(*(receive(m, receive_count) for m in messages))


def outcome_messages(aws) -> list[dict]:
    """The outcome events waiting in the delayer queue (taken from it)."""
    bodies = [json.loads(m["body"]) for m in aws.take(aws.delayer_url)]
    assert all("outcome" in body for body in bodies), bodies
    return [body["outcome"] for body in bodies]


def delivered_outcomes(aws, url: str) -> list[dict]:
    """Deliver the outcome messages waiting in the delayer queue; what reached the outcomes queue."""
    messages = aws.receive(aws.delayer_url)
    if messages:
        assert dispatch(*(receive(m, 1) for m in messages)) == {"batchItemFailures": []}
        for message in messages:
            aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    return [json.loads(m["body"]) for m in aws.take(url)]


def test_a_delivered_schedule_gives_one_delivered_event_with_its_exact_times_and_the_targets_answer(aws, outcomes):
    due_ms = create("paid", group="tenant-1")
    assert dispatch_at(aws, due_ms + 250) == {"batchItemFailures": []}
    [envelope] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    [event] = delivered_outcomes(aws, outcomes)
    answer = event.pop("answer")
    assert event == {"outcome": "DELIVERED", "id": "paid", "group": "tenant-1", "target": "default",
                     "dueAt": iso(due_ms), "dedupeKey": envelope["dedupeKey"], "attempts": 1,
                     "endedAt": iso(due_ms + 250), "firedAt": iso(due_ms + 250), "latenessMs": 250}
    assert set(answer) == {"messageId"} and answer["messageId"]
    assert aws.take(aws.target_url) == []  # the outcome's delivery is not the schedule's


def test_a_schedule_that_fails_its_attempts_gives_one_failed_event_with_the_reason_and_the_last_error(aws, outcomes):
    due_ms = create("broken-twice", due_in=0, target="broken", retry={"maxAttempts": 2})
    assert len(dispatch_at(aws, due_ms)["batchItemFailures"]) == 1
    assert aws.receive(aws.delayer_url) == []  # a failed attempt that is retried has no outcome yet
    retried = due_ms + 360_000
    assert dispatch_at(aws, retried, receive_count=2) == {"batchItemFailures": []}
    [event] = outcome_messages(aws)
    assert (event["outcome"], event["attempts"], event["endedAt"]) == ("FAILED", 2, iso(retried))
    assert event["reason"].startswith("delivery failed after 2 attempts: maxAttempts 2 reached: ")
    assert "NonExistentQueue" in event["lastError"] or "does not exist" in event["lastError"]
    read = call_api("GET", "/schedules/broken-twice")[1]
    assert (read["status"], read["lastError"]) == ("FAILED", event["reason"])


def test_a_schedule_past_its_lateness_bound_gives_a_stale_event_and_never_reaches_the_target(aws, outcomes):
    due_ms = create("too-late", due_in=0, maxLatenessSeconds=5)
    assert dispatch_at(aws, due_ms + 30_000) == {"batchItemFailures": []}
    assert aws.take(aws.target_url) == []
    [event] = outcome_messages(aws)
    assert (event["outcome"], event["attempts"]) == ("STALE", 0)
    assert event["reason"] == "stale: it would start 30 s after its due time, past maxLatenessSeconds 5"
    assert call_api("GET", "/schedules/too-late")[1]["status"] == "FAILED"


def test_a_cancelled_schedule_gives_a_cancelled_event_when_asked_and_is_never_delivered(aws, outcomes):
    due_ms = create("called-off", due_in=120)
    virtual().advance(1)
    assert call_api("DELETE", "/schedules/called-off")[0] == 200
    [event] = outcome_messages(aws)
    assert (event["outcome"], event["reason"], event["dueAt"], event["attempts"]) == (
        "CANCELLED", "cancelled", iso(due_ms), 0)
    virtual().move_to(due_ms + 1000)
    assert aws.take(aws.target_url) == []


def test_a_deployment_that_asks_for_the_default_kinds_gets_no_cancelled_event(aws, monkeypatch):
    url = aws.sqs.create_queue(QueueName="outcomes")["QueueUrl"]
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": url, "fifo": False}})
    create("called-off", due_in=120)
    assert call_api("DELETE", "/schedules/called-off")[0] == 200
    assert aws.receive(aws.delayer_url) == []


def test_the_payload_rides_along_only_when_the_deployment_asks(aws, monkeypatch):
    url = aws.sqs.create_queue(QueueName="outcomes")["QueueUrl"]
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": url, "fifo": False}, "includePayload": True})
    due_ms = create("with-payload", due_in=0)
    dispatch_at(aws, due_ms)
    [event] = outcome_messages(aws)
    assert event["payload"] == {"keep": "with-payload"}


def test_a_failing_outcomes_target_is_retried_then_parked_with_the_reason_outcome_and_the_delivery_stands(
        aws, monkeypatch):
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": aws.target_url.replace("target", "gone"),
                                             "fifo": False}})
    due_ms = create("delivered-anyway", due_in=0)
    assert dispatch_at(aws, due_ms) == {"batchItemFailures": []}
    assert len(aws.take(aws.target_url)) == 1
    [message] = aws.receive(aws.delayer_url)
    assert len(dispatch(receive(message, 1))["batchItemFailures"]) == 1  # handed out again later
    assert aws.receive(aws.dlq_url) == []
    assert dispatch(receive(message, 3)) == {"batchItemFailures": []}  # the last receive (MAX_RECEIVE_COUNT 3)
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["outcome"]["outcome"] == "DELIVERED"
    assert parked["messageAttributes"]["reason"]["stringValue"].startswith("outcome: ")
    assert parked["messageAttributes"]["scheduleId"]["stringValue"] == "delivered-anyway"
    assert aws.take(aws.target_url) == []  # never delivered again
    assert call_api("GET", "/schedules/delivered-anyway")[1]["status"] == "FIRED"


def test_a_redrive_sends_a_parked_outcome_event_back_and_it_reaches_the_outcomes_target(aws, monkeypatch):
    gone = aws.target_url.replace("target", "gone")
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": gone, "fifo": False}})
    due_ms = create("late-news", due_in=0)
    dispatch_at(aws, due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 3)) == {"batchItemFailures": []}
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    url = aws.sqs.create_queue(QueueName="outcomes")["QueueUrl"]
    settle_outcomes(monkeypatch, {"target": {"type": "sqs", "queueUrl": url, "fifo": False}})
    report = run(aws)
    assert [(entry["kind"], entry["id"]) for entry in report.moved] == [("outcome event", "late-news")]
    [event] = delivered_outcomes(aws, url)
    assert (event["outcome"], event["id"]) == ("DELIVERED", "late-news")


def test_a_deployment_without_outcomes_sends_nothing_after_a_delivery(aws):
    due_ms = create("plain", due_in=0)
    assert dispatch_at(aws, due_ms) == {"batchItemFailures": []}
    assert len(aws.take(aws.target_url)) == 1
    assert aws.receive(aws.delayer_url) == [] and aws.receive(aws.dlq_url) == []


def test_each_periodic_occurrence_gives_its_own_delivered_event(aws, outcomes):
    first_ms = (now_ms() // 1000 + 2) * 1000
    put("every-minute", {"every": 60, "startAt": first_ms / 1000, "payload": {}})
    events = []
    for n in range(2):
        dispatch_at(aws, first_ms + n * 60_000)  # the occurrence (the next one waits a minute in the queue)
        events += delivered_outcomes(aws, outcomes)
    assert sorted((e["outcome"], e["dedupeKey"]) for e in events) == [
        ("DELIVERED", f"every-minute@{first_ms}"), ("DELIVERED", f"every-minute@{first_ms + 60_000}")]


def test_a_deleted_periodic_timer_gives_a_cancelled_event_for_its_pending_occurrence(aws, outcomes):
    first_ms = (now_ms() // 1000 + 120) * 1000
    put("nightly", {"every": 3600, "startAt": first_ms / 1000, "payload": {}})
    assert call_api("DELETE", "/periodic/nightly")[0] == 200
    [event] = outcome_messages(aws)
    assert (event["outcome"], event["reason"], event["dedupeKey"]) == ("CANCELLED", "deleted", f"nightly@{first_ms}")


def test_a_group_cancel_gives_each_waiting_member_a_cancelled_event(aws, outcomes, monkeypatch):
    monkeypatch.setattr(groups, "SWEEP_FIRST_DELAY_SECONDS", 0)
    for n in range(3):
        create(f"member-{n}", due_in=600, group="tenant-9")
    cancel("tenant-9")
    sweep(aws)
    events = outcome_messages(aws)
    assert sorted((e["id"], e["outcome"], e["reason"], e["group"]) for e in events) == [
        (f"member-{n}", "CANCELLED", "group cancelled", "tenant-9") for n in range(3)]


def test_a_group_sweep_that_dies_before_sending_its_members_outcomes_sends_them_when_its_message_comes_back(
        aws, outcomes, monkeypatch):
    """The sweep's first receive cancels the waiting members (one-shot and periodic) and dies before their outcome
    events are sent: its message, handed out again, still finds them and sends each one CANCELLED, and then they
    leave the group's index."""
    from scheduler_runtime.aws.outcomes import OutcomeSink

    monkeypatch.setattr(groups, "SWEEP_FIRST_DELAY_SECONDS", 0)
    for n in range(2):
        create(f"member-{n}", due_in=600, group="tenant-7")
    first_ms = (now_ms() // 1000 + 120) * 1000
    put("member-nightly", {"every": 3600, "startAt": first_ms / 1000, "payload": {}, "group": "tenant-7"})
    cancel("tenant-7")
    sweeps = aws.receive(aws.delayer_url)
    assert len(sweeps) == 2 and all(groups.SWEEP_MARKER in json.loads(m["body"]) for m in sweeps)
    sent = OutcomeSink.flush

    def dies(self):
        raise SystemExit("the sandbox ended before the outcome events were sent")

    monkeypatch.setattr(OutcomeSink, "flush", dies)
    for message in sweeps:  # one at a time: a sandbox that ends runs nothing after it
        with pytest.raises(SystemExit):
            dispatch(receive(message, 1))
    assert call_api("GET", "/schedules/member-0")[1]["status"] == "CANCELLED"  # the cancels were written
    assert outcome_messages_but_sweeps(aws) == []
    monkeypatch.setattr(OutcomeSink, "flush", sent)
    assert dispatch(*(receive(m, 2) for m in sweeps)) == {"batchItemFailures": []}
    events = outcome_messages_but_sweeps(aws)
    assert sorted((e["id"], e["outcome"], e["reason"], e["group"]) for e in events) == [
        ("member-0", "CANCELLED", "group cancelled", "tenant-7"), ("member-1", "CANCELLED", "group cancelled",
                                                                    "tenant-7"),
        ("member-nightly", "CANCELLED", "group cancelled", "tenant-7")]
    assert [e["dedupeKey"] for e in events if e["id"] == "member-nightly"] == [f"member-nightly@{first_ms}"]
    assert dispatch(*(receive(m, 3) for m in sweeps)) == {"batchItemFailures": []}  # handed out once more
    assert outcome_messages_but_sweeps(aws) == []  # they left the group's index with their outcomes sent
    assert call_direct("GET", "/schedules?group=tenant-7") == (200, {"items": []})
    assert call_direct("GET", "/periodic?group=tenant-7") == (200, {"items": []})


def test_a_cancelled_schedules_message_sends_its_cancelled_outcome_again_when_it_comes(aws, outcomes):
    due_ms = create("called-off-late", due_in=5)
    assert call_api("DELETE", "/schedules/called-off-late")[0] == 200
    [from_the_cancel] = outcome_messages(aws)  # taken: the delayer queue now holds only the schedule's message
    assert dispatch_at(aws, due_ms) == {"batchItemFailures": []}
    [again] = outcome_messages(aws)
    assert (again["outcome"], again["dedupeKey"], again["reason"]) == (
        "CANCELLED", from_the_cancel["dedupeKey"], "cancelled")


def test_a_delivered_group_member_received_again_after_its_groups_cancel_is_not_also_cancelled(aws, outcomes,
                                                                                                monkeypatch):
    monkeypatch.setattr(groups, "SWEEP_FIRST_DELAY_SECONDS", 0)
    due_ms = create("member", due_in=0, group="tenant-3")
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}  # delivered; its delete is lost
    cancel("tenant-3")
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # the delivery goes on: it started before
    assert len(aws.take(aws.target_url)) == 2  # at least once: the same dedupeKey twice
    events = [e for e in outcome_messages_but_sweeps(aws)]
    assert {e["outcome"] for e in events} == {"DELIVERED"}
    assert call_api("GET", "/schedules/member")[1]["status"] == "FIRED"


def outcome_messages_but_sweeps(aws) -> list[dict]:
    """The outcome events waiting in the delayer queue, a group's sweep messages left aside."""
    bodies = [json.loads(m["body"]) for m in aws.take(aws.delayer_url)]
    return [body["outcome"] for body in bodies if "outcome" in body]


def test_a_retry_received_again_after_its_timers_delete_sends_no_cancelled(aws, outcomes):
    """The retry's first receive delivered the occurrence (DELIVERED sent) and died before its delete: received again
    after the timer's DELETE, it must not also be called CANCELLED."""
    first_ms = (now_ms() // 1000 + 2) * 1000
    put("flaky", {"every": 3600, "startAt": first_ms / 1000, "payload": {}, "target": "broken"})
    dispatch_at(aws, first_ms)  # fails: its retry, a message of its own, 30 s on
    aws.sqs.create_queue(QueueName="missing")  # the broken target mended
    virtual().move_to(first_ms + 30_000)
    [retry] = [m for m in aws.receive(aws.delayer_url) if json.loads(m["body"]).get("attempt")]
    assert dispatch(receive(retry, 1)) == {"batchItemFailures": []}
    assert [e["outcome"] for e in outcome_messages(aws)] == ["DELIVERED"]
    assert call_api("DELETE", "/periodic/flaky")[0] == 200
    outcome_messages(aws)  # the next occurrence's CANCELLED
    dispatch(receive(retry, 2))
    assert outcome_messages(aws) == []


def test_an_outcome_neither_queue_takes_is_logged_whole_with_its_timers_id(aws, outcomes, monkeypatch, caplog):
    from scheduler_runtime.aws.delayer import DelayerQueue

    def refused(*_args, **_kwargs):
        raise RuntimeError("refused (injected)")

    due_ms = create("unheard")
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    monkeypatch.setattr(DelayerQueue, "send", refused)
    monkeypatch.setattr(DelayerQueue, "dead_letter", refused)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [lost] = [r for r in caplog.records if getattr(r, "event", None) == "outcome_lost"]
    assert lost.levelname == "ERROR" and lost.fields["id"] == "unheard"
    assert json.loads(lost.fields["outcome"])["outcome"] == "DELIVERED"
