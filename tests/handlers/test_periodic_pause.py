"""Pausing and resuming a periodic timer (``PATCH /periodic/{id}``) through the api and dispatcher
handlers, on in-process moto: nothing starts after a pause has answered, a resume arms the first
occurrence after now and counts the ones passed over, and a PUT keeps a paused timer paused."""

from __future__ import annotations

import json
import time

import pytest

from scheduler_runtime.aws.definitions import ACTIVE, PAUSED, DefinitionStore
from scheduler_runtime.core.window import SETTLE_MS, SLOW_WRITE_PAUSES
from scheduler_runtime.handlers import api

from .conftest import call_api, put_starting_soon
from .dispatching import dispatch_as_received
from .periodic_timers import NIGHTLY, delivered, event, landing_in_the_first_wait_after_a_read, occurrence, put
from .virtual_time import iso

pytestmark = pytest.mark.usefixtures("virtual_clock")


def set_state(periodic_id: str, state: str) -> dict:
    status, answer = call_api("PATCH", f"/periodic/{periodic_id}", {"state": state})
    assert status == 200, answer
    return answer


def due_ms(message: dict) -> int:
    return int(json.loads(message["body"])["dueMs"])


def epoch_ms(instant: str) -> int:
    seconds, millis = instant.rstrip("Z").split(".")
    return int(time.mktime(time.strptime(seconds, "%Y-%m-%dT%H:%M:%S")) - time.timezone) * 1000 + int(millis)


def test_nothing_starts_after_a_pause_and_a_pause_waits_out_a_start_just_allowed(aws, virtual_clock):
    put("held", {"every": 1, "payload": 1})
    message = occurrence(aws)
    paused = set_state("held", "PAUSED")
    assert (paused["status"], paused["nextDueAt"], paused["pausedCount"]) == ("PAUSED", None, 0)
    assert paused["pausedAt"] == call_api("GET", "/periodic/held")[1]["pausedAt"]
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []

    put("settle", {"every": 1, "payload": 1})
    message = occurrence(aws)
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    began = virtual_clock.now_ms()
    assert iso(began) == envelope["firedAt"]
    assert set_state("settle", "PAUSED")["status"] == "PAUSED"
    assert virtual_clock.now_ms() == began + SETTLE_MS  # answered once the start allowed just before had settled
    # Neither the next occurrence it armed nor a retry of the one delivered starts while paused.
    [following] = aws.wait_for_messages(aws.delayer_url)
    retry = {**message, "body": json.dumps(dict(json.loads(message["body"]), attempt=2))}
    assert (dispatch_as_received(following) == {"batchItemFailures": []}
            and dispatch_as_received(retry) == {"batchItemFailures": []})
    assert delivered(aws) == []
    # Nor once resumed: the pause ended the versions of before it.
    assert set_state("settle", "ACTIVE")["status"] == "ACTIVE"
    assert dispatch_as_received(retry) == {"batchItemFailures": []} and delivered(aws) == []


def test_a_resume_arms_the_first_occurrence_after_now_and_counts_the_ones_passed_over(aws, virtual_clock):
    put("nap", {"every": 1, "payload": "tick"})
    before_pause = occurrence(aws)
    set_state("nap", "PAUSED")
    virtual_clock.advance(3.3)  # the one due at the pause and three more come due while paused
    resumed = set_state("nap", "ACTIVE")
    next_due = epoch_ms(resumed["nextDueAt"])
    assert resumed["status"] == "ACTIVE" and "pausedAt" not in resumed
    assert next_due == due_ms(before_pause) + 4000 == virtual_clock.now_ms() + 700  # the first after now
    assert resumed["pausedCount"] == 4 and resumed["skippedCount"] == 0
    [armed] = aws.wait_for_messages(aws.delayer_url)
    assert due_ms(armed) == next_due
    # The occurrence of before the pause is a stray now; the one the resume armed is delivered, on time.
    for message in [before_pause, armed]:
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    assert (envelope["dedupeKey"], envelope["firedAt"]) == (f"nap@{next_due}", iso(next_due))
    read = call_api("GET", "/periodic/nap")[1]
    assert (read["firedCount"], read["skippedCount"], read["pausedCount"]) == (1, 0, 4)


def test_the_state_it_already_has_changes_nothing_and_bad_input_is_refused(aws):
    put("twice", {"every": 60, "payload": 1})
    first = set_state("twice", "PAUSED")
    assert call_api("PATCH", "/periodic/twice", {"state": "PAUSED"}) == (200, first)
    resumed = set_state("twice", "ACTIVE")
    assert call_api("PATCH", "/periodic/twice", {"state": "ACTIVE"}) == (200, resumed)
    for body, field in (({"state": "STOPPED"}, "state"), ({}, "state"), ({"state": "paused"}, "state"),
                        ({"state": "PAUSED", "every": 5}, "every"), ([], "body")):
        status, answer = call_api("PATCH", "/periodic/twice", body)
        assert (status, answer["field"]) == (400, field), answer
    assert call_api("PATCH", "/periodic/nobody", {"state": "PAUSED"})[0] == 404
    assert call_api("DELETE", "/periodic/twice")[0] == 200
    assert call_api("PATCH", "/periodic/twice", {"state": "ACTIVE"})[0] == 404


def test_a_put_of_a_paused_timer_replaces_it_and_keeps_it_paused(aws):
    put("kept", {"every": 3600, "payload": "old"})
    assert aws.count_items("TIMER#") == 1  # due past the window: a timer item
    set_state("kept", "PAUSED")
    assert aws.count_items("TIMER#") == 0  # the pause removed the pending occurrence
    status, replaced = call_api("PUT", "/periodic/kept", {"every": 7200, "payload": "new"})
    assert status == 200 and (replaced["status"], replaced["every"], replaced["nextDueAt"]) == ("PAUSED", 7200, None)
    assert aws.count_items("TIMER#") == 0 and aws.receive(aws.delayer_url) == []  # nothing armed
    assert call_api("PUT", "/periodic/kept", {"every": 7200, "payload": "new"}) == (200, replaced)
    resumed = set_state("kept", "ACTIVE")
    assert resumed["status"] == "ACTIVE" and resumed["pausedCount"] == 0 and aws.count_items("TIMER#") == 1
    assert call_api("GET", "/periodic/kept")[1]["payload"] == "new"


def test_a_timer_whose_end_passed_while_paused_ends_at_its_resume(aws, virtual_clock):
    start, _ = put_starting_soon("short", {"every": 1, "payload": 1}, end_after=2)
    set_state("short", "PAUSED")
    virtual_clock.move_to((start + 2) * 1000 + 100)
    resumed = set_state("short", "ACTIVE")
    assert (resumed["status"], resumed["nextDueAt"], resumed["pausedCount"]) == ("ENDED", None, 2)
    # An ENDED timer has nothing left to pause: 409 naming its status.
    status, answer = call_api("PATCH", "/periodic/short", {"state": "PAUSED"})
    assert status == 409 and "ENDED" in answer["message"] and answer["field"] == "state"


def test_a_pause_answered_between_an_occurrences_read_and_its_advance_stops_it(aws, monkeypatch):
    """As for a DELETE: the occurrence read its definition (ACTIVE); a pause answered before its advance
    makes the advance fail, so the target is never called, and the timer it armed is removed."""
    put_starting_soon("caught", {"every": 3600, "payload": 1})
    message = occurrence(aws)  # due now
    read = DefinitionStore.get
    pauses: list = []

    def read_then_pause(store, periodic_id):
        definition = read(store, periodic_id)
        if not pauses:  # the occurrence's read: the pause (whose own read comes here too) is answered right after it
            pauses.append(None)
            pauses[0] = call_api("PATCH", f"/periodic/{periodic_id}", {"state": "PAUSED"})[0]
        return definition

    with monkeypatch.context() as patched:
        patched.setattr(DefinitionStore, "get", read_then_pause)
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    assert pauses == [200] and delivered(aws) == []
    assert aws.count_items("TIMER#") == 0 and aws.receive(aws.delayer_url) == []
    assert call_api("GET", "/periodic/caught")[1]["status"] == "PAUSED"


def test_a_redeploy_of_a_declared_timer_keeps_it_paused_and_removing_it_deletes_it(aws):
    """A timer declared in the stack, paused through the API: CloudFormation's Update (changed props) is a
    PUT, which keeps it PAUSED; its Delete deletes it all the same."""
    api.handler(event("Create", "nightly", NIGHTLY))
    set_state("nightly", "PAUSED")
    hourly = {"every": 3600, "payload": {"report": "hourly"}}
    answer = api.handler(event("Update", "nightly", hourly, physical="nightly",
                               old={"Id": "nightly", "Definition": json.dumps(NIGHTLY)}))
    assert (answer["Data"]["Status"], answer["Data"]["NextDueAt"]) == ("PAUSED", "")
    stored = call_api("GET", "/periodic/nightly")[1]
    assert (stored["status"], stored["every"], stored["payload"]) == ("PAUSED", 3600, {"report": "hourly"})
    assert aws.count_items("TIMER#") == 0  # nothing armed while paused
    api.handler(event("Delete", "nightly", hourly, physical="nightly"))
    assert call_api("GET", "/periodic/nightly")[0] == 404


def test_an_occurrence_read_before_its_resume_has_landed_waits_for_it_and_is_delivered(aws, virtual_clock, monkeypatch):
    """A resume arms its first occurrence, then writes ACTIVE. An occurrence due at once is read while the
    definition still says PAUSED: it waits for that write, as a one-shot's message waits for its record,
    rather than being dropped (which ended the timer for good)."""
    put("racing", {"every": 1, "payload": 1})
    message = occurrence(aws)
    set_state("racing", "PAUSED")
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []
    real_resume = DefinitionStore.resume
    first: list = []
    slow: list = []

    def resume_landing_in_the_dispatchers_first_wait(store, *args, **kwargs):
        # Armed, not written yet: the occurrence it armed is read (PAUSED still), and the write lands during
        # the dispatcher's first wait after that read.
        with landing_in_the_first_wait_after_a_read(virtual_clock, monkeypatch,
                                                    lambda: real_resume(store, *args, **kwargs)) as resume:
            first.append(occurrence(aws))
            assert dispatch_as_received(first[0]) == {"batchItemFailures": []}
        slow.append(resume)
        return resume.landed[0]

    monkeypatch.setattr(DefinitionStore, "resume", resume_landing_in_the_dispatchers_first_wait)
    assert set_state("racing", "ACTIVE")["status"] == "ACTIVE"
    assert [d.status for d in slow[0].read] == [PAUSED, ACTIVE]  # read before the write landed, then after a wait
    [envelope] = delivered(aws)
    due = due_ms(first[0])
    assert (envelope["id"], envelope["dueAt"]) == ("racing", iso(due))
    assert envelope["firedAt"] == iso(due + round(SLOW_WRITE_PAUSES[0] * 1000))


def test_an_occurrence_whose_resume_lands_later_than_the_waits_is_put_back_and_then_delivered(aws, virtual_clock,
                                                                                               monkeypatch):
    """A resume's write can land after the dispatcher's slow-write waits: the occurrence goes back to the queue a
    second later, as a one-shot's message does for its record, and is delivered then."""
    put("later", {"every": 1, "payload": 1})
    message = occurrence(aws)
    set_state("later", "PAUSED")
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []
    real_resume = DefinitionStore.resume
    first: list = []

    def resume_landing_after_the_dispatchers_waits(store, *args, **kwargs):
        first.append(occurrence(aws))  # armed, due at once, not written yet
        assert dispatch_as_received(first[0]) == {"batchItemFailures": []} and delivered(aws) == []
        return real_resume(store, *args, **kwargs)

    monkeypatch.setattr(DefinitionStore, "resume", resume_landing_after_the_dispatchers_waits)
    waits_ms = round(sum(SLOW_WRITE_PAUSES) * 1000)
    assert set_state("later", "ACTIVE")["status"] == "ACTIVE"
    due = due_ms(first[0])
    again = occurrence(aws)  # put back, a second after the waits
    assert json.loads(again["body"])["token"] == json.loads(first[0]["body"])["token"]
    assert virtual_clock.now_ms() == due + waits_ms + 1000
    assert dispatch_as_received(again) == {"batchItemFailures": []}
    [envelope] = delivered(aws)  # the occurrence due now: the one passed over meanwhile counts as skipped
    assert (envelope["id"], envelope["dueAt"], envelope["firedAt"]) == (
        "later", iso(due + 1000), iso(due + waits_ms + 1000))
    read = call_api("GET", "/periodic/later")[1]
    assert (read["status"], read["skippedCount"]) == ("ACTIVE", 1)
