"""Pausing and resuming a periodic timer (``PATCH /periodic/{id}``) through the api and dispatcher
handlers, on in-process moto: nothing starts after a pause has answered, a resume arms the first
occurrence after now and counts the ones passed over, and a PUT keeps a paused timer paused."""

from __future__ import annotations

import json
import time

from scheduler_runtime.aws.definitions import DefinitionStore
from scheduler_runtime.handlers import api

from .conftest import call_api, put_starting_soon
from .dispatching import dispatch_as_received
from .periodic_timers import NIGHTLY, delivered, event, occurrence, put


def set_state(periodic_id: str, state: str) -> dict:
    status, answer = call_api("PATCH", f"/periodic/{periodic_id}", {"state": state})
    assert status == 200, answer
    return answer


def due_ms(message: dict) -> int:
    return int(json.loads(message["body"])["dueMs"])


def epoch_ms(instant: str) -> int:
    seconds, millis = instant.rstrip("Z").split(".")
    return int(time.mktime(time.strptime(seconds, "%Y-%m-%dT%H:%M:%S")) - time.timezone) * 1000 + int(millis)


def test_nothing_starts_after_a_pause_and_a_pause_waits_out_a_start_just_allowed(aws):
    put("held", {"every": 1, "payload": 1})
    message = occurrence(aws)
    paused = set_state("held", "PAUSED")
    assert (paused["status"], paused["nextDueAt"], paused["pausedCount"]) == ("PAUSED", None, 0)
    assert paused["pausedAt"] == call_api("GET", "/periodic/held")[1]["pausedAt"]
    time.sleep(1.05)
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []

    put("settle", {"every": 1, "payload": 1})
    message = occurrence(aws)
    time.sleep(1.05)
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    began = time.time()
    assert set_state("settle", "PAUSED")["status"] == "PAUSED"
    assert time.time() - began >= 0.5  # answered only once the start allowed just before had settled
    assert len(delivered(aws)) == 1
    # Neither the next occurrence it armed nor a retry of the one delivered starts while paused.
    [following] = aws.receive(aws.delayer_url, wait=2)
    retry = {**message, "body": json.dumps(dict(json.loads(message["body"]), attempt=2))}
    time.sleep(1.05)
    assert (dispatch_as_received(following) == {"batchItemFailures": []}
            and dispatch_as_received(retry) == {"batchItemFailures": []})
    assert delivered(aws) == []
    # Nor once resumed: the pause ended the versions of before it.
    assert set_state("settle", "ACTIVE")["status"] == "ACTIVE"
    assert dispatch_as_received(retry) == {"batchItemFailures": []} and delivered(aws) == []


def test_a_resume_arms_the_first_occurrence_after_now_and_counts_the_ones_passed_over(aws, unhurried_start):
    put("nap", {"every": 1, "payload": "tick"})
    before_pause = occurrence(aws)
    set_state("nap", "PAUSED")
    time.sleep(3.3)  # at least three occurrences come due while paused
    resumed_at = time.time() * 1000
    resumed = set_state("nap", "ACTIVE")
    answered_at = time.time() * 1000
    next_due = epoch_ms(resumed["nextDueAt"])
    passed_over = (next_due - due_ms(before_pause)) // 1000
    assert resumed["status"] == "ACTIVE" and "pausedAt" not in resumed
    assert (next_due - due_ms(before_pause)) % 1000 == 0 and resumed_at <= next_due < answered_at + 1000
    assert resumed["pausedCount"] == passed_over >= 3 and resumed["skippedCount"] == 0
    messages = aws.wait_for_messages(aws.delayer_url)
    [armed] = [m for m in messages if due_ms(m) == next_due]
    time.sleep(max(0.0, next_due / 1000 - time.time()) + 0.05)
    # The occurrence of before the pause is a stray now; the one the resume armed is delivered, on time.
    for message in [before_pause, *messages]:
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    assert envelope["dedupeKey"] == f"nap@{next_due}" and armed
    read = call_api("GET", "/periodic/nap")[1]
    assert (read["firedCount"], read["skippedCount"], read["pausedCount"]) == (1, 0, passed_over)


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


def test_a_timer_whose_end_passed_while_paused_ends_at_its_resume(aws):
    start, _ = put_starting_soon("short", {"every": 1, "payload": 1}, end_after=2)
    set_state("short", "PAUSED")
    time.sleep(max(0.0, start + 2 - time.time()) + 0.1)
    resumed = set_state("short", "ACTIVE")
    assert (resumed["status"], resumed["nextDueAt"], resumed["pausedCount"]) == ("ENDED", None, 2)
    # An ENDED timer has nothing left to pause: 409 naming its status.
    status, answer = call_api("PATCH", "/periodic/short", {"state": "PAUSED"})
    assert status == 409 and "ENDED" in answer["message"] and answer["field"] == "state"


def test_a_pause_answered_between_an_occurrences_read_and_its_advance_stops_it(aws, monkeypatch):
    """As for a DELETE: the occurrence read its definition (ACTIVE); a pause answered before its advance
    makes the advance fail, so the target is never called, and the timer it armed is removed."""
    start, _ = put_starting_soon("caught", {"every": 3600, "payload": 1})
    message = occurrence(aws, timeout=15)
    read = DefinitionStore.get
    pauses: list = []

    def read_then_pause(store, periodic_id):
        definition = read(store, periodic_id)
        if not pauses:  # the occurrence's read: the pause (whose own read comes here too) is answered right after it
            pauses.append(None)
            pauses[0] = call_api("PATCH", f"/periodic/{periodic_id}", {"state": "PAUSED"})[0]
        return definition

    time.sleep(max(0.0, start - time.time() - 0.5))
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


def test_an_occurrence_read_before_its_resume_has_landed_waits_for_it_and_is_delivered(aws, monkeypatch):
    """A resume arms its first occurrence, then writes ACTIVE. An occurrence due at once is read while the
    definition still says PAUSED: it waits for that write, as a one-shot's message waits for its record,
    rather than being dropped (which ended the timer for good)."""
    import threading

    put("racing", {"every": 1, "payload": 1})
    message = occurrence(aws)
    set_state("racing", "PAUSED")
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []
    real_resume = DefinitionStore.resume

    def slow_resume(self, paused, token, next_due_ms, *args, **kwargs):
        # lands 100 ms before the occurrence is due: after the dispatcher read the definition, 250 ms before
        time.sleep(max(0.0, (next_due_ms - 100) / 1000 - time.time()))
        return real_resume(self, paused, token, next_due_ms, *args, **kwargs)

    monkeypatch.setattr(DefinitionStore, "resume", slow_resume)
    answered: list = []
    resuming = threading.Thread(target=lambda: answered.append(set_state("racing", "ACTIVE")))
    resuming.start()
    first = occurrence(aws)
    assert dispatch_as_received(first) == {"batchItemFailures": []}
    resuming.join()
    assert answered[0]["status"] == "ACTIVE"
    [envelope] = delivered(aws)
    assert envelope["id"] == "racing" and epoch_ms(envelope["dueAt"]) == due_ms(first)


def test_an_occurrence_whose_resume_lands_later_than_the_waits_is_put_back_and_then_delivered(aws, monkeypatch):
    """Under load a resume's write can land after the dispatcher's slow-write waits: the occurrence goes back
    to the queue a second later, as a one-shot's message does for its record, and is delivered then."""
    import threading

    put("later", {"every": 1, "payload": 1})
    message = occurrence(aws)
    set_state("later", "PAUSED")
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []
    real_resume = DefinitionStore.resume

    def late_resume(self, paused, token, next_due_ms, *args, **kwargs):
        time.sleep(max(0.0, (next_due_ms + 1000) / 1000 - time.time()))  # past the 0.75 s of waits
        return real_resume(self, paused, token, next_due_ms, *args, **kwargs)

    monkeypatch.setattr(DefinitionStore, "resume", late_resume)
    resuming = threading.Thread(target=lambda: set_state("later", "ACTIVE"))
    resuming.start()
    first = occurrence(aws)
    assert dispatch_as_received(first) == {"batchItemFailures": []} and delivered(aws) == []
    resuming.join()
    again = occurrence(aws)  # put back, a second later
    assert json.loads(again["body"])["token"] == json.loads(first["body"])["token"]
    assert dispatch_as_received(again) == {"batchItemFailures": []}
    [envelope] = delivered(aws)  # the occurrence due now: one passed over meanwhile counts as skipped
    assert envelope["id"] == "later" and epoch_ms(envelope["dueAt"]) >= due_ms(first)
    assert call_api("GET", "/periodic/later")[1]["status"] == "ACTIVE"
