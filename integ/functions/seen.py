"""The seen table: what reached the test's targets, and the marks the probe sets (shared by the functions).

One item per delivered occurrence, keyed by the envelope's ``id`` and ``delivery#<dedupeKey>``: a repeat
of the same occurrence (delivery is at least once) updates that item, so counts are of occurrences. A
mark is ``("mark", <name>)`` with the time, in ms, at which the probe got the answer it marks. A schedule
whose payload says ``failUntilHealed`` is refused by the recorder until ``(<id>, "heal")`` exists.
"""

from __future__ import annotations

import os
import time
from typing import Any

import botocore.session

from cdk_delayed_scheduler.envelope import Envelope

TABLE = os.environ["SEEN_TABLE"]
DELIVERY = "delivery#"
_dynamodb = botocore.session.get_session().create_client("dynamodb")


def now_ms() -> int:
    return int(time.time() * 1000)


def _ms(value: Any) -> int:
    return int(value.timestamp() * 1000)


def record(envelope: Envelope, arrived_as: str, **extra: str) -> None:
    """Write down one delivery: its target, how it arrived, its times and whether it came early."""
    arrived = now_ms()
    values: dict[str, Any] = {
        ":target": {"S": envelope.target}, ":arrivedAs": {"S": arrived_as}, ":dueAt": {"S": envelope.raw["dueAt"]},
        ":dueMs": {"N": str(_ms(envelope.due_at))}, ":firedMs": {"N": str(_ms(envelope.fired_at))},
        ":early": {"BOOL": envelope.fired_at < envelope.due_at or arrived < _ms(envelope.due_at)},
        ":attempt": {"N": str(envelope.attempt)}, ":one": {"N": "1"},
        **{f":{name}": {"S": value} for name, value in extra.items()},
    }
    kept = ["target", "arrivedAs", "dueAt", "dueMs", "firedMs", "early", *extra]
    _dynamodb.update_item(
        TableName=TABLE, Key={"id": {"S": envelope.id}, "sk": {"S": DELIVERY + envelope.dedupe_key}},
        UpdateExpression="SET " + ", ".join(f"#{n} = if_not_exists(#{n}, :{n})" for n in kept)
                         + ", #attempt = :attempt ADD #deliveries :one",
        ExpressionAttributeNames={f"#{n}": n for n in (*kept, "attempt", "deliveries")},
        ExpressionAttributeValues=values)


def deliveries(schedule_id: str) -> list[dict[str, Any]]:
    """Every recorded occurrence of ``schedule_id``, as plain values, in due order."""
    items: list[dict[str, Any]] = []
    query: dict[str, Any] = {
        "TableName": TABLE, "ConsistentRead": True,
        "KeyConditionExpression": "id = :id AND begins_with(sk, :delivery)",
        "ExpressionAttributeValues": {":id": {"S": schedule_id}, ":delivery": {"S": DELIVERY}},
    }
    while True:
        page = _dynamodb.query(**query)
        items += [{name: _plain(value) for name, value in item.items()} for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=lambda item: item["dueMs"])
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _plain(value: dict[str, Any]) -> Any:
    kind, raw = next(iter(value.items()))
    return int(raw) if kind == "N" else raw


def mark(name: str) -> int:
    """Set the mark ``name`` to now; answer its time in ms."""
    at = now_ms()
    _dynamodb.put_item(TableName=TABLE, Item={"id": {"S": "mark"}, "sk": {"S": name}, "atMs": {"N": str(at)}})
    return at


def mark_time(name: str) -> int:
    """The time of the mark ``name``, in ms (``KeyError`` when it was never set)."""
    item = _dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "mark"}, "sk": {"S": name}},
                              ConsistentRead=True).get("Item")
    if item is None:
        raise KeyError(f"no mark {name!r}")
    return int(item["atMs"]["N"])


def healed(schedule_id: str) -> bool:
    item = _dynamodb.get_item(TableName=TABLE, Key={"id": {"S": schedule_id}, "sk": {"S": "heal"}},
                              ConsistentRead=True).get("Item")
    return item is not None
