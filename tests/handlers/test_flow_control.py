"""Flow control on a limited target (``flowControl`` in its description) through the api and dispatcher handlers,
on virtual time: starts spaced by the rate to the millisecond, a delivery that waits for room waits in its
message (so a cancel still wins), a retry keeps its attempts, places among ``maxInFlight`` are never counted twice
and free themselves, and a target without limits pays nothing new."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws.flow import FlowStore
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits

from .conftest import call_api
from .dispatching import dispatch, receive
from .flow_controlling import create, dispatch_one_at_a_time, limit, slots
from .virtual_time import iso, now_ms, receivable_instants, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")


def test_six_due_at_once_start_one_interval_apart_to_the_millisecond_and_wait_in_their_messages(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 1, "periodSeconds": 2})
    due_ms = now_ms() + 5000
    for n in range(6):
        create(f"mail-{n}", due_ms, "mailer")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert [e["firedAt"] for e in delivered] == [iso(at) for at in slots({"rate": 1, "periodSeconds": 2}, 6, due_ms)]
    assert slots({"rate": 1, "periodSeconds": 2}, 2) == [0, 2050]  # two seconds and the 50 ms start tolerance
    assert sorted(e["id"] for e in delivered) == [f"mail-{n}" for n in range(6)]


def test_starts_closer_than_a_second_are_waited_for_in_the_dispatcher_at_their_exact_slots(aws, monkeypatch):
    limit(aws, monkeypatch, "api", {"rate": 4})
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"call-{n}", due_ms, "api")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 10_000)
    assert [e["firedAt"] for e in delivered] == [iso(at) for at in slots({"rate": 4}, 3, due_ms)]


def test_a_cancel_wins_while_a_delivery_waits_for_room(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 1, "periodSeconds": 10})
    due_ms = now_ms() + 5000
    create("first", due_ms, "mailer")
    create("second", due_ms, "mailer")
    virtual().move_to(due_ms)
    for message in aws.receive(aws.delayer_url):
        dispatch(receive(message, 1))
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    assert [json.loads(m["body"])["id"] for m in aws.take(aws.target_url)] == ["first"]
    assert call_api("GET", "/schedules/second")[1]["status"] == "QUEUED"  # waiting in its message, not started
    assert call_api("DELETE", "/schedules/second")[0] == 200
    assert dispatch_one_at_a_time(aws, due_ms + 60_000) == []
    assert call_api("GET", "/schedules/second")[1]["status"] == "CANCELLED"


def test_a_failed_attempt_to_a_limited_target_is_retried_with_its_attempts_counted(aws, monkeypatch):
    gone = aws.target_url.replace("target", "gone")
    limit(aws, monkeypatch, "flaky", {"rate": 1, "periodSeconds": 2}, queue_url=gone)
    due_ms = now_ms() + 5000
    create("flaky-1", due_ms, "flaky", retry={"maxAttempts": 2})
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert len(dispatch(receive(message, 1))["batchItemFailures"]) == 1
    assert call_api("GET", "/schedules/flaky-1")[1]["attempts"] == 1
    # Received again, the retry takes the next slot, two seconds on, and waits for it in a message of its own.
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    assert call_api("GET", "/schedules/flaky-1")[1]["attempts"] == 1
    second = slots({"rate": 1, "periodSeconds": 2}, 2, due_ms)[1]
    assert receivable_instants(aws.delayer_url) == [due_ms + 2000]  # a whole second's delay, then the rest waited
    dispatch_one_at_a_time(aws, due_ms + 60_000)  # its second attempt, its last: parked
    read = call_api("GET", "/schedules/flaky-1")[1]
    assert (read["status"], read["attempts"], read["firedAt"]) == ("FAILED", 2, iso(second))
    assert read["lastError"].startswith("delivery failed after 2 attempts: maxAttempts 2 reached")


def test_a_target_without_limits_beside_a_limited_one_is_delivered_at_its_due_time_with_no_flow_item(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 1})
    due_ms = now_ms() + 5000
    create("plain", due_ms + 321, "default")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 10_000)
    assert [e["firedAt"] for e in delivered] == [iso(due_ms + 321)]
    assert aws.count_items(flow.KEY_PREFIX) == 0


def test_places_are_never_given_twice_and_a_lease_left_by_a_dead_dispatcher_frees_itself(aws):
    store, limits = FlowStore(aws.ddb, aws.table), FlowLimits(max_in_flight=2)
    now = now_ms()
    held = [store.acquire("pool", limits, now, now + 360_000) for _ in range(3)]
    assert sorted(lease.index for lease in held if lease is not None) == [0, 1] and held.count(None) == 1
    store.release("pool", held[0])
    assert store.acquire("pool", limits, now, now + 360_000).index == held[0].index  # given back: taken again
    assert store.acquire("pool", limits, now + 360_000, now + 720_000) is not None  # the other ended by itself


def test_a_place_whose_write_is_sent_twice_is_held_once_by_its_delivery_and_given_back(aws, monkeypatch):
    """The SDK sends a write again when its answer was lost: the second finds the place holding this delivery's own
    lease and has it, so the place is neither refused to the delivery that holds it nor left held by no one."""
    store, limits = FlowStore(aws.ddb, aws.table), FlowLimits(max_in_flight=1)
    real_update = aws.ddb.update_item

    def answer_lost_then_sent_again(**request):
        real_update(**request)
        return real_update(**request)

    monkeypatch.setattr(aws.ddb, "update_item", answer_lost_then_sent_again)
    lease = store.acquire("pool", limits, now_ms(), now_ms() + 360_000)
    assert lease is not None and lease.index == 0
    monkeypatch.setattr(aws.ddb, "update_item", real_update)
    assert store.acquire("pool", limits, now_ms(), now_ms() + 360_000) is None  # held, once
    store.release("pool", lease)
    assert store.acquire("pool", limits, now_ms(), now_ms() + 360_000) is not None


def test_a_paused_target_gives_no_slot_and_no_place(aws):
    store, limits = FlowStore(aws.ddb, aws.table), FlowLimits(rate=5, max_in_flight=1)
    key = flow.flow_key("paused").as_item_key()
    aws.ddb.put_item(TableName=aws.table, Item={**key, flow.PAUSED: {"BOOL": True}})
    assert store.reserve("paused", limits, now_ms()) is None
    assert store.acquire("paused", limits, now_ms(), now_ms() + 1000) is None


def test_periodic_occurrences_to_a_limited_target_take_their_slots_and_a_delete_still_stops_one_waiting(
        aws, monkeypatch):
    from .periodic_timers import put

    limit(aws, monkeypatch, "pager", {"rate": 1, "periodSeconds": 4})
    first_ms = (now_ms() // 1000 + 5) * 1000
    for name in ("alpha", "beta", "gamma"):
        put(name, {"every": 60, "startAt": first_ms / 1000, "payload": {}, "target": "pager"})
    virtual().move_to(first_ms)
    second = slots({"rate": 1, "periodSeconds": 4}, 2, first_ms)[1]
    delivered = dispatch_one_at_a_time(aws, second)  # the first, at once; the second, an interval on
    assert call_api("DELETE", "/periodic/gamma")[0] == 200  # the third waits for its slot, eight seconds on
    delivered += dispatch_one_at_a_time(aws, first_ms + 30_000)
    assert [(e["id"] in ("alpha", "beta"), e["firedAt"]) for e in delivered] == [
        (True, iso(first_ms)), (True, iso(second))]


def test_a_limited_target_has_its_own_metrics_and_a_deployment_without_limits_emits_none(aws, monkeypatch):
    from scheduler_runtime import observability

    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    due_ms = now_ms() + 5000
    create("plain", due_ms, "default")
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms + 10_000)
    assert not any("Target" in json.loads(line) for line in lines)
    limit(aws, monkeypatch, "mailer", {"rate": 1, "periodSeconds": 2})
    for n in range(3):
        create(f"mail-{n}", due_ms + 20_000, "mailer")
    virtual().move_to(due_ms + 20_000)
    lines.clear()
    dispatch_one_at_a_time(aws, due_ms + 60_000)
    records = [json.loads(line) for line in lines if "Target" in json.loads(line)]
    assert {record["Target"] for record in records} == {"mailer"}
    assert sum(record.get("WaitingForRoom", 0) for record in records) == 2  # two waited in their messages
    late = sorted(late for record in records for late in record.get("LatenessMs", []))
    assert late == [at - due_ms - 20_000 for at in slots({"rate": 1, "periodSeconds": 2}, 3, due_ms + 20_000)]


def test_each_slot_takes_one_write_whether_the_target_is_idle_or_queued(aws, monkeypatch):
    writes: list[str] = []
    real_update = FlowStore._update

    def counted(self, target, update, *args, **kwargs):
        answer = real_update(self, target, update, *args, **kwargs)
        writes.append("made" if answer is None or isinstance(answer, int) else "refused")
        return answer

    monkeypatch.setattr(FlowStore, "_update", counted)
    limit(aws, monkeypatch, "queued-up", {"rate": 1, "periodSeconds": 2})
    due_ms = now_ms() + 5000
    for n in range(5):
        create(f"q-{n}", due_ms, "queued-up")
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms)  # the five take their slots: the first idle, four queued behind it
    assert writes == ["made"] * 5


def test_a_delivery_that_comes_later_than_its_slot_and_tolerance_takes_a_new_slot_instead_of_starting_at_once(
        aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 1, "periodSeconds": 2})
    due_ms = now_ms() + 5000
    first, second, third = slots({"rate": 1, "periodSeconds": 2}, 3, due_ms)
    create("a", due_ms, "mailer")
    create("b", due_ms, "mailer")  # its slot: the second
    create("c", second + 50, "mailer")  # due after b's slot: it takes the third
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms)
    virtual().move_to(second + 50)
    by_id = {json.loads(m["body"])["id"]: m for m in aws.receive(aws.delayer_url)}
    aws.sqs.change_message_visibility(QueueUrl=aws.delayer_url, ReceiptHandle=by_id["b"]["receiptHandle"],
                                      VisibilityTimeout=0)  # b's dispatcher is late (a busy mapping): c goes first
    dispatch(receive(by_id["c"], 1))
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=by_id["c"]["receiptHandle"])
    virtual().move_to(second + 900)  # b, 900 ms after its slot: it must not start now, before c's slot
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    fourth = slots({"rate": 1, "periodSeconds": 2}, 4, due_ms)[3]
    assert sorted((e["firedAt"], e["id"]) for e in delivered) == [(iso(third), "c"), (iso(fourth), "b")]


def test_a_copy_of_a_retry_waiting_for_room_is_refused_once_the_other_copy_started_it(aws, monkeypatch):
    """An ambiguous send of the message a retry waits in makes two copies: the first to start takes the record over
    from the tag they stand in for, and the second is refused as a duplicate, not delivered again nor failed."""
    gone = aws.target_url.replace("target", "gone")
    limit(aws, monkeypatch, "flaky", {"rate": 1, "periodSeconds": 2}, queue_url=gone)
    due_ms = now_ms() + 5000
    create("copied", due_ms, "flaky", retry={"maxAttempts": 3})
    virtual().move_to(due_ms)
    [message] = aws.receive(aws.delayer_url)
    assert len(dispatch(receive(message, 1))["batchItemFailures"]) == 1  # attempt 1 fails
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # its retry waits for the next slot
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    virtual().move_to(slots({"rate": 1, "periodSeconds": 2}, 2, due_ms)[1])
    [waiting] = aws.receive(aws.delayer_url)
    limit(aws, monkeypatch, "flaky", {"rate": 1, "periodSeconds": 2})  # the target mended: the retry delivers
    assert dispatch(receive(waiting, 1)) == {"batchItemFailures": []}
    assert dispatch(receive(waiting, 1, message_id="a-copy")) == {"batchItemFailures": []}
    assert [json.loads(m["body"])["id"] for m in aws.take(aws.target_url)] == ["copied"]
    read = call_api("GET", "/schedules/copied")[1]
    assert (read["status"], read["attempts"]) == ("FIRED", 2)


def test_a_retry_waiting_for_room_whose_own_attempt_fails_is_retried_until_parked(aws, monkeypatch):
    """A retry put back to wait for room takes the record over when it starts; if its attempt fails and it comes back
    with no room at once, it is put back again standing in for that tag too, so its next start is not refused as a
    duplicate (which left the schedule FIRED with nothing to deliver or park it)."""
    gone = aws.target_url.replace("target", "gone")
    limit(aws, monkeypatch, "flaky", {"rate": 1, "periodSeconds": 600}, queue_url=gone)
    due_ms = now_ms() + 5000
    create("flaky-1", due_ms, "flaky", retry={"maxAttempts": 3})
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms + 3_600_000)
    read = call_api("GET", "/schedules/flaky-1")[1]
    assert (read["status"], read["attempts"]) == ("FAILED", 3)
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["id"] == "flaky-1"
