"""Group cancels on the local engine: how long ``DELETE /groups/{group}`` takes to answer, and how fast its sweep
cleans up the members, for groups of a few sizes.

    ./dev bench --only groups                        # the section in docs/benchmarks.md
    .venv/bin/python -m bench.groups --members 1000  # one run, its figures as JSON

Each run, on a fresh engine: ``members`` timers of one group, due two hours out (timer items waiting for the
sweeper), created through the HTTP API in batches of ten from eight clients, beside 100 timers of another group and
100 without one; then the cancel is timed, and the sweep is watched (a count of the group's index entries, read
from moto every half second) until no member is left in the index, or, for a size in ``watched``, for ``watch_s``
(its rate). The run fails unless the answer counts every member, 50 members sampled evenly through the group read
CANCELLED right after the answer, and 20 timers of the other group and 20 without one read SCHEDULED once the sweep
is done or its watch ends. A seeded run (the group written straight into the table) checks the 50 sampled members
only. The figures are the engine's: moto's ``Query`` of an index reads the whole table (a page of 100 members costs
time in proportion to the table's size), which bounds the sweep and the count here; on DynamoDB a page is one
partition's keys.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .pricing import PRICES

GROUP, OTHER = "bench-group", "bench-other"
CLIENTS = 8
DUE_IN_SECONDS = 7200


def _create(api_url: str, ids: list[str], group: str | None) -> None:
    api = raw_client(api_url)
    for start in range(0, len(ids), 10):
        status, answer = api.raw("createScheduleBatch", {"schedules": [
            {"id": i, "delaySeconds": DUE_IN_SECONDS, "payload": {"n": i}, **({"group": group} if group else {})}
            for i in ids[start:start + 10]]})
        assert status == 200 and all(r["status"] == 201 for r in answer["results"]), answer


def _create_all(engine: Engine, plan: dict[str | None, list[str]]) -> float:
    """Every id of ``plan`` (group -> ids) created, from ``CLIENTS`` clients at once; the seconds it took."""
    chunks = [(ids[n::CLIENTS], group) for group, ids in plan.items() for n in range(CLIENTS)]
    began = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(lambda chunk: _create(engine.api_url, *chunk), chunks))
    return time.perf_counter() - began


def _index_count(engine: Engine, group: str) -> int:
    ddb, kwargs = engine.client("dynamodb"), {
        "TableName": engine.table_name, "IndexName": "ByGroup", "Select": "COUNT",
        # with the sort key's range, as the runtime's queries: moto (not DynamoDB) fails a query of a sparse index's
        # partition by its hash key alone once an item of it has left the index
        "KeyConditionExpression": "#g = :g AND #s BETWEEN :low AND :high",
        "ExpressionAttributeNames": {"#g": "group", "#s": "groupSk"},
        "ExpressionAttributeValues": {":g": {"S": group}, ":low": {"S": "S#"}, ":high": {"S": "S$"}}}
    total = 0
    while True:
        page = ddb.query(**kwargs)
        total += page["Count"]
        if "LastEvaluatedKey" not in page:
            return total
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def cancel_and_sweep(engine: Engine, members: int, timeout: float = 1800.0,
                     watch_s: float | None = None) -> dict[str, Any]:
    """Create the group and its neighbours, cancel the group, wait for its sweep (or, with ``watch_s``, watch it
    that long and take its rate); the figures, checked."""
    plan = {GROUP: [f"m-{n}" for n in range(members)], OTHER: [f"o-{n}" for n in range(100)],
            None: [f"u-{n}" for n in range(100)]}
    create_s = _create_all(engine, plan)
    api = raw_client(engine.api_url)
    began = time.perf_counter()
    status, answer = api.raw("cancelGroup", group=GROUP)
    answer_s = time.perf_counter() - began
    assert status == 200 and answer["stopped"] == {"schedules": members, "periodic": 0}, answer
    sample = plan[GROUP][:: max(1, members // 50)]
    assert {api.raw("getSchedule", id=i).body["status"] for i in sample} == {"CANCELLED"}  # from the answer on
    read_s = time.perf_counter() - began
    deadline = time.monotonic() + (watch_s if watch_s is not None else timeout)
    while (left := _index_count(engine, GROUP)) > 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert watch_s is not None or left == 0, f"{left} members still in the index after {timeout} s"
    swept_s = time.perf_counter() - began
    assert {api.raw("getSchedule", id=i).body["status"] for i in plan[OTHER][:20] + plan[None][:20]} == {"SCHEDULED"}
    return {"members": members, "create_s": round(create_s, 1), "answer_ms": round(answer_s * 1000),
            "count_complete": answer["countComplete"], "sample_read_cancelled_s": round(read_s, 1),
            "sweep_s": round(swept_s, 1) if left == 0 else None, "watched_s": round(swept_s, 1),
            "swept_per_second": round((members - left) / swept_s, 1)}


def _seed(engine: Engine, ids: list[str], group: str) -> float:
    """``ids`` written straight into the engine's table as waiting members of ``group`` (a record and a timer item
    each, built by the runtime's own item classes, as a create due two hours out writes them), ``CLIENTS`` writers at
    once; the seconds it took. For a group too large to create through the API in a benchmark's time."""
    from scheduler_runtime.aws.items import ScheduleRecord, TimerItem  # noqa: PLC0415 - the engine put it on the path
    from scheduler_runtime.core import keys  # noqa: PLC0415

    now = time.time_ns() // 1_000_000
    due, shards = now + DUE_IN_SECONDS * 1000, engine.options.shard_count

    def items(schedule_id: str) -> list[dict[str, Any]]:
        token, shard = keys.new_token(), keys.shard_for(schedule_id, shards)
        record = ScheduleRecord(schedule_id=schedule_id, due_ms=due, payload_json="{}", target="default",
                                status="SCHEDULED", token=token, request_hash=b"seeded", created_ms=now, shard=shard,
                                group=group)
        return [record.to_item(), TimerItem(shard, due, schedule_id, token, now).to_item()]

    def write(chunk: list[str]) -> None:
        ddb = engine.client("dynamodb")
        puts = [{"PutRequest": {"Item": item}} for i in chunk for item in items(i)]
        for start in range(0, len(puts), 25):
            request = {engine.table_name: puts[start:start + 25]}
            while request:
                request = ddb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}

    began = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(write, [ids[n::CLIENTS] for n in range(CLIENTS)]))
    return time.perf_counter() - began


def seeded_cancel(engine: Engine, members: int) -> dict[str, Any]:
    """A group of ``members`` seeded into the table: the cancel's answer, and every sampled member read CANCELLED
    right after it (its sweep is not waited for: moto's whole-table index pages would take hours)."""
    ids = [f"s-{n}" for n in range(members)]
    seed_s = _seed(engine, ids, GROUP)
    api = raw_client(engine.api_url, timeout_seconds=120)  # moto counts a page in time with the whole table's size
    began = time.perf_counter()
    status, answer = api.raw("cancelGroup", group=GROUP)
    answer_s = time.perf_counter() - began
    assert status == 200, answer
    sample = ids[:: max(1, members // 50)]
    statuses = {api.raw("getSchedule", id=i).body["status"] for i in sample}
    read_s = time.perf_counter() - began
    assert statuses == {"CANCELLED"}, statuses
    return {"members": members, "seeded": True, "create_s": round(seed_s, 1), "answer_ms": round(answer_s * 1000),
            "count_complete": answer["countComplete"], "counted": answer["stopped"]["schedules"],
            "sample_read_cancelled_s": round(read_s, 1)}


def grouped_cost() -> dict[str, float]:
    """USD per million of what a group adds to a one-shot timer, on demand: an index entry written at its create and
    removed at its delivery start (keys only, one write unit each), and one strongly consistent read of its group's
    cancel item (one read unit) at its delivery start. The handler tests count the calls: one read more, and the
    index writes ride on the record's own writes."""
    writes, reads = 2 * PRICES["ddb_od_per_million_wru"], PRICES["ddb_od_per_million_rru"]
    return {"index_writes": writes, "cancel_read": reads, "total": writes + reads}


def run(sizes: list[int], repeats: int = 1, watched: list[int] | None = None, watch_s: float = 60.0,
        seeded: list[int] | None = None) -> dict[str, Any]:
    """The section, each run on a fresh engine: for each of ``sizes``, ``repeats`` runs waited out to the sweep's end;
    for each of ``watched``, one whose sweep is watched ``watch_s`` (its rate); one seeded run per ``seeded`` size."""
    runs = []
    for members in sizes:
        for _ in range(repeats):
            with Engine(EngineOptions(target=Recorder(), port=0, sweep_interval=5)) as engine:
                runs.append(cancel_and_sweep(engine, members))
    for members in watched or []:
        with Engine(EngineOptions(target=Recorder(), port=0, sweep_interval=5)) as engine:
            runs.append(cancel_and_sweep(engine, members, watch_s=watch_s))
    for members in seeded or []:
        with Engine(EngineOptions(target=Recorder(), port=0, sweep_interval=5)) as engine:
            runs.append(seeded_cancel(engine, members))
    return {"sizes": sizes, "repeats": repeats, "runs": runs, "grouped_cost": grouped_cost()}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.groups", description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--seeded", type=int, help="also a seeded group of this many members (answer time only)")
    args = parser.parse_args()
    print(json.dumps(run([args.members], seeded=[args.seeded] if args.seeded else None)))


if __name__ == "__main__":
    main()
