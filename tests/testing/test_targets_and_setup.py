"""Named targets of each kind, the environment a user's code reads, a fresh account per scheduler, and
what the kit refuses."""

import os
from datetime import datetime, timedelta, timezone

import pytest

from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient
from cdk_delayed_scheduler.envelope import Envelope
from cdk_delayed_scheduler import testing
from cdk_delayed_scheduler.testing import BusTarget, QueueTarget, TopicTarget, local_scheduler

SEEN: list[dict] = []


def billing(event, context):
    SEEN.append(event)
    return {"ok": True}


@pytest.mark.local_scheduler(targets={"billing": billing, "audit": None, "orders": QueueTarget(),
                                      "ledger": QueueTarget(fifo=True, message_group_id="ledger")})
def test_each_named_target_gets_its_own_deliveries(local_scheduler):
    SEEN.clear()
    timers = local_scheduler.client
    for target in ("billing", "audit", "orders", "ledger", None):
        timers.schedule(timedelta(minutes=5), {"for": target}, id=f"to-{target or 'default'}", target=target)

    local_scheduler.advance(minutes=5)
    for target in ("billing", "audit", "orders", "ledger", "default"):
        (delivery,) = local_scheduler.deliveries(target)
        assert (delivery.target, delivery.id, delivery.envelope.target) == (target, f"to-{target}", target)
        assert timedelta(0) <= delivery.lateness < timedelta(seconds=2)
    assert [event["id"] for event in SEEN] == ["to-billing"]          # the handler ran, with the envelope
    assert len(local_scheduler.deliveries(None)) == 5


@pytest.mark.local_scheduler(targets={"orders": QueueTarget(fifo=True)})
def test_a_queue_targets_deliveries_come_as_the_sqs_event_a_consumer_gets(local_scheduler):
    assert local_scheduler.queue_url("orders").endswith(".fifo")
    local_scheduler.client.schedule(timedelta(seconds=3), {"n": 1}, target="orders")
    local_scheduler.client.schedule(timedelta(seconds=4), {"n": 2}, target="orders")
    local_scheduler.advance(seconds=4)

    event = {"Records": [d.sqs_record for d in local_scheduler.deliveries("orders")]}
    assert [e.payload for e in Envelope.all_from_event(event)] == [{"n": 1}, {"n": 2}]
    assert event["Records"][0]["messageAttributes"]["dedupeKey"]["stringValue"].endswith(
        str(int(local_scheduler.deliveries("orders")[0].due_at.timestamp() * 1000)))


@pytest.mark.local_scheduler(targets={"alerts": TopicTarget(), "ordered": TopicTarget(fifo=True, message_group_id="g"),
                                      "events": BusTarget(detail_type="Reminder due", source="reminders.app")})
def test_a_topic_and_a_bus_deliver_through_moto_to_the_queue_subscribed_or_ruled_to_them(local_scheduler):
    for target in ("alerts", "ordered", "events"):
        local_scheduler.client.schedule(timedelta(minutes=2), {"to": target}, id=f"to-{target}", target=target)
    local_scheduler.advance(minutes=2)

    for target in ("alerts", "ordered", "events"):
        (delivery,) = local_scheduler.deliveries(target)
        assert (delivery.id, delivery.payload, delivery.envelope.target) == (f"to-{target}", {"to": target}, target)
    assert local_scheduler.queue_url("ordered").endswith(".fifo")
    (event,) = local_scheduler.deliveries("events")
    body = event.sqs_record["body"]  # what the rule's queue holds: the EventBridge event, the envelope its detail
    assert '"detail-type": "Reminder due"' in body.replace('":"', '": "') and "reminders.app" in body


def test_user_code_finds_the_api_through_the_environment():
    os.environ["MY_TIMERS_URL"] = "left alone after the block"
    with local_scheduler(url_env="MY_TIMERS_URL") as scheduler:
        assert os.environ["MY_TIMERS_URL"] == scheduler.api_url == scheduler.env["MY_TIMERS_URL"]
        assert scheduler.env["AWS_ENDPOINT_URL_LAMBDA"].startswith("http://127.0.0.1:")
        by_url = SchedulerClient(os.environ["MY_TIMERS_URL"], sign=False).schedule(timedelta(minutes=1), {"via": "url"})
        by_invoke = SchedulerClient.for_function(scheduler.function_name).schedule(timedelta(minutes=1), {"via": "invoke"})
        scheduler.advance(minutes=1)
        assert {d.id for d in scheduler.deliveries()} == {by_url.id, by_invoke.id}
    assert os.environ.pop("MY_TIMERS_URL") == "left alone after the block"


def test_each_scheduler_starts_with_an_empty_account():
    with local_scheduler() as first:
        first.client.schedule(timedelta(hours=2), {}, id="left-behind")
        first.advance(minutes=30)
    with local_scheduler() as second:
        assert abs(second.now() - datetime.now(timezone.utc)) < timedelta(seconds=5)  # the real clock again
        with pytest.raises(NotFoundError):
            second.client.get("left-behind")
        second.advance(hours=3)
        assert second.deliveries(None) == []


def test_wait_until_quiet_lets_real_time_deliver_a_timer_due_now(local_scheduler):
    scheduled = local_scheduler.client.schedule(timedelta(seconds=0), {"now": True})
    local_scheduler.wait_until_quiet()
    assert [d.id for d in local_scheduler.deliveries()] == [scheduled.id]


def test_what_the_kit_refuses_names_the_option_and_the_rule(local_scheduler):
    with pytest.raises(ValueError, match=r"target: 'nope' is not a target of this scheduler \(it has default\)"):
        local_scheduler.deliveries("nope")
    with pytest.raises(ValueError, match=r"target: 'default' is not a queue target of this scheduler"):
        local_scheduler.queue_url("default")
    with pytest.raises(RuntimeError, match=r"local_scheduler: one runs per process at a time"):
        with testing.local_scheduler():
            pass


@pytest.mark.parametrize(("options", "message"), [
    ({"endpoint_url": "http://127.0.0.1:1"}, r"local_scheduler: endpoint_url cannot be set here"),
    ({"targets": {"default": None}}, r"targets: 'default' must match .* and not be 'default'"),
    ({"targets": {"bad name": None}}, r"targets: 'bad name' must match \^\[A-Za-z0-9._:-\]\{1,64\}\$"),
    ({"targets": {"x": 42}}, r"targets\['x'\] must be a Lambda-style handler, None \(record only\) or one of "
                             r"QueueTarget, TopicTarget, BusTarget, StateMachineTarget, HttpsTarget, LambdaTarget, "
                             r"got int"),
])
def test_bad_options_are_refused_before_anything_starts(options, message):
    with pytest.raises(ValueError, match=message):
        with local_scheduler(**options):
            pass
