"""Bad input through the local engine's HTTP API: a clear 4xx naming the field, never a 5xx."""

from __future__ import annotations

import json
import time

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

pytestmark = pytest.mark.e2e
MAX_PAYLOAD = 256 * 1024


@pytest.fixture(scope="module")
def api():
    with Engine(EngineOptions(target=Recorder(), shard_count=2)) as engine:
        yield raw_client(engine.api_url)


def later() -> float:
    return round(time.time() + 3600, 3)


@pytest.mark.parametrize(
    "raw, field",
    [
        (b"{", "body"),
        (b"", "body"),
        (b"[]", "body"),
        (b'"just a string"', "body"),
        (b"\xff\xfe\x00", "body"),
        (b'{"payload": 1}', "dueAt"),
        (b'{"dueAt": 1, "delaySeconds": 1, "payload": 1}', "dueAt"),
        (b'{"dueAt": "2026-11-21T10:00:00", "payload": 1}', "dueAt"),
        (b'{"dueAt": "2026-11-21T10:00:00.250", "payload": 1}', "dueAt"),
        (b'{"dueAt": "next tuesday", "payload": 1}', "dueAt"),
        (b'{"dueAt": [1], "payload": 1}', "dueAt"),
        (b'{"dueAt": true, "payload": 1}', "dueAt"),
        (b'{"dueAt": 1e300, "payload": 1}', "dueAt"),
        (b'{"delaySeconds": "5", "payload": 1}', "delaySeconds"),
        (b'{"delaySeconds": -0.5, "payload": 1}', "delaySeconds"),
        (b'{"delaySeconds": null, "payload": 1}', "delaySeconds"),
        (b'{"delaySeconds": 5}', "payload"),
        (b'{"delaySeconds": 5, "payload": 1, "target": "nowhere"}', "target"),
        (b'{"delaySeconds": 5, "payload": 1, "target": {"a": 1}}', "target"),
        (b'{"delaySeconds": 5, "payload": 1, "extra": true}', "extra"),
        (b'{"id": 12, "delaySeconds": 5, "payload": 1}', "id"),
        (b'{"id": "has space", "delaySeconds": 5, "payload": 1}', "id"),
        (b'{"id": "", "delaySeconds": 5, "payload": 1}', "id"),
        (('{"id": "' + "x" * 129 + '", "delaySeconds": 5, "payload": 1}').encode(), "id"),
        (b'{"delaySeconds": 5, "payload": NaN}', "body"),
        (b'{"delaySeconds": 5, "payload": "\\ud800"}', "payload"),
    ],
)
def test_invalid_create_is_400_naming_the_field(api, raw, field):
    status, body = api.raw("createSchedule", raw)
    assert status == 400, body
    assert body["field"] == field and isinstance(body["message"], str) and body["message"]


def test_an_id_of_128_characters_is_accepted(api):
    assert api.raw("createSchedule", {"id": "x" * 128, "dueAt": later(), "payload": 1})[0] == 201


def test_payload_one_byte_over_256_kib_is_413(api):
    filler = MAX_PAYLOAD - len(json.dumps(""))
    status, body = api.raw("createSchedule", {"id": "big-ok", "dueAt": later(), "payload": "x" * filler})
    assert status == 201
    status, body = api.raw("createSchedule", {"id": "big-over", "dueAt": later(), "payload": "x" * (filler + 1)})
    assert status == 413 and body["field"] == "payload" and str(MAX_PAYLOAD) in body["message"]
    assert api.raw("getSchedule", id="big-over")[0] == 404  # nothing was stored


def test_the_stored_big_payload_reads_back_whole(api):
    filler = MAX_PAYLOAD - len(json.dumps(""))
    assert api.raw("createSchedule", {"id": "big-read", "dueAt": later(), "payload": "x" * filler})[0] == 201
    status, body = api.raw("getSchedule", id="big-read")
    assert status == 200 and len(body["payload"]) == MAX_PAYLOAD - 2


def test_conflicting_replay_is_409(api):
    assert api.raw("createSchedule", {"id": "dup", "dueAt": later(), "payload": {"v": 1}})[0] == 201
    status, body = api.raw("createSchedule", {"id": "dup", "dueAt": later() + 60, "payload": {"v": 1}})
    assert status == 409 and body["field"] == "id"


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("GET", "/schedules/unknown-id", 404),
        ("DELETE", "/schedules/unknown-id", 404),
        ("GET", "/schedules/" + "x" * 129, 400),
        ("GET", "/schedules/bad%20id", 400),
        ("GET", "/schedules", 404),  # the listing route, off unless the engine runs with --listing
        ("PUT", "/schedules/x", 405),
        ("POST", "/periodic/x", 405),
        ("GET", "/periodic/unknown-id", 404),
        ("GET", "/periodic?limit=0", 400),
        ("GET", "/periodic/a/b", 404),
        ("PATCH", "/schedules", 405),
        ("GET", "/", 404),
        ("POST", "/schedules/x/y", 404),
    ],
)
def test_routes(api, method, path, status):
    code, body = api.raw_request(method, path, b"{}" if method in ("PUT", "PATCH", "POST") else None)
    assert code == status and "message" in body and "field" in body


def test_no_input_gets_a_5xx(api):
    """A sweep of hostile bodies: every answer is below 500."""
    values = [None, True, 0, -1, 1.5, 1e308, "", "x" * 300, [], {}, {"a": [{}]}, "2026-11-21T10:00:00+25:00",
              "9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", 253402300800]
    fields = ["id", "dueAt", "delaySeconds", "payload", "target"]
    codes = set()
    for n, value in enumerate(values):
        for field in fields:
            body = {"delaySeconds": 60, "payload": {"n": n}, field: value}
            codes.add(api.raw("createSchedule", body)[0])
        codes.add(api.raw("createSchedule", {"dueAt": value, "payload": {"n": n}}).status)  # alone, so it is parsed
        # (1e308 once made a 500)
    assert codes and max(codes) < 500
    assert 400 in codes and 201 in codes


def test_no_periodic_definition_gets_a_5xx(api):
    """The same sweep over PUT /periodic/{id}'s fields, for both kinds of definition."""
    values = [None, True, 0, -1, 1.5, 1e308, "", "x" * 300, [], {}, "* * * * * *", "0 9 ? * MON#6 *", "L L ? * ? *",
              "Europe/Nowhere", "../../etc/passwd", "2026-11-21T10:00:00+25:00", 253402300800]
    codes = set()
    for n, value in enumerate(values):
        for base in ({"every": 3600, "payload": n}, {"cron": "0 9 ? * MON-FRI *", "payload": n}):
            for field in ("every", "cron", "timeZone", "startAt", "endAt", "payload", "target"):
                body = {**base, field: value}
                codes.add(api.raw("putPeriodic", body, id=f"sweep-{n}-{field}").status)
    assert codes and max(codes) < 500
    assert 400 in codes and (201 in codes or 200 in codes)


def test_batch_of_10_and_a_bad_envelope(api):
    status, body = api.raw("createScheduleBatch", {"schedules": [{"delaySeconds": 3600, "payload": {"n": n}}
                                                                 for n in range(10)]})
    assert status == 200 and [r["status"] for r in body["results"]] == [201] * 10
    status, body = api.raw("createScheduleBatch", {"schedules": [{"delaySeconds": 3600, "payload": 1}] * 11})
    assert status == 400 and body["field"] == "schedules"
    status, body = api.raw("createScheduleBatch", b'{"schedules": [{"dueAt": "noon", "payload": 1}]}')
    assert status == 200 and body["results"][0]["body"]["field"] == "schedules[0].dueAt"
