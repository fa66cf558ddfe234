"""``GET``/``PATCH /targets/{name}`` through the api handler, on virtual time: a limited target's limits, state and
counts read from its item, a pause that holds every delivery due to it back (put back to look again every
``HELD_POLL_SECONDS``) until the resume delivers it, and the refusals: an unknown or malformed name, a bad body, and a
target without limits, which has nothing to pause; and each group's limits, ``perGroup``, read back as described."""

from __future__ import annotations

import pytest

from scheduler_runtime.aws.flow import FlowStore
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits
from scheduler_runtime.core.targets_api import describe_target
from scheduler_runtime.core.timeparse import parse_rfc3339

from .conftest import call_api
from .dispatching import dispatch, receive
from .flow_controlling import create, dispatch_one_at_a_time, limit
from .virtual_time import iso, now_ms, receivable_instants, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
MAILER = {"rate": 1, "periodSeconds": 2}
POOL = {"maxInFlight": 3}


def read(name: str) -> dict:
    status, body = call_api("GET", f"/targets/{name}")
    assert status == 200, body
    return body


def set_state(name: str, state: str) -> tuple[int, dict]:
    return call_api("PATCH", f"/targets/{name}", {"state": state})


def dispatch_round(aws) -> None:
    """Hand the dispatcher what the delayer queue holds now, once, and delete what it did not hand back."""
    for message in aws.receive(aws.delayer_url):
        if not dispatch(receive(message, 1))["batchItemFailures"]:
            aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])


def test_a_limited_target_reads_active_with_its_limits_and_nothing_waiting_or_under_way(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {**MAILER, "maxInFlight": 2})
    assert read("mailer") == {"name": "mailer", "state": "ACTIVE", "flowControl": {**MAILER, "maxInFlight": 2},
                              "waiting": 0, "inFlight": 0, "heldUntil": None}


def test_a_targets_per_group_limits_are_read_back_in_its_flow_control(aws, monkeypatch):
    limits = {**MAILER, "maxInFlight": 2, "perGroup": {"rate": 1, "periodSeconds": 4, "maxInFlight": 1}}
    limit(aws, monkeypatch, "tenants", limits)
    assert read("tenants") == {"name": "tenants", "state": "ACTIVE", "flowControl": limits, "waiting": 0,
                               "inFlight": 0, "heldUntil": None}


def test_a_target_limiting_only_its_groups_answers_its_flow_control_with_null_target_counts():
    """``waiting`` and ``inFlight`` count the target's own slots and places, which it does not have."""
    limits = {"perGroup": {"rate": 5, "maxInFlight": 2}}
    answer = describe_target("tenants", {"type": "sqs", "flowControl": limits}, flow.TargetState(False, 0, 0, None))
    assert answer == {"name": "tenants", "state": "ACTIVE", "flowControl": limits, "waiting": None, "inFlight": None,
                      "heldUntil": None}


def test_a_target_without_limits_reads_active_with_null_counts_and_costs_no_item(aws):
    assert read("default") == {"name": "default", "state": "ACTIVE", "flowControl": None, "waiting": None,
                               "inFlight": None, "heldUntil": None}
    assert aws.count_items(flow.KEY_PREFIX) == 0


def test_counts_a_target_lacks_a_limit_for_read_null(aws, monkeypatch):
    limit(aws, monkeypatch, "pool", POOL)
    limit(aws, monkeypatch, "mailer", MAILER)
    assert (read("pool")["waiting"], read("pool")["inFlight"]) == (None, 0)
    assert (read("mailer")["waiting"], read("mailer")["inFlight"]) == (0, None)


def test_an_unknown_target_is_404_and_a_malformed_name_400_each_naming_name(aws):
    for method, body in (("GET", None), ("PATCH", {"state": "PAUSED"})):
        status, answer = call_api(method, "/targets/nowhere", body)
        assert (status, answer["field"]) == (404, "name"), answer
        assert "nowhere" in answer["message"]
        status, answer = call_api(method, "/targets/" + "x" * 65, body)
        assert (status, answer["field"]) == (400, "name"), answer


@pytest.mark.parametrize("body, field", [({"state": "STOPPED"}, "state"), ({}, "state"), ({"state": None}, "state"),
                                         ({"state": "PAUSED", "until": 5}, "until"), ([], "body")])
def test_a_bad_body_is_400_naming_the_field_and_changes_nothing(aws, monkeypatch, body, field):
    limit(aws, monkeypatch, "mailer", MAILER)
    status, answer = call_api("PATCH", "/targets/mailer", body)
    assert (status, answer["field"]) == (400, field), answer
    assert read("mailer")["state"] == "ACTIVE"


def test_a_target_without_limits_cannot_be_paused_409_saying_how(aws):
    status, answer = set_state("default", "PAUSED")
    assert status == 409
    assert answer == {"field": "state", "message": "target 'default' has no flowControl: a target is paused through "
                                                   "its limits; give it flowControl (e.g. maxInFlight) to pause it"}
    assert aws.count_items(flow.KEY_PREFIX) == 0


def test_pause_and_resume_answer_the_state_after_the_write_and_repeat_harmlessly(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", MAILER)
    for _ in range(2):
        status, answer = set_state("mailer", "PAUSED")
        assert (status, answer["state"]) == (200, "PAUSED")
        assert read("mailer")["state"] == "PAUSED"
    for _ in range(2):
        status, answer = set_state("mailer", "ACTIVE")
        assert (status, answer) == (200, read("mailer"))
        assert answer["state"] == "ACTIVE"


def test_a_paused_target_receives_nothing_its_deliveries_look_again_and_the_resume_delivers_them(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", MAILER)
    assert set_state("mailer", "PAUSED")[0] == 200
    due_ms = now_ms() + 5000
    create("held", due_ms, "mailer")
    virtual().move_to(due_ms)
    dispatch_round(aws)
    assert aws.take(aws.target_url) == []
    assert receivable_instants(aws.delayer_url) == [due_ms + flow.HELD_POLL_SECONDS * 1000]  # put back to look again
    assert dispatch_one_at_a_time(aws, due_ms + 60_000) == []  # a minute of looks, every 5 s: still held back
    assert call_api("GET", "/schedules/held")[1]["status"] == "QUEUED"
    resumed_ms = now_ms()
    assert set_state("mailer", "ACTIVE")[1]["state"] == "ACTIVE"
    delivered = dispatch_one_at_a_time(aws, resumed_ms + 60_000)
    assert [e["id"] for e in delivered] == ["held"]
    assert resumed_ms <= parse_rfc3339(delivered[0]["firedAt"]) <= resumed_ms + flow.HELD_POLL_SECONDS * 1000


def _five_due_at_once(aws, monkeypatch) -> int:
    """Five schedules due to ``mailer`` (a start about every 2 s) at once, handed to the dispatcher at their due time:
    the first starts, the four others wait in their messages for the next four slots. Their due time."""
    limit(aws, monkeypatch, "mailer", MAILER)
    due_ms = now_ms() + 5000
    for n in range(5):
        create(f"mail-{n}", due_ms, "mailer")
    virtual().move_to(due_ms)
    dispatch_round(aws)
    assert len(aws.take(aws.target_url)) == 1
    assert len(receivable_instants(aws.delayer_url)) == 4
    return due_ms


def test_waiting_counts_the_deliveries_holding_a_slot_ahead_of_now(aws, monkeypatch):
    due_ms = _five_due_at_once(aws, monkeypatch)
    virtual().move_to(due_ms + 1000)
    assert read("mailer")["waiting"] == 4
    dispatch_one_at_a_time(aws, due_ms + 5000)  # two more start, about 2 and 4 s on
    virtual().move_to(due_ms + 5000)
    assert read("mailer")["waiting"] == 2


def test_a_delivery_starting_at_its_slot_is_not_counted_waiting(aws, monkeypatch):
    _five_due_at_once(aws, monkeypatch)
    assert read("mailer")["waiting"] == 4


def test_a_pause_holds_back_deliveries_that_reserved_their_slots_before_it(aws, monkeypatch):
    due_ms = _five_due_at_once(aws, monkeypatch)
    assert set_state("mailer", "PAUSED")[0] == 200
    assert dispatch_one_at_a_time(aws, due_ms + 30_000) == []


def test_a_paused_target_limited_by_max_in_flight_alone_receives_nothing_until_resumed(aws, monkeypatch):
    limit(aws, monkeypatch, "pool", POOL)
    assert set_state("pool", "PAUSED")[0] == 200
    due_ms = now_ms() + 5000
    create("pooled", due_ms, "pool")
    virtual().move_to(due_ms)
    for _ in range(3):  # each look finds the target paused, and looks again later
        dispatch_round(aws)
    assert aws.take(aws.target_url) == []
    resumed_ms = now_ms()
    assert set_state("pool", "ACTIVE")[0] == 200
    delivered = dispatch_one_at_a_time(aws, resumed_ms + 60_000)
    assert [e["id"] for e in delivered] == ["pooled"] and parse_rfc3339(delivered[0]["firedAt"]) >= resumed_ms


def test_a_paused_target_limited_by_max_in_flight_alone_looks_again_in_held_poll_seconds(aws, monkeypatch):
    limit(aws, monkeypatch, "pool", POOL)
    assert set_state("pool", "PAUSED")[0] == 200
    due_ms = now_ms() + 5000
    create("pooled", due_ms, "pool")
    virtual().move_to(due_ms)
    dispatch_round(aws)
    assert receivable_instants(aws.delayer_url) == [now_ms() + flow.HELD_POLL_SECONDS * 1000]


def test_in_flight_counts_the_places_held_now_and_held_until_the_end_of_a_hold(aws, monkeypatch):
    limit(aws, monkeypatch, "pool", {**MAILER, **POOL})
    store, limits, now = FlowStore(aws.ddb, aws.table), FlowLimits(max_in_flight=3, rate=1, period_seconds=2), now_ms()
    for _ in range(2):
        assert store.acquire("pool", limits, now, now + 30_000) is not None
    until = store.hold("pool", limits, now, 7000)
    assert read("pool") == {"name": "pool", "state": "ACTIVE", "flowControl": {**MAILER, **POOL}, "waiting": 0,
                            "inFlight": 2, "heldUntil": iso(until)}
    virtual().move_to(now + 30_000)  # the leases ended by themselves, and so did the hold
    assert (read("pool")["inFlight"], read("pool")["heldUntil"]) == (0, None)
