import json

import pytest

from scheduler_runtime.core.validation import MAX_PAYLOAD_BYTES, ApiError, parse_json_body, validate_create

NOW = 1_795_255_200_000
TARGETS = ["default", "audit"]


def create(body):
    return validate_create(body, NOW, TARGETS, "default")


def error_of(body):
    with pytest.raises(ApiError) as caught:
        create(body)
    return caught.value


def test_minimal_body_with_due_at():
    request = create({"dueAt": "2026-11-21T10:00:00.250Z", "payload": {"a": 1}})
    assert request.due_ms == NOW + 250
    assert request.id_generated and len(request.schedule_id) == 36
    assert request.target == "default"
    assert json.loads(request.payload_json) == {"a": 1}


def test_delay_seconds_is_relative_to_now():
    assert create({"delaySeconds": 0, "payload": None}).due_ms == NOW
    assert create({"delaySeconds": 1.25, "payload": None}).due_ms == NOW + 1250
    assert create({"delaySeconds": 86_400 * 365 * 5, "payload": None}).due_ms == NOW + 86_400_000 * 365 * 5


def test_past_due_at_is_accepted():
    assert create({"dueAt": 1, "payload": 1}).due_ms == 1000


@pytest.mark.parametrize("payload", [None, 0, "text", [1, 2], {"nested": {"deep": [True, None]}}])
def test_payload_may_be_any_json(payload):
    assert json.loads(create({"delaySeconds": 1, "payload": payload}).payload_json) == payload


def test_named_target():
    assert create({"delaySeconds": 1, "payload": 1, "target": "audit"}).target == "audit"


def test_same_body_same_hash_and_different_body_different_hash():
    body = {"id": "a", "dueAt": "2026-11-21T10:00:00Z", "payload": {"x": 1, "y": 2}}
    same = {"payload": {"y": 2, "x": 1}, "dueAt": 1_795_255_200, "id": "a"}  # same instant, other spelling
    assert create(body).request_hash == create(same).request_hash
    for changed in ({**body, "payload": {"x": 2}}, {**body, "dueAt": 1_795_255_201}, {**body, "target": "audit"}):
        assert create(changed).request_hash != create(body).request_hash


def test_delay_seconds_replay_keeps_its_hash_later():
    body = {"id": "a", "delaySeconds": 30, "payload": 1}
    assert validate_create(body, NOW, TARGETS, "default").request_hash == validate_create(
        body, NOW + 5_000, TARGETS, "default"
    ).request_hash


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"payload": 1}, "dueAt", "exactly one of dueAt or delaySeconds"),
        ({"dueAt": 1, "delaySeconds": 1, "payload": 1}, "dueAt", "exactly one"),
        ({"dueAt": "2026-11-21T10:00:00", "payload": 1}, "dueAt", "offset"),
        ({"dueAt": "soon", "payload": 1}, "dueAt", "RFC 3339"),
        ({"dueAt": True, "payload": 1}, "dueAt", "RFC 3339"),
        ({"dueAt": None, "payload": 1}, "dueAt", "RFC 3339"),
        ({"dueAt": -5, "payload": 1}, "dueAt", "between"),
        ({"dueAt": 1e15, "payload": 1}, "dueAt", "between"),
        ({"delaySeconds": -1, "payload": 1}, "delaySeconds", ">= 0"),
        ({"delaySeconds": "10", "payload": 1}, "delaySeconds", "number"),
        ({"delaySeconds": False, "payload": 1}, "delaySeconds", "number"),
        ({"delaySeconds": 1e20, "payload": 1}, "delaySeconds", "9999"),
        ({"delaySeconds": 1e308, "payload": 1}, "delaySeconds", "9999"),
        ({"delaySeconds": 1}, "payload", "payload is required"),
        ({"id": "", "delaySeconds": 1, "payload": 1}, "id", "1-128"),
        ({"id": "x" * 129, "delaySeconds": 1, "payload": 1}, "id", "1-128 characters long (got 129)"),
        ({"id": "a b", "delaySeconds": 1, "payload": 1}, "id", "may hold only A-Za-z0-9._:- (got ' ' at position 1)"),
        ({"id": 7, "delaySeconds": 1, "payload": 1}, "id", "string"),
        ({"delaySeconds": 1, "payload": 1, "target": "nope"}, "target", "audit, default"),
        ({"delaySeconds": 1, "payload": 1, "target": 3}, "target", "registered"),
        ({"delaySeconds": 1, "payload": 1, "when": 3}, "when", "unknown field"),
    ],
)
def test_each_rule_is_a_400_naming_the_field(body, field, words):
    err = error_of(body)
    assert (err.status, err.field) == (400, field)
    assert words in err.message


def test_payload_limit_is_256_kib_serialized():
    overhead = len(json.dumps(""))  # the quotes of a JSON string
    at_limit = {"delaySeconds": 1, "payload": "x" * (MAX_PAYLOAD_BYTES - overhead)}
    assert len(create(at_limit).payload_json.encode()) == MAX_PAYLOAD_BYTES
    err = error_of({"delaySeconds": 1, "payload": "x" * (MAX_PAYLOAD_BYTES - overhead + 1)})
    assert (err.status, err.field) == (413, "payload")
    assert str(MAX_PAYLOAD_BYTES + 1) in err.message


def test_payload_size_counts_utf8_bytes():
    err = error_of({"delaySeconds": 1, "payload": "é" * (MAX_PAYLOAD_BYTES // 2)})
    assert err.status == 413


def test_payload_with_lone_surrogate_is_400():
    body = parse_json_body('{"delaySeconds": 1, "payload": "\\ud800"}')
    assert error_of(body).field == "payload"


@pytest.mark.parametrize(
    "raw, words",
    [(None, "required"), ("", "required"), ("   ", "required"), ("{", "not valid JSON"), ("[1]", "JSON object"),
     ('"text"', "JSON object"), ("null", "JSON object"), ('{"a": NaN}', "not valid JSON"), ("[" * 100_000, "not valid JSON")],
)
def test_body_must_be_a_json_object(raw, words):
    with pytest.raises(ApiError) as caught:
        parse_json_body(raw)
    assert (caught.value.status, caught.value.field) == (400, "body")
    assert words in caught.value.message
