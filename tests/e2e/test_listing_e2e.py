"""``GET /schedules`` end to end through an engine started with ``--listing``: statuses, due-time
bounds, pages merged across shards in due order, and refused parameters and tokens."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import boto3
import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import all_pages, wait_until

pytestmark = pytest.mark.e2e
WINDOW = 6


@dataclass
class Listing:
    created: dict = field(default_factory=dict)  # id -> create answer
    lists: dict = field(default_factory=dict)  # name -> (status, body)
    pages: list = field(default_factory=list)
    errors: dict = field(default_factory=dict)
    listed_at_s: float = 0.0
    indexed: dict = field(default_factory=dict)  # id -> its listing partition key, for every record that has one


@pytest.fixture(scope="module")
def listing() -> Listing:
    recorder = Recorder()

    def target(envelope: dict) -> None:
        if envelope["payload"] == "fail":
            raise RuntimeError("this target refuses")
        recorder(envelope)

    run = Listing()
    options = EngineOptions(target=target, delay_window=WINDOW, sweep_interval=0.5, shard_count=4, listing=True,
                            max_receive_count=1)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        start = time.time()
        plan = {**{f"long-{n:02d}": (60 + 11 * n, "ok") for n in range(12)},
                **{f"short-{n}": (WINDOW - 1 + 0.15 * n, "ok") for n in range(6)},
                "claimed": (WINDOW + 1, "ok"), "fail-0": (0.2, "fail"), "fail-1": (0.3, "fail"),
                "fired-0": (0.2, "ok"), "fired-1": (0.4, "ok"), "cancel-0": (90, "ok"), "cancel-1": (30, "ok")}
        for schedule_id, (offset, payload) in plan.items():
            status, answer = api.raw("createSchedule", {"id": schedule_id, "dueAt": round(start + offset, 3),
                                                        "payload": payload})
            assert status == 201, answer
            run.created[schedule_id] = answer
        for schedule_id in ("cancel-0", "cancel-1"):
            assert api.raw("cancelSchedule", id=schedule_id)[0] == 200
        wait_until(lambda: all(api.raw("getSchedule", id=i)[1]["status"] == s for i, s in
                               (("fail-0", "FAILED"), ("fail-1", "FAILED"), ("fired-0", "FIRED"), ("fired-1", "FIRED"),
                                ("claimed", "QUEUED"))), 5, "the early schedules did not settle")
        run.listed_at_s = time.time() - start
        for name, query in {"all": {"limit": 100}, "scheduled": {"status": "SCHEDULED"},
                            "queued": {"status": "QUEUED"}, "failed": {"status": "FAILED"}}.items():
            run.lists[name] = api.raw("listSchedules", query=query)
        bounds = (run.created["long-02"]["dueAt"], run.created["long-07"]["dueAt"])
        run.lists["between"] = api.raw("listSchedules", query={"dueAfter": bounds[0], "dueBefore": bounds[1]})
        run.pages = all_pages(api, "listSchedules", limit=5)
        token = run.pages[0][1]["nextToken"]
        run.errors = {
            "fired": api.raw("listSchedules", query={"status": "FIRED"}),
            "limit": api.raw("listSchedules", query={"limit": 0}),
            "unknown": api.raw("listSchedules", query={"order": "desc"}),
            "tampered": api.raw("listSchedules", query={"limit": 5, "nextToken": token.replace(".", "x.", 1)}),
            "other-filters": api.raw("listSchedules", query={"status": "FAILED", "limit": 5, "nextToken": token}),
        }
        ddb = boto3.session.Session(region_name="us-east-1").client("dynamodb", endpoint_url=engine.endpoint_url)
        partition_key = contract.LISTING["partitionKey"]
        run.indexed = {item["pk"]["S"].split("#", 1)[1]: item[partition_key]["S"]  # tests may scan
                       for item in ddb.scan(TableName=engine.table_name)["Items"] if partition_key in item}
    return run


def _ids(answer: tuple) -> list[str]:
    status, body = answer
    assert status == 200, body
    return [item["id"] for item in body["items"]]


def test_every_listed_status_and_nothing_else_in_due_order(listing):
    assert listing.listed_at_s < WINDOW - 1.5, "the listing ran too late to see the short ones still queued"
    status, body = listing.lists["all"]
    items = body["items"]
    expected = {i for i in listing.created if not i.startswith(("fired", "cancel"))}
    assert {item["id"] for item in items} == expected and "nextToken" not in body
    dues = [parse_due_ms(item["dueAt"]) for item in items]
    assert dues == sorted(dues)
    assert all("payload" not in item for item in items)


def test_only_listed_records_hold_index_keys_so_fired_and_cancelled_cost_no_index_storage(listing):
    expected = {i for i in listing.created if not i.startswith(("fired", "cancel"))}
    assert set(listing.indexed) == expected
    assert {listing.indexed[i].split("#")[0] for i in ("fail-0", "fail-1", "short-0", "long-00", "claimed")} == {
        "FAILED", "QUEUED", "SCHEDULED"}


def test_each_status_filter_shows_what_get_would(listing):
    assert set(_ids(listing.lists["scheduled"])) == {f"long-{n:02d}" for n in range(12)}
    assert set(_ids(listing.lists["queued"])) == {f"short-{n}" for n in range(6)} | {"claimed"}
    failed = listing.lists["failed"][1]["items"]
    assert {item["id"] for item in failed} == {"fail-0", "fail-1"}
    assert all(item["status"] == "FAILED" and "this target refuses" in item["lastError"] for item in failed)


def test_due_bounds_are_exclusive(listing):
    assert _ids(listing.lists["between"]) == [f"long-{n:02d}" for n in range(3, 7)]


def test_pages_merge_across_shards_and_cover_the_listing_once(listing):
    assert all(status == 200 and len(page["items"]) <= 5 for status, page in listing.pages)
    paged = [item["id"] for _, page in listing.pages for item in page["items"]]
    assert paged == _ids(listing.lists["all"]) and len(listing.pages) == -(-len(paged) // 5)


def test_bad_parameters_and_tokens_are_400_naming_them(listing):
    for name, field_name in (("fired", "status"), ("limit", "limit"), ("unknown", "order"), ("tampered", "nextToken"),
                             ("other-filters", "nextToken")):
        status, body = listing.errors[name]
        assert (status, body["field"]) == (400, field_name), (name, body)
    assert "FIRED and CANCELLED" in listing.errors["fired"][1]["message"]
