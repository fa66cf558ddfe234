"""Security of the runtime's values, through the handlers on in-process moto:

- ids, payloads and time zones reach DynamoDB only as values: every DynamoDB request the runtime
  sends (recorded on the wire by a botocore ``before-call`` hook on the runtime's sessions) while
  one-shot and periodic timers with hostile ids, payloads and time zones take every path (create,
  batch, replay conflict, read, listing, cancel, sweep, enqueue, delivery, retry, park, periodic put,
  replace, read, list, delete) holds none of them in any expression's text or attribute names;
- no payload is logged: the same paths at the INFO level (as the engine and Lambda at INFO run them),
  plus the WARNING and ERROR paths (a failing target retried and parked, a write-back), never write a
  payload's sentinel in a log record, a metric line or on stdout/stderr.
"""

from __future__ import annotations

import json
import logging

import botocore.session
import pytest

from scheduler_runtime import observability
from scheduler_runtime.handlers import api, dispatcher, enqueuer, sweeper

from .conftest import call_api, call_direct, faulty, schedule, status_of
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")

SENTINEL = "Q7PAYLOADSENTINEL"
#: Ids within what validation accepts (A-Za-z0-9._:-), shaped like expression syntax.
IDS = {name: value for name, value in (
    ("short", ":x-Q7a"), ("long", "Q7b:pk"), ("batch", "SET.Q7c:v"), ("cancelled", ":Q7d..-"), ("broken", "Q7e:OR:-"),
    ("written_back", "REMOVE.Q7f:"), ("every", ":p-Q7g"), ("cron", "Q7h:tz.AND"), ("periodic_broken", ":n.Q7i"))}
PAYLOAD = {"note": f"#n :x ) OR (attribute_exists(pk)) ' \" \\ SET a = :b REMOVE c -- {SENTINEL}",
           "#n": ":x", ":x) OR (": "#st", "list": [") AND (", "attribute_not_exists(sk)", SENTINEL]}
PAYLOAD_STRINGS = ["#n :x ) OR (attribute_exists(pk))", ") AND (", "attribute_not_exists(sk)", ":x) OR (", SENTINEL]
ZONES = ("Etc/GMT+5", "America/Port-au-Prince")
EXPRESSION_TEXTS = ("KeyConditionExpression", "ConditionExpression", "UpdateExpression", "ProjectionExpression",
                    "FilterExpression")


@pytest.fixture
def listing(aws, monkeypatch):
    """The listing index, keys only, as the construct adds it with ``listing=True``, and ``LISTING=true``."""
    aws.ddb.update_table(
        TableName=aws.table,
        AttributeDefinitions=[{"AttributeName": "listPk", "AttributeType": "S"},
                              {"AttributeName": "listSk", "AttributeType": "S"}],
        GlobalSecondaryIndexUpdates=[{"Create": {
            "IndexName": "ByStatus", "Projection": {"ProjectionType": "KEYS_ONLY"},
            "KeySchema": [{"AttributeName": "listPk", "KeyType": "HASH"}, {"AttributeName": "listSk", "KeyType": "RANGE"}]}}])
    monkeypatch.setenv("LISTING", "true")
    return aws


@pytest.fixture
def dynamodb_requests(listing, monkeypatch) -> list[tuple[str, dict]]:
    """(operation, request body) of each DynamoDB request the runtime sends from here on: a hook on
    every botocore session the runtime's contexts create (the test's own clients are not recorded)."""
    sent: list[tuple[str, dict]] = []
    real = botocore.session.get_session

    def record(model, params, **_):
        sent.append((model.name, json.loads(params["body"] or b"{}")))

    def recording_session(*args, **kwargs):
        session = real(*args, **kwargs)
        session.register("before-call.dynamodb", record)
        return session

    monkeypatch.setattr(botocore.session, "get_session", recording_session)
    return sent


def listed(path: str) -> list[str]:
    """The ids of every item of a listing, read a page of one at a time (each next page by its token)."""
    ids, token = [], ""
    while token is not None:
        status, page = call_direct("GET", f"{path}{'&' if '?' in path else '?'}limit=1{token}")
        assert status == 200, page
        ids += [item["id"] for item in page["items"]]
        token = f"&nextToken={page['nextToken']}" if "nextToken" in page else None
    return ids


def dispatch_visible(aws) -> None:
    """Hand each visible delayer message to the dispatcher, until none is visible."""
    for _ in range(20):
        messages = aws.receive(aws.delayer_url)
        if not messages:
            return
        dispatcher.handler({"Records": messages})
    raise AssertionError("the delayer queue never emptied")


def enqueue(aws) -> None:
    """The enqueuer over the stream's new REMOVE records (claims, and the cancel it drops)."""
    assert enqueuer.handler({"Records": aws.new_stream_records("REMOVE")}) == {"batchItemFailures": []}


def refuse_sends(real, **kwargs):
    return {"Successful": [], "Failed": [{"Id": e["Id"], "Code": "InternalError", "SenderFault": False}
                                         for e in kwargs["Entries"]]}


def every_path(aws) -> None:
    """One-shot and periodic timers with ``IDS``, ``PAYLOAD`` and ``ZONES`` through every handler path."""
    # --- one-shots: straight to the queue, through the table, in a batch; a conflict, reads, the listing, a cancel
    schedule(IDS["short"], 0, payload=PAYLOAD)
    for name in ("long", "cancelled"):
        schedule(IDS[name], 20, payload=PAYLOAD, long=True)
    status, body = call_api("POST", "/schedule-batches", {"schedules": [{"id": IDS["batch"], "delaySeconds": 30,
                                                                          "payload": PAYLOAD}]})
    assert (status, body["results"][0]["status"]) == (200, 201), body
    assert call_api("POST", "/schedules", {"id": IDS["long"], "delaySeconds": 40, "payload": PAYLOAD})[0] == 409
    assert call_api("POST", "/schedules", {"id": "bad", "delaySeconds": -1, "payload": PAYLOAD})[0] == 400
    assert call_api("DELETE", f"/schedules/{IDS['cancelled']}")[0] == 200
    for name in ("short", "long", "batch", "cancelled"):
        assert call_api("GET", f"/schedules/{IDS[name]}")[1]["payload"] == PAYLOAD
    assert {IDS["long"], IDS["short"], IDS["batch"]} <= set(listed("/schedules?status=SCHEDULED")
                                                          + listed("/schedules?status=QUEUED"))
    # --- the sweep, the enqueuer (and its write-back), the dispatcher
    assert sweeper.handler({})["claimed"] == 1
    enqueue(aws)
    assert status_of(IDS["long"]) == "QUEUED"
    schedule(IDS["written_back"], 20, payload=PAYLOAD, long=True)
    assert sweeper.handler({})["claimed"] == 1
    with faulty("sqs", send_message_batch=refuse_sends):
        enqueue(aws)
    assert status_of(IDS["written_back"]) == "SCHEDULED"
    # --- periodic timers: every second, and cron in a time zone (then replaced in another); read, listed, deleted
    start = round(now_s() + 0.2, 3)
    for name, body in (("every", {"every": 1, "startAt": start}), ("cron", {"cron": "* * * * ? *", "timeZone": ZONES[0]}),
                       ("cron", {"cron": "0 9 ? * MON-FRI *", "timeZone": ZONES[1]}),
                       ("periodic_broken", {"every": 60, "startAt": start, "target": "broken"})):
        assert call_api("PUT", f"/periodic/{IDS[name]}", {**body, "payload": PAYLOAD})[0] in (200, 201)
    assert call_api("GET", f"/periodic/{IDS['cron']}")[1]["timeZone"] == ZONES[1]
    assert {IDS["every"], IDS["cron"], IDS["periodic_broken"]} <= set(listed("/periodic"))
    dispatch_visible(aws)  # the short one-shot delivered, the first occurrences delivered (or retried)
    assert call_api("DELETE", f"/periodic/{IDS['cron']}")[0] == 200
    # --- a one-shot whose target fails: retried, then parked in the dead-letter queue on its last receive
    schedule(IDS["broken"], 0, target="broken", payload=PAYLOAD)
    [message] = [m for m in aws.receive(aws.delayer_url) if json.loads(m["body"])["id"] == IDS["broken"]]
    for receive_count, retried in ((1, True), (3, False)):
        message["attributes"]["ApproximateReceiveCount"] = str(receive_count)
        assert bool(dispatcher.handler({"Records": [message]})["batchItemFailures"]) is retried
    [parked] = aws.receive(aws.dlq_url)
    assert (json.loads(parked["body"])["id"], json.loads(parked["body"])["payload"]) == (IDS["broken"], PAYLOAD)
    delivered = [json.loads(m["body"]) for m in aws.receive(aws.target_url)]
    assert {IDS["short"], IDS["every"]} <= {e["id"] for e in delivered}
    assert all(e["payload"] == PAYLOAD for e in delivered)


# --- values only ------------------------------------------------------------------------------------
def expressions(request) -> list[tuple[str, str]]:
    """(key, text) of every expression in a request body, and of each of its attribute names (keys and values)."""
    found = []
    if isinstance(request, dict):
        for key, value in request.items():
            if key.endswith("Expression") and isinstance(value, str):
                found.append((key, value))
            elif key == "ExpressionAttributeNames":
                found += [(key, text) for pair in value.items() for text in pair]
            else:
                found += expressions(value)
    elif isinstance(request, list):
        for value in request:
            found += expressions(value)
    return found


def test_ids_payloads_and_time_zones_reach_dynamodb_only_as_values(aws, dynamodb_requests):
    every_path(aws)
    operations = {operation for operation, _ in dynamodb_requests}
    assert {"PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "BatchWriteItem"} <= operations
    kinds = {key for _, request in dynamodb_requests for key, _ in expressions(request)}
    assert kinds == {*EXPRESSION_TEXTS, "ExpressionAttributeNames"}  # each kind of expression was sent
    hostile = [*IDS.values(), *PAYLOAD_STRINGS, *ZONES]
    leaks = [(operation, value, text) for operation, request in dynamodb_requests for _, text in expressions(request)
             for value in hostile if value in text or json.dumps(value)[1:-1] in text]
    assert leaks == []
    # ...while each of them did reach DynamoDB, as a value
    sent = json.dumps([request for _, request in dynamodb_requests], ensure_ascii=False)
    assert [value for value in [*IDS.values(), SENTINEL, *ZONES] if value not in sent] == []


def test_the_check_sees_a_value_written_into_an_expression():
    request = {"TableName": "t", "Key": {"pk": {"S": "S#x"}},
               "UpdateExpression": f"SET note = '{IDS['short']}'", "ExpressionAttributeNames": {"#n": ZONES[0]},
               "RequestItems": {"t": {"Keys": [], "ProjectionExpression": f"pk, {IDS['long']}"}}}
    assert [text for _, text in expressions(request)] == [f"SET note = '{IDS['short']}'", "#n", ZONES[0],
                                                          f"pk, {IDS['long']}"]


# --- no payload in the logs ---------------------------------------------------------------------------
def test_no_payload_is_logged_or_emitted_at_info_on_any_path(aws, listing, caplog, capsys, monkeypatch):
    caplog.set_level(logging.INFO)  # every logger, the runtime's included, at the engine's and Lambda's INFO
    caplog.set_level(logging.INFO, logger="scheduler_runtime")
    metric_lines: list[str] = []  # what Lambda reads from stdout (a local engine of another test may have moved it)
    monkeypatch.setattr(observability, "_metric_sink", metric_lines.append)
    every_path(aws)
    out, err = capsys.readouterr()
    events = {getattr(record, "event", None) for record in caplog.records}
    # the INFO trail and the WARNING/ERROR paths all ran (the capture is live)...
    assert {"created", "cancelled", "claimed", "enqueued", "delivered", "periodic_put", "periodic_deleted",
            "written_back", "retry_scheduled", "dead_lettered"} <= events, events
    assert {logging.INFO, logging.WARNING, logging.ERROR} <= {record.levelno for record in caplog.records}
    assert metric_lines and all('"CloudWatchMetrics"' in line for line in metric_lines)
    # ...and no payload is in any of them: messages, structured fields, tracebacks, metrics, stdout, stderr
    written = [caplog.text, out, err, *metric_lines, *(repr(vars(record)) for record in caplog.records)]
    assert [text for text in written if SENTINEL in text] == []
