"""Groups through the api and dispatcher handlers on in-process moto: ``group`` on creates and PUTs, ``DELETE
/groups/{group}`` (stopped at once for every delivery start, cleaned up by the sweep a page a message), and the
``group=`` listings."""

import json

import pytest

from scheduler_runtime.aws import groups as group_store
from scheduler_runtime.core import groups
from scheduler_runtime.handlers import dispatcher

from .conftest import call_api, call_direct, faulty, window
from .dispatching import dispatch_all, dispatch_until_empty
from .grouping import cancel, create, prompt_sweep, sweep  # noqa: F401 - prompt_sweep is an autouse fixture
from .virtual_time import now_ms

pytestmark = pytest.mark.usefixtures("virtual_clock")


def put_periodic(periodic_id: str, group: str | None = "g1", every: int = 1) -> None:
    body = {"every": every, "payload": {"id": periodic_id}, **({"group": group} if group else {})}
    status, answer = call_api("PUT", f"/periodic/{periodic_id}", body)
    assert status == 201, answer


def listed(path: str) -> tuple[list[str], str | None]:
    status, body = call_direct("GET", path)
    assert status == 200, body
    return [item["id"] for item in body["items"]], body.get("nextToken")


def test_a_group_is_kept_shown_and_part_of_the_request_hash(aws):
    create("a", 30, group="team-7")
    status, body = call_api("GET", "/schedules/a")
    assert (status, body["group"]) == (200, "team-7")
    same = {"id": "a", "dueAt": body["dueAt"], "payload": {"id": "a"}, "group": "team-7"}
    assert call_api("POST", "/schedules", same)[0] == 200  # a replay
    assert call_api("POST", "/schedules", {**same, "group": "team-8"})[0] == 409
    assert call_api("POST", "/schedules", {k: v for k, v in same.items() if k != "group"})[0] == 409


def test_a_schedule_without_a_group_writes_no_group_attribute(aws):
    create("plain", 0, group=None)
    create("grouped", 0)
    plain, grouped = (aws.item(f"SCHEDULE#{i}", "RECORD") for i in ("plain", "grouped"))
    assert groups.PARTITION_KEY not in plain and groups.SORT_KEY not in plain
    assert grouped[groups.SORT_KEY]["S"].startswith("S#") and grouped[groups.SORT_KEY]["S"].endswith("#grouped")
    delivered = dispatch_until_empty(aws)
    assert sorted(d["id"] for d in delivered) == ["grouped", "plain"]
    assert groups.SORT_KEY not in aws.item("SCHEDULE#grouped", "RECORD")  # it left the index at delivery start


def test_a_grouped_delivery_makes_one_read_more_than_an_ungrouped_one_and_nothing_else(aws):
    """The cost of a group on the hot path: the delivery start's read of the group's cancel, nothing more (its
    index writes ride on the create's and the start's own writes)."""
    from scheduler_runtime.aws import context

    def calls_of_one_delivery(group: str | None) -> list[str]:
        ctx = context.current()
        real, made = ctx.dynamodb, []

        class Counting:
            def __getattr__(self, name):
                made.append(name)
                return getattr(real, name)

        ctx._clients["dynamodb"] = Counting()
        try:
            create(f"cost-{group}", 0, group=group)
            assert len(dispatch_until_empty(aws)) == 1
        finally:
            ctx._clients["dynamodb"] = real
        return made

    plain, grouped = calls_of_one_delivery(None), calls_of_one_delivery("g1")
    assert sorted(grouped) == sorted(plain + ["get_item"])
    assert plain == ["put_item", "update_item"]  # the create's record, the delivery start


@pytest.mark.parametrize("value, rule", [
    ("x" * 65, "1-64 characters"), ("a/b", "A-Za-z0-9._:-"), (7, "string"), ("", "1-64 characters")])
def test_a_bad_group_is_refused_naming_the_field_everywhere_it_is_taken(aws, value, rule):
    status, body = call_api("POST", "/schedules", {"delaySeconds": 1, "payload": 1, "group": value})
    assert status == 400 and body["field"] == "group" and rule in body["message"]
    status, body = call_api("POST", "/schedule-batches", {"schedules": [{"delaySeconds": 1, "payload": 1, "group": value}]})
    assert body["results"][0]["status"] == 400 and body["results"][0]["body"]["field"] == "schedules[0].group"
    status, body = call_api("PUT", "/periodic/p", {"every": 60, "payload": 1, "group": value})
    assert status == 400 and body["field"] == "group"
    if isinstance(value, str):  # a query parameter is always text: "7" is a fine name there
        status, body = call_direct("GET", f"/schedules?group={value}")
        assert status == 400 and body["field"] == "group"


def test_a_bad_group_in_the_path_is_refused_naming_it(aws):
    status, body = call_api("DELETE", "/groups/" + "x" * 65)
    assert status == 400 and body["field"] == "group" and "1-64" in body["message"]


def test_cancelling_a_group_stops_its_waiting_members_and_nothing_else(aws):
    create("short", 0)
    with window(1):
        create("long", 30)
    create("other-group", 0, group="g2")
    create("no-group", 0, group=None)
    put_periodic("tick")
    answer = cancel()
    assert answer["group"] == "g1" and answer["stopped"] == {"schedules": 2, "periodic": 1} and answer["countComplete"]
    # Before the sweep: every delivery start refuses them, and GET already answers as after it.
    assert call_api("GET", "/schedules/short")[1]["status"] == "CANCELLED"
    assert call_api("GET", "/periodic/tick")[0] == 404
    assert sweep(aws) == 2  # one message per kind: each fits one page
    delivered = dispatch_until_empty(aws)
    assert sorted(d["id"] for d in delivered) == ["no-group", "other-group"]
    for schedule_id in ("short", "long"):
        assert call_api("GET", f"/schedules/{schedule_id}")[1]["status"] == "CANCELLED"
    assert aws.count_items("TIMER#") == 0  # the long member's timer went with it
    assert aws.item("PERIODIC#" + _partition("tick"), "tick")["status"]["S"] == "DELETED"


def test_a_member_created_after_the_cancel_is_delivered(aws):
    create("before", 0)
    cancel()
    create("after", 0)
    put_periodic("later", every=3600)
    sweep(aws)
    assert [d["id"] for d in dispatch_until_empty(aws)] == ["after"]
    assert call_api("GET", "/schedules/after")[1]["status"] == "FIRED"
    status, body = call_api("GET", "/periodic/later")
    assert (status, body["status"], body["group"]) == (200, "ACTIVE", "g1")


def test_a_repeated_cancel_answers_200_and_counts_only_what_joined_since(aws):
    create("one", 30)
    assert cancel()["stopped"]["schedules"] == 1
    again = cancel()
    assert again["stopped"] == {"schedules": 0, "periodic": 0}
    create("two", 30)
    assert cancel()["stopped"] == {"schedules": 1, "periodic": 0}
    assert cancel("never-used")["stopped"] == {"schedules": 0, "periodic": 0}


def test_a_group_too_large_to_count_in_time_is_stopped_all_the_same_and_says_its_counts_are_partial(aws, monkeypatch):
    from scheduler_runtime.handlers import _group_routes

    create("big-0", 30)
    create("big-1", 30)
    monkeypatch.setattr(_group_routes, "COUNT_BUDGET_MS", 0)

    def endless_pages(real, **kwargs):  # every count page says more follow, as a page of a huge group does
        answer = real.query(**kwargs)
        if kwargs.get("Select") == "COUNT":
            answer["LastEvaluatedKey"] = {"pk": {"S": "more"}}
        return answer

    with faulty("dynamodb", query=endless_pages):
        answer = cancel()
    assert answer["countComplete"] is False and answer["stopped"]["schedules"] == 2  # the first page's
    assert {call_api("GET", f"/schedules/big-{n}")[1]["status"] for n in range(2)} == {"CANCELLED"}
    assert cancel()["countComplete"] is True


def test_a_delivery_started_after_the_cancel_is_refused_by_the_gate_before_the_sweep_reaches_it(aws):
    create("queued", 0)
    group_store.GroupStore(aws.ddb, aws.table).cancel("g1", now_ms() + 1)  # no sweep sent
    assert dispatch_all(aws) == []
    record = aws.item("SCHEDULE#queued", "RECORD")
    assert record["status"]["S"] == "CANCELLED" and "group 'g1' was cancelled" in record["lastError"]["S"]
    assert groups.SORT_KEY not in record


def test_a_periodic_occurrence_started_after_the_cancel_is_refused_and_the_timer_stops(aws):
    put_periodic("beat")
    group_store.GroupStore(aws.ddb, aws.table).cancel("g1", now_ms() + 1)
    assert dispatch_until_empty(aws, timeout=5) == []
    definition = aws.item("PERIODIC#" + _partition("beat"), "beat")
    assert definition["status"]["S"] == "DELETED" and groups.SORT_KEY not in definition


def test_a_gate_read_slower_than_the_start_deadline_never_calls_the_target(aws, virtual_clock, monkeypatch):
    create("slow", 0)
    monkeypatch.setattr(group_store.window, "START_DEADLINE_MS", 50)

    def slow_read(real, **kwargs):
        if kwargs["Key"]["pk"]["S"].startswith(groups.CANCEL_PREFIX):
            virtual_clock.advance(0.1)
        return real.get_item(**kwargs)

    messages = aws.wait_for_messages(aws.delayer_url)
    with faulty("dynamodb", get_item=slow_read):
        answer = dispatcher.handler({"Records": messages})
    assert answer == {"batchItemFailures": [{"itemIdentifier": messages[0]["messageId"]}]}
    assert aws.receive(aws.target_url) == []


def test_a_stopped_member_cannot_be_rescheduled(aws):
    with window(1):
        create("snoozed", 30)
    cancel()
    status, body = call_api("PATCH", "/schedules/snoozed", {"delaySeconds": 60})
    assert status == 409 and "CANCELLED" in body["message"]


def test_the_group_listing_pages_through_waiting_members_in_the_order_they_joined(aws, virtual_clock):
    for n in range(5):
        create(f"m{n}", 30)
        virtual_clock.advance(0.002)  # distinct stamps
    create("elsewhere", 30, group="g2")
    put_periodic("p1")
    first, token = listed("/schedules?group=g1&limit=3")
    assert first == ["m0", "m1", "m2"] and token
    second, token = listed(f"/schedules?group=g1&limit=3&nextToken={token}")
    assert second == ["m3", "m4"] and token is None
    assert listed("/periodic?group=g1")[0] == ["p1"]
    status, body = call_direct("GET", f"/periodic?group=g1&nextToken={listed('/schedules?group=g1&limit=1')[1]}")
    assert status == 400 and body["field"] == "nextToken"  # a token of the schedules listing
    status, body = call_direct("GET", "/schedules?group=g1&status=QUEUED")
    assert status == 400 and body["field"] == "status" and "cannot be combined with group" in body["message"]


def test_the_group_listing_shows_stopped_members_as_cancelled_until_the_sweep_removes_them(aws):
    create("x", 30)
    cancel()
    status, body = call_direct("GET", "/schedules?group=g1")
    assert [(i["id"], i["status"], i["group"]) for i in body["items"]] == [("x", "CANCELLED", "g1")]
    sweep(aws)
    assert listed("/schedules?group=g1")[0] == []


def test_the_sweep_goes_page_by_page_through_a_group_larger_than_a_page(aws, monkeypatch):
    monkeypatch.setattr(groups, "SWEEP_PAGE_SIZE", 4)
    with window(1):
        for n in range(10):
            create(f"big{n}", 30)
    assert cancel()["stopped"]["schedules"] == 10
    assert sweep(aws) == 2 + 2  # schedules: three pages of 4, 4 and 2 (the first sent with the periodic one)
    statuses = {call_api("GET", f"/schedules/big{n}")[1]["status"] for n in range(10)}
    assert statuses == {"CANCELLED"}
    assert aws.count_items("TIMER#") == 0
    stored = {aws.item(f"SCHEDULE#big{n}", "RECORD")["status"]["S"] for n in range(10)}
    assert stored == {"CANCELLED"}  # written by the sweep, not only shown


def _partition(periodic_id: str) -> str:
    from scheduler_runtime.core import keys

    return keys.definition_key(periodic_id).pk.removeprefix("PERIODIC#")


def _sweep_messages(aws) -> list[dict]:
    """The sweep messages waiting in the delayer queue, received (every message visible again at once)."""
    found = []
    for message in aws.receive(aws.delayer_url):
        if groups.SWEEP_MARKER in json.loads(message["body"]):
            found.append(message)
        aws.sqs.change_message_visibility(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"],
                                          VisibilityTimeout=0)
    return found


def _cancelled_with_long_members(aws, prefix: str, count: int) -> dict:
    """``count`` long members of g1 (``<prefix>-<n>``), the group cancelled: its first schedules sweep message."""
    with window(1):
        for n in range(count):
            create(f"{prefix}-{n}", 30)
    cancel()
    return next(m for m in _sweep_messages(aws) if json.loads(m["body"])["kind"] == "S")


def test_a_sweep_message_handed_out_twice_goes_on_once(aws, monkeypatch):
    monkeypatch.setattr(groups, "SWEEP_PAGE_SIZE", 4)
    first = _cancelled_with_long_members(aws, "twice", 10)
    assert dispatcher.handler({"Records": [first]}) == {"batchItemFailures": []}
    assert dispatcher.handler({"Records": [first]}) == {"batchItemFailures": []}  # SQS hands it out again
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=first["receiptHandle"])  # as the poller does
    following = [json.loads(m["body"]) for m in _sweep_messages(aws) if json.loads(m["body"])["kind"] == "S"]
    assert len(following) == 1 and following[0]["cursor"].endswith("#twice-3")  # one chain, past the first page
    sweep(aws)
    assert {aws.item(f"SCHEDULE#twice-{n}", "RECORD")["status"]["S"] for n in range(10)} == {"CANCELLED"}


def test_a_sweep_out_of_time_hands_the_rest_of_its_page_to_the_next_message(aws, monkeypatch):
    from scheduler_runtime.aws import groups as group_store

    monkeypatch.setattr(group_store, "SWEEP_BUDGET_MS", 0)  # one chunk a message
    monkeypatch.setattr(group_store, "STOP_CHUNK", 3)
    _cancelled_with_long_members(aws, "budget", 7)
    assert sweep(aws) == 1 + 3  # the periodic kind's one, and the schedules' three: chunks of 3, 3 and 1
    assert {aws.item(f"SCHEDULE#budget-{n}", "RECORD")["status"]["S"] for n in range(7)} == {"CANCELLED"}


def test_a_redrive_sends_a_parked_group_sweep_back_and_it_goes_on_from_where_it_stopped(aws, monkeypatch):
    from cdk_delayed_scheduler.operator import redrive

    from .conftest import REGION

    monkeypatch.setattr(groups, "SWEEP_PAGE_SIZE", 3)
    parked = _cancelled_with_long_members(aws, "parked-sweep", 5)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=parked["body"])  # as SQS's redrive parks it
    aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=parked["receiptHandle"])
    report = redrive(table_name=aws.table, delayer_queue=aws.delayer_url, dead_letter_queue=aws.dlq_url,
                     region_name=REGION, group="other-group")
    assert report.moved == [] and report.left == 1  # another group's redrive leaves it
    report = redrive(table_name=aws.table, delayer_queue=aws.delayer_url, dead_letter_queue=aws.dlq_url,
                     region_name=REGION)
    assert [entry["kind"] for entry in report.moved] == ["group sweep"] and aws.receive(aws.dlq_url) == []
    sweep(aws)
    assert {aws.item(f"SCHEDULE#parked-sweep-{n}", "RECORD")["status"]["S"] for n in range(5)} == {"CANCELLED"}


def test_a_cancel_counts_a_group_page_by_page(aws, monkeypatch):
    from scheduler_runtime.aws import groups as group_store

    monkeypatch.setattr(group_store, "COUNT_PAGE", 2)
    for n in range(5):
        create(f"paged-{n}", 30)
    answer = cancel()
    assert answer["stopped"]["schedules"] == 5 and answer["countComplete"] is True  # three pages of 2, 2 and 1
