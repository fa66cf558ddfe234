"""A periodic timer that could never fire is refused by ``PUT /periodic/{id}`` (and so by the deploy of one
declared in a stack): a cron that matches no date (30 February) or only past ones, a ``startAt`` after a
cron's last occurrence, an ``endAt`` already past or not later than the first occurrence. Each is a 400
naming the field and the rule; nothing is stored or armed. The same body again is still a replay."""

from __future__ import annotations

import re
from typing import Any, Callable

import pytest

from scheduler_runtime.handlers import api
from scheduler_runtime.handlers._periodic_resource import DefinitionRefused

from .conftest import call_api, call_direct, put_starting_soon
from .grouping import cancel_call
from .periodic_timers import event, put
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")

Body = Callable[[float], dict[str, Any]]
"""A PUT body made from the time of the test (epoch seconds), for bounds relative to now."""

NEVER_FIRING: list[tuple[str, Body, str, str]] = [
    ("february-30", lambda now: {"cron": "0 9 30 2 ? *", "payload": 1}, "cron",
     r"^cron '0 9 30 2 \? \*' matches no date at all \(as with day 30 of February\): a periodic timer on it would "
     r"never fire$"),
    ("april-31-in-paris", lambda now: {"cron": "0 9 31 4 ? *", "timeZone": "Europe/Paris", "payload": 1}, "cron",
     r"^cron '0 9 31 4 \? \*' matches no date at all"),
    ("years-past", lambda now: {"cron": "0 9 * * ? 2020-2025", "payload": 1}, "cron",
     r"^cron '0 9 \* \* \? 2020-2025' has no occurrence to come: every minute it matches is past \(the last year "
     r"it allows is 2025\), so a periodic timer on it would never fire$"),
    ("start-after-the-last", lambda now: {"cron": "0 9 * * ? 2100", "startAt": "2101-01-01T00:00:00Z", "payload": 1},
     "startAt", r"^startAt 2101-01-01T00:00:00.000Z is after the last occurrence of cron '0 9 \* \* \? 2100': "
                r"the timer would never fire$"),
    ("every-ended", lambda now: {"every": 60, "startAt": round(now) - 3600, "endAt": round(now) - 60, "payload": 1},
     "endAt", r"^endAt must be in the future \(got \S+Z, now \S+Z\): the timer would never fire$"),
    ("cron-ended", lambda now: {"cron": "* * * * ? *", "endAt": round(now) - 1, "payload": 1},
     "endAt", r"^endAt must be in the future"),
    ("every-ends-before-its-first", lambda now: {"every": 3600, "endAt": round(now) + 600, "payload": 1},
     "endAt", r"^endAt \S+Z must be later than the first occurrence, \S+Z: the timer would never fire$"),
    ("cron-ends-before-its-first", lambda now: {"cron": "0 9 1 1 ? *", "startAt": "2100-01-02T00:00:00Z",
                                                "endAt": "2100-06-01T00:00:00Z", "payload": 1},
     "endAt", r"^endAt 2100-06-01T00:00:00.000Z must be later than the first occurrence, 2101-01-01T09:00:00.000Z: "
              r"the timer would never fire$"),
]


@pytest.mark.parametrize(("name", "body", "field", "message"), NEVER_FIRING, ids=[case[0] for case in NEVER_FIRING])
def test_a_definition_that_would_never_fire_is_400_naming_the_field_and_nothing_is_kept(aws, name, body, field, message):
    status, answer = call_api("PUT", f"/periodic/{name}", body(now_s()))
    assert (status, answer["field"]) == (400, field), answer
    assert re.match(message, answer["message"]), answer["message"]
    assert call_api("GET", f"/periodic/{name}")[0] == 404
    assert aws.count_items("TIMER#") == 0 and aws.receive(aws.delayer_url) == []


def test_a_replacement_that_would_never_fire_leaves_the_live_definition_in_place(aws):
    live = put("nightly", {"cron": "0 2 * * ? *", "payload": "old"})
    status, answer = call_api("PUT", "/periodic/nightly", {"cron": "0 2 30 2 ? *", "payload": "new"})
    assert (status, answer["field"]) == (400, "cron")
    status, stored = call_api("GET", "/periodic/nightly")
    assert status == 200 and (stored["cron"], stored["payload"], stored["nextDueAt"]) == (
        "0 2 * * ? *", "old", live["nextDueAt"])


def test_the_same_body_again_is_a_replay_even_once_its_end_has_passed(aws, virtual_clock):
    """Idempotent PUT: a body accepted before is answered as it was, though a new timer of it would now be refused."""
    start, first = put_starting_soon("brief", {"every": 1, "payload": 1}, end_after=1)
    virtual_clock.move_to((start + 1) * 1000 + 50)
    assert call_api("PUT", "/periodic/brief", {"every": 1, "payload": 1, "startAt": start, "endAt": start + 1}) == (
        200, first)
    status, answer = call_api("PUT", "/periodic/brief", {"every": 1, "payload": 2, "startAt": start, "endAt": start + 1})
    assert (status, answer["field"]) == (400, "endAt")
    assert call_api("GET", "/periodic/brief")[1]["payload"] == 1


def test_a_declared_timer_that_would_never_fire_fails_its_deploy_naming_the_field(aws):
    with pytest.raises(DefinitionRefused, match=r"^PUT /periodic/nightly answered 400: cron '0 2 30 2 \? \*' matches "
                                                r"no date at all .* \(field cron\)$"):
        api.handler(event("Create", "nightly", {"cron": "0 2 30 2 ? *", "payload": {}}))
    assert call_api("GET", "/periodic/nightly")[0] == 404


def test_a_declared_timer_with_a_group_joins_it(aws):
    """``PeriodicTimer(group=...)`` puts its group in the Definition: the deploy's PUT makes it a member."""
    answer = api.handler(event("Create", "nightly", {"cron": "0 2 * * ? *", "payload": {}, "group": "reports"}))
    assert answer["Data"]["Status"] == "ACTIVE"
    status, listed = call_direct("GET", "/periodic?group=reports")
    assert status == 200 and [item["id"] for item in listed["items"]] == ["nightly"]
    assert cancel_call("reports")[0] == 200
    assert call_api("GET", "/periodic/nightly")[0] == 404
