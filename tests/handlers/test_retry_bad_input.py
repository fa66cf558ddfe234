"""``retry`` on the api handler: every bad value is a 400 naming the field (with the batch item's index),
``retry`` is part of the request hash (a replay with another retry is a 409), and GET shows it.
The conftest's deployment has ``MAX_RECEIVE_COUNT`` 3: the most ``retry.maxAttempts`` may be."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")

BAD_RETRIES = [
    (5, "retry", "must be an object"),
    ([2], "retry", "must be an object"),
    (None, "retry", "must be an object"),
    ({}, "retry", "must be an object"),
    ({"maxAttempts": 2, "backoff": 3}, "retry.backoff", "unknown field 'retry.backoff'"),
    ({"maxAttempts": 0}, "retry.maxAttempts", "from 1 to 3 (this deployment's max_receive_count)"),
    ({"maxAttempts": 4}, "retry.maxAttempts", "from 1 to 3 (this deployment's max_receive_count)"),
    ({"maxAttempts": 2.5}, "retry.maxAttempts", "whole number"),
    ({"maxAttempts": "2"}, "retry.maxAttempts", "whole number"),
    ({"maxAttempts": True}, "retry.maxAttempts", "whole number"),
    ({"maxAttempts": None}, "retry.maxAttempts", "whole number"),
    ({"maxAgeSeconds": 59}, "retry.maxAgeSeconds", "from 60 to 86400"),
    ({"maxAgeSeconds": 86401}, "retry.maxAgeSeconds", "from 60 to 86400"),
    ({"maxAgeSeconds": 600.5}, "retry.maxAgeSeconds", "whole number"),
    ('{"maxAgeSeconds": 1e400}', "retry.maxAgeSeconds", "from 60 to 86400"),  # JSON text: Python cannot write it
]


def later() -> float:
    return round(now_s() + 3600, 3)


@pytest.mark.parametrize(("retry", "field", "says"), BAD_RETRIES)
def test_a_bad_retry_on_a_create_is_a_400_naming_the_field(aws, retry, field, says):
    raw = '{"id": "r", "dueAt": %s, "payload": 1, "retry": %s}' % (later(), _json(retry))
    status, answer = call_api("POST", "/schedules", raw)
    assert (status, answer["field"]) == (400, field) and says in answer["message"], answer


@pytest.mark.parametrize(("retry", "field", "says"), BAD_RETRIES[:6])
def test_a_bad_retry_on_a_batch_item_names_the_item(aws, retry, field, says):
    good = {"id": "ok", "dueAt": later(), "payload": 1}
    status, answer = call_api("POST", "/schedule-batches", {"schedules": [good, {**good, "id": "bad", "retry": retry}]})
    assert status == 200 and answer["results"][0]["status"] == 201
    bad = answer["results"][1]
    assert (bad["status"], bad["body"]["field"]) == (400, f"schedules[1].{field}") and says in bad["body"]["message"]


@pytest.mark.parametrize(("retry", "field", "says"), BAD_RETRIES[:7])
def test_a_bad_retry_on_a_periodic_timer_is_a_400_naming_the_field(aws, retry, field, says):
    status, answer = call_api("PUT", "/periodic/p", {"every": 60, "payload": 1, "retry": retry})
    assert (status, answer["field"]) == (400, field) and says in answer["message"], answer


def test_retry_is_part_of_the_request_hash_and_get_shows_it(aws):
    body = {"id": "hashed", "dueAt": later(), "payload": 1, "retry": {"maxAttempts": 2, "maxAgeSeconds": 600}}
    assert call_api("POST", "/schedules", body)[0] == 201
    # The same policy spelled 2.0 is the same request: a replay.
    assert call_api("POST", "/schedules", {**body, "retry": {"maxAgeSeconds": 600, "maxAttempts": 2.0}})[0] == 200
    assert call_api("POST", "/schedules", {**body, "retry": {"maxAttempts": 3, "maxAgeSeconds": 600}})[0] == 409
    assert call_api("POST", "/schedules", {key: value for key, value in body.items() if key != "retry"})[0] == 409
    assert call_api("GET", "/schedules/hashed")[1]["retry"] == {"maxAttempts": 2, "maxAgeSeconds": 600}


def test_a_periodic_timers_retry_is_part_of_its_body_and_shown(aws):
    body = {"every": 60, "payload": 1, "retry": {"maxAgeSeconds": 120}}
    assert call_api("PUT", "/periodic/beat", body)[0] == 201
    assert call_api("PUT", "/periodic/beat", body)[0] == 200
    status, read = call_api("GET", "/periodic/beat")
    assert status == 200 and read["retry"] == {"maxAgeSeconds": 120}
    # Another retry replaces the definition (a PUT is a replace, never a 409).
    assert call_api("PUT", "/periodic/beat", {**body, "retry": {"maxAttempts": 1}})[0] == 200
    assert call_api("GET", "/periodic/beat")[1]["retry"] == {"maxAttempts": 1}
    assert "retry" not in call_api("PUT", "/periodic/beat", {"every": 60, "payload": 1})[1]


def _json(value: object) -> str:
    """``value`` as JSON; a string is JSON text already."""
    return value if isinstance(value, str) else json.dumps(value)
