"""A limited target that says slow down, on virtual time: an HTTPS 429 with ``Retry-After`` holds the whole target
back that long, one without it backs off, doubling while the answers keep coming; the attempt it took is not spent
(a schedule with one attempt is still delivered), and a hold past ``retry.maxAgeSeconds`` parks it."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws import https_target

from .conftest import call_api
from .flow_controlling import create, dispatch_one_at_a_time, slots
from .https_receiver import Answer
from .limited_hook import hook, starts  # noqa: F401 - the receiver fixture
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
def test_a_429_with_retry_after_holds_the_target_that_long_and_its_attempt_is_not_spent(aws, hook):
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"mail-{n}", due_ms, "hook", retry={"maxAttempts": 1})
    hook.answers["/hook"] = Answer(429, headers={"Retry-After": "5"})
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms)  # the first start is answered 429; the others find the target held
    assert starts(hook) == [("mail-0", iso(due_ms))]
    hook.answers["/hook"] = Answer(200)
    dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert [fired for _, fired in starts(hook)[1:]] == [iso(at) for at in slots({"rate": 10}, 3, due_ms + 5000)]
    assert sorted(i for i, _ in starts(hook)[1:]) == ["mail-0", "mail-1", "mail-2"]
    assert [call_api("GET", f"/schedules/mail-{n}")[1]["status"] for n in range(3)] == ["FIRED"] * 3
    assert aws.receive(aws.dlq_url) == []


def test_without_retry_after_the_hold_doubles_while_the_target_keeps_saying_slow_down(aws, hook):
    due_ms = now_ms() + 5000
    create("backed-off", due_ms, "hook")
    hook.answers["/hook"] = Answer(503)
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms + 1000)  # 503 at due, held 1 s; 503 again, held 2 s
    hook.answers["/hook"] = Answer(204)
    dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert [fired for _, fired in starts(hook)] == [iso(due_ms), iso(due_ms + 1000), iso(due_ms + 3000)]
    assert call_api("GET", "/schedules/backed-off")[1]["status"] == "FIRED"


def test_a_hold_past_the_schedules_max_age_parks_it_with_the_reason(aws, hook):
    due_ms = now_ms() + 5000
    create("too-old", due_ms, "hook", retry={"maxAgeSeconds": 60})
    hook.answers["/hook"] = Answer(429, headers={"Retry-After": "120"})
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms + 600_000)
    assert len(starts(hook)) == 1
    [parked] = aws.receive(aws.dlq_url)
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    assert reason.startswith("maxAgeSeconds 60 exceeded: the target held deliveries back: ")
    assert json.loads(parked["body"])["id"] == "too-old"
    assert call_api("GET", "/schedules/too-old")[1]["status"] == "FAILED"


@pytest.mark.parametrize(("value", "seconds"), [("5", 5.0), ("0", 0.0), ("999999", 86_400.0), ("soon", None),
                                                 ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("", None)])
def test_retry_after_is_read_as_seconds_or_a_date(value, seconds):
    assert https_target.retry_after_seconds(value, 1_900_000_000.0) == seconds
