"""PATCH /schedules/{id} through the api, sweeper, enqueuer and dispatcher handlers on in-process moto: a
waiting schedule gets its new due time (both ways across the fixture's 60 s window), its old due time is
never delivered, a repeat changes nothing, and every crash point leaves the schedule as it was or rescheduled."""

import pytest

from scheduler_runtime.core import keys, window
from scheduler_runtime.core.timeparse import parse_instant
from scheduler_runtime.handlers import dispatcher, enqueuer

from .conftest import call_api, faulty, service_error
from .dispatching import dispatch_all, dispatch_until_empty, waiting_in_delayer
from .redriving import cut_short_before_its_delete, park, run
from .rescheduling import create, patch
from .virtual_time import now_s, step_to_next_message

pytestmark = pytest.mark.usefixtures("virtual_clock")


def token_of(aws, schedule_id: str) -> str:
    return aws.item(f"SCHEDULE#{schedule_id}", "RECORD")["token"]["S"]


def record_update_fails(real, **kwargs):
    """The reschedule's update of the record fails (the function died, or DynamoDB refused it)."""
    if "rescheduleHash" in kwargs["UpdateExpression"]:
        raise service_error("UpdateItem")
    return real.update_item(**kwargs)


def test_a_queued_schedule_moved_later_within_the_window_is_delivered_once_at_its_new_time(aws):
    create("q1", 0)
    status, answer = patch("q1", {"delaySeconds": 2, "payload": {"v": 2}})
    assert status == 200 and answer["status"] == "QUEUED" and answer["target"] == "default"
    new_due = parse_instant(answer["dueAt"])
    assert dispatch_all(aws) == []  # the old message surfaces at once: a stray, dropped
    delivered = dispatch_until_empty(aws)
    assert [(d["payload"], d["dueAt"], d["firedAt"]) for d in delivered] == [
        ({"v": 2}, answer["dueAt"], answer["dueAt"])]
    assert new_due == parse_instant(answer["dueAt"])
    assert call_api("GET", "/schedules/q1")[1]["status"] == "FIRED"


def test_a_queued_schedule_moved_beyond_the_window_and_back_is_delivered_once_at_the_last_time(aws):
    create("q2", 0)
    status, answer = patch("q2", {"delaySeconds": 120})
    assert (status, answer["status"]) == (200, "SCHEDULED")
    assert aws.count_items("TIMER#") == 1
    assert dispatch_all(aws) == [] and waiting_in_delayer(aws) == 0  # the old message was a stray
    status, answer = patch("q2", {"delaySeconds": 0, "payload": "back"})
    assert (status, answer["status"]) == (200, "QUEUED")
    assert aws.count_items("TIMER#") == 0  # the long timer was removed, not left to become a message
    assert enqueuer.handler({"Records": aws.new_stream_records("REMOVE")}) == {"batchItemFailures": []}
    assert waiting_in_delayer(aws) == 1  # the PATCH's message alone: the timer's removal was flagged, not enqueued
    assert [d["payload"] for d in dispatch_until_empty(aws)] == ["back"]


def test_a_long_schedule_moved_within_the_window_keeps_its_target_and_retry_and_its_old_timer_goes(aws):
    create("l1", 3600, target="ordered", retry={"maxAttempts": 2})
    assert aws.count_items("TIMER#") == 1
    status, answer = patch("l1", {"delaySeconds": 0})
    assert (status, answer["status"], answer["target"]) == (200, "QUEUED", "ordered")
    assert aws.count_items("TIMER#") == 0
    read = call_api("GET", "/schedules/l1")[1]
    assert read["retry"] == {"maxAttempts": 2} and read["payload"] == {"v": 1} and read["dueAt"] == answer["dueAt"]
    messages = aws.wait_for_messages(aws.delayer_url)
    assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    assert len(aws.receive(aws.fifo_target_url)) == 1


def test_a_long_schedule_moved_to_another_long_time_has_one_timer_at_the_new_time(aws):
    create("l2", 3600)
    status, answer = patch("l2", {"delaySeconds": 7200})
    assert (status, answer["status"]) == (200, "SCHEDULED")
    timers = [i for i in aws.ddb.scan(TableName=aws.table)["Items"] if i["pk"]["S"].startswith("TIMER#")]
    assert len(timers) == 1 and timers[0]["token"]["S"] == token_of(aws, "l2")
    assert timers[0]["sk"]["S"] == keys.timer_sort_key(parse_instant(answer["dueAt"]), "l2")


def test_a_repeated_patch_answers_the_same_and_changes_nothing(aws, virtual_clock):
    create("r1", 30)
    first = patch("r1", {"delaySeconds": 40, "payload": [1]})
    token = token_of(aws, "r1")
    virtual_clock.advance(0.01)  # a moment later, the same delaySeconds would be another dueAt
    assert patch("r1", {"delaySeconds": 40.0, "payload": [1]}) == first  # the same body: the first answer
    assert token_of(aws, "r1") == token
    assert waiting_in_delayer(aws) == 2  # the create's message and the first PATCH's: no third
    other = patch("r1", {"delaySeconds": 40, "payload": [2]})
    assert other[0] == 200 and token_of(aws, "r1") != token


def test_a_patch_with_the_due_time_and_payload_the_schedule_has_changes_nothing(aws):
    due = create("r2", 30)["dueAt"]
    token = token_of(aws, "r2")
    assert patch("r2", {"dueAt": due, "payload": {"v": 1}}) == (200, {"id": "r2", "dueAt": due, "status": "QUEUED",
                                                                      "target": "default"})
    assert token_of(aws, "r2") == token and waiting_in_delayer(aws) == 1


def test_a_new_payload_at_the_same_due_time_is_delivered_without_a_new_message(aws):
    due = create("p1", 0)["dueAt"]
    assert patch("p1", {"dueAt": due, "payload": "new"})[0] == 200
    assert waiting_in_delayer(aws) == 1
    assert [d["payload"] for d in dispatch_until_empty(aws)] == ["new"]


def test_a_post_replay_of_the_original_body_after_a_reschedule_answers_the_rescheduled_schedule(aws):
    body = {"id": "o1", "dueAt": round(now_s() + 3600, 3), "payload": "x"}
    assert call_api("POST", "/schedules", body)[0] == 201
    new_due = patch("o1", {"delaySeconds": 0})[1]["dueAt"]
    assert call_api("POST", "/schedules", body) == (200, {"id": "o1", "dueAt": new_due, "status": "QUEUED",
                                                           "target": "default"})
    assert aws.count_items("TIMER#") == 0  # the replay's timer at the old due time was removed again
    assert call_api("POST", "/schedules", {**body, "payload": "y"})[0] == 409
    assert [d["dueAt"] for d in dispatch_until_empty(aws)] == [new_due]


def test_once_delivery_started_or_the_schedule_ended_a_reschedule_is_refused_with_its_status(aws):
    create("e1", 0)
    dispatch_until_empty(aws)
    status, answer = patch("e1", {"delaySeconds": 60})
    assert status == 409 and "FIRED" in answer["message"] and answer["field"] == "id"
    create("e2", 30)
    assert call_api("DELETE", "/schedules/e2")[0] == 200
    status, answer = patch("e2", {"delaySeconds": 60})
    assert status == 409 and "CANCELLED" in answer["message"]
    assert patch("missing", {"delaySeconds": 60}) == (404, {"message": "schedule 'missing' not found", "field": "id"})


def test_bad_reschedule_bodies_answer_400_naming_the_field(aws):
    create("b1", 30)
    for body, field in [({"delaySeconds": 5, "target": "ordered"}, "target"), ({"payload": 1}, "dueAt"),
                        ({"dueAt": "soon"}, "dueAt"), ({"delaySeconds": -1}, "delaySeconds"),
                        ({"dueAt": "2030-01-01T00:00:00Z", "delaySeconds": 1}, "dueAt"), ([1], "body"),
                        ({"delaySeconds": 1, "retry": {"maxAttempts": 1}}, "retry")]:
        status, answer = patch("b1", body)
        assert (status, answer["field"]) == (400, field), body
    assert patch("b1", {"delaySeconds": 1, "payload": "x" * 262_144})[0] == 413


def test_the_record_update_fails_after_the_new_message_the_old_time_is_delivered_and_the_stray_dropped(aws, monkeypatch):
    create("c1", 1)

    with faulty("dynamodb", update_item=record_update_fails):
        assert patch("c1", {"delaySeconds": 0, "payload": "new"})[0] == 500
    monkeypatch.setattr(window, "STRAY_AFTER_MS", 0)  # the PATCH can no longer write: its message is a stray
    assert [d["payload"] for d in dispatch_until_empty(aws)] == [{"v": 1}]


def test_an_announced_message_that_surfaces_before_the_record_takes_its_token_waits_and_is_delivered(aws):
    create("c2", 3600)
    surfaced = []

    def dispatch_first(real, **kwargs):
        if "rescheduleHash" in kwargs["UpdateExpression"]:  # the message is visible before the record is updated
            surfaced.extend(aws.wait_for_messages(aws.delayer_url))
            assert dispatcher.handler({"Records": surfaced}) == {"batchItemFailures": []}
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=dispatch_first):
        status, answer = patch("c2", {"delaySeconds": 0})
    assert status == 200 and len(surfaced) == 1
    assert aws.receive(aws.target_url) == []  # put back, not delivered early nor dropped
    assert [d["dueAt"] for d in dispatch_until_empty(aws)] == [answer["dueAt"]]


def test_a_long_reschedule_whose_record_update_fails_leaves_the_old_timer_and_no_new_one(aws):
    create("c3", 3600)

    before = aws.count_items("TIMER#")
    with faulty("dynamodb", update_item=record_update_fails):
        assert patch("c3", {"delaySeconds": 7200})[0] == 500
    # The new timer is a stray left by the crash point (the record holds the old token): swept, it is dropped.
    assert aws.count_items("TIMER#") == before + 1
    assert patch("c3", {"delaySeconds": 7200})[0] == 200  # the client's retry


def test_a_long_reschedule_whose_record_update_answer_is_lost_keeps_its_new_timer(aws):
    """The record's update lands but its answer is lost, so the SDK sends it again and the retry fails its
    condition (the record holds the new token already): the update is the reschedule's own, and the new
    timer stays for the sweeper. Taken for a lost race, its timer was removed and the schedule never came due."""
    create("lost", 3600)

    def applied_then_answer_lost(real, **kwargs):
        if "rescheduleHash" in kwargs["UpdateExpression"]:
            real.update_item(**kwargs)  # applied; its answer is lost, so the SDK sends it again:
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=applied_then_answer_lost):
        status, answer = patch("lost", {"delaySeconds": 7200})
    assert status == 200 and answer["status"] == "SCHEDULED", answer
    [timer] = [i for i in aws.ddb.scan(TableName=aws.table)["Items"] if i["pk"]["S"].startswith("TIMER#")]
    assert timer["token"]["S"] == token_of(aws, "lost") and "cancelled" not in timer  # live: the sweeper claims it
    assert parse_instant(answer["dueAt"]) == int(timer["sk"]["S"].split("#")[0])


def test_a_listed_schedule_is_listed_under_its_new_status_and_due_time(aws, monkeypatch):
    monkeypatch.setenv("LISTING", "true")
    create("ls1", 3600)
    record = aws.item("SCHEDULE#ls1", "RECORD")
    status, _, shard = record["listPk"]["S"].partition("#")
    assert status == "SCHEDULED"
    new_due = parse_instant(patch("ls1", {"delaySeconds": 30})[1]["dueAt"])
    record = aws.item("SCHEDULE#ls1", "RECORD")
    assert record["listPk"]["S"] == f"QUEUED#{shard}" and record["listSk"]["S"] == keys.timer_sort_key(new_due, "ls1")


def test_a_reschedule_that_loses_a_race_with_another_tries_again_on_the_record_as_it_is_now(aws):
    create("race", 3600)
    started, other = [], []

    def other_lands_first(real, **kwargs):
        if "rescheduleHash" in kwargs["UpdateExpression"] and not started:
            started.append(True)
            other.append(patch("race", {"delaySeconds": 7200}))
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=other_lands_first):
        status, answer = patch("race", {"delaySeconds": 0})
    assert other[0][0] == 200 and (status, answer["status"]) == (200, "QUEUED")
    assert aws.count_items("TIMER#") == 0  # the other's timer went when this one moved the schedule on
    assert [d["dueAt"] for d in dispatch_until_empty(aws)] == [answer["dueAt"]]


def test_only_a_message_that_may_surface_before_the_record_update_is_announced(aws):
    create("a1", 3600)
    create("a2", 3600)
    announced = []

    def recording(real, **kwargs):
        if kwargs["UpdateExpression"].startswith("SET pendingToken"):
            announced.append(kwargs["Key"]["pk"]["S"])
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=recording):
        assert patch("a1", {"delaySeconds": 30})[0] == 200  # surfaces after the PATCH can no longer write
        assert patch("a2", {"delaySeconds": 5})[0] == 200
    assert announced == ["SCHEDULE#a2"]
    assert "pendingToken" not in aws.item("SCHEDULE#a2", "RECORD")  # the update that took the token removed it


def test_a_redrive_run_again_after_a_reschedule_does_not_re_arm_the_old_due_time(aws):
    park(aws, "rd1")
    cut_short_before_its_delete(aws)  # re-armed (QUEUED, this message's tag) and sent, the message left parked
    due = parse_instant(patch("rd1", {"delaySeconds": 30})[1]["dueAt"])  # QUEUED, as the re-arm left it
    token = token_of(aws, "rd1")
    step_to_next_message(aws.dlq_url, within_seconds=1)  # the parked message is visible again
    report = run(aws)
    assert report.moved == [] and [entry["id"] for entry in report.skipped] == ["rd1"]
    record = aws.item("SCHEDULE#rd1", "RECORD")
    assert (int(record["dueMs"]["N"]), record["token"]["S"]) == (due, token)
