"""The deployed wiring of the listing and periodic routes: the listing (``GET /schedules``, through the deployed
keys-only index) and a periodic timer (``PUT``/``GET``/``DELETE /periodic/{id}``, ``GET /periodic``),
as scenarios of test_moto_deploy.py (imported there, so that they run against its one deployment and
their calls join its per-role IAM audit)."""

from __future__ import annotations

import json
import time

from moto_wiring import drive_until, scenario


def _take(session, queue_url: str, schedule_id: str):
    """A message for ``schedule_id`` from the queue, deleted once read (the other scenarios read the
    same queue and expect their own message first); ``None`` when there is none yet."""
    sqs = session.client("sqs")
    for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0,
                                       MessageAttributeNames=["All"]).get("Messages", []):
        if json.loads(message["Body"]).get("id") == schedule_id:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            return message
    return None


def _listed(api, query: str) -> list[dict]:
    """Every item of ``GET /schedules?<query>``, page after page."""
    items, token = [], None
    for _ in range(50):
        status, body = api("GET", f"/schedules?{query}" + (f"&nextToken={token}" if token else ""))
        assert status == 200, body
        items.extend(body["items"])
        token = body.get("nextToken")
        if not token:
            return items
    raise AssertionError("the listing did not end")


@scenario
def test_the_listing_pages_through_the_index(deployed, wired, api):
    """With the example's ``listing=True``: the deployed table has the contract's keys-only index,
    every function says ``LISTING=true``, and ``GET /schedules`` finds waiting timers through it
    (a Query of the index, then a BatchGetItem of the records), page by page."""
    functions, _, _ = wired
    assert {f.environment["LISTING"] for f in functions.values()} == {"true"}
    table_name = functions["ApiFunction"].environment["TABLE_NAME"]
    table = deployed["session"].client("dynamodb").describe_table(TableName=table_name)["Table"]
    index = {i["IndexName"]: i for i in table["GlobalSecondaryIndexes"]}["ByStatus"]
    assert index["Projection"]["ProjectionType"] == "KEYS_ONLY"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["listPk", "listSk"]
    ids = [f"wiring-listed-{n}" for n in range(3)]
    for n, schedule_id in enumerate(ids):
        assert api("POST", "/schedules", {"id": schedule_id, "delaySeconds": 7200 + n, "payload": n})[0] == 201
    before = len(api.function.calls)
    listed = _listed(api, "status=SCHEDULED&limit=2")
    assert [i["id"] for i in listed if i["id"] in ids] == ids, listed  # in due order
    assert all(i["status"] == "SCHEDULED" and "payload" not in i for i in listed)
    made = [(op, params.get("IndexName")) for _, op, params in api.function.calls[before:]]
    assert ("Query", "ByStatus") in made and ("BatchGetItem", None) in made, made
    # a cancelled one leaves the waiting statuses
    assert api("DELETE", f"/schedules/{ids[0]}")[1]["status"] == "CANCELLED"
    assert ids[0] not in {i["id"] for i in _listed(api, "status=SCHEDULED")}
    # the direct invoke takes the query in its path and answers the same
    status, body = api.invoke("GET", "/schedules?status=SCHEDULED&limit=100")
    assert status == 200 and {ids[1], ids[2]} <= {i["id"] for i in body["items"]}


@scenario
def test_a_periodic_timer_is_delivered_and_armed_again(deployed, wired, api):
    """``PUT /periodic/{id}`` every hour from 3 seconds from now: its first occurrence goes straight to
    the delayer queue; the deployed dispatcher delivers it and arms the next one an hour later from the
    definition (its role must allow the GetItem and PutItem); then it is listed, and deleted."""
    functions, _, queues = wired
    session = deployed["session"]
    dispatch = queues[functions["DispatcherFunction"].name]
    start = int(time.time()) + 3
    status, body = api("PUT", "/periodic/wiring-periodic", {"every": 3600, "startAt": start, "payload": {"tick": 1}})
    assert (status, body["status"]) == (201, "ACTIVE"), body
    assert api("PUT", "/periodic/wiring-periodic", {"every": 3600, "startAt": start, "payload": {"tick": 1}})[0] == 200
    message = drive_until(lambda: _take(session, deployed["outputs"]["DeliveriesQueueUrl"], "wiring-periodic"),
                          [dispatch.poll])
    envelope = json.loads(message["Body"])
    assert (envelope["payload"], envelope["target"]) == ({"tick": 1}, "default")
    assert envelope["dueAt"].startswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start)))
    dispatched = {op for _, op, _ in functions["DispatcherFunction"].calls}
    assert {"GetItem", "PutItem"} <= dispatched, dispatched
    status, read = api("GET", "/periodic/wiring-periodic")
    assert (status, read["status"], read["firedCount"]) == (200, "ACTIVE", 1), read
    assert read["nextDueAt"].startswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + 3600)))
    status, page = api("GET", "/periodic?limit=100")
    assert status == 200 and "wiring-periodic" in {i["id"] for i in page["items"]}
    assert api("DELETE", "/periodic/wiring-periodic") == (200, {"id": "wiring-periodic", "status": "DELETED"})
    assert api("GET", "/periodic/wiring-periodic")[0] == 404
