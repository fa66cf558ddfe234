"""The OpenAPI document: valid 3.1, committed up to date, served without a signature, and saying what
the validators do (the same strings pass its patterns and the validators, its examples are accepted).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cdk_delayed_scheduler.local.servers import ApiServer
from scheduler_runtime.aws import definitions
from scheduler_runtime.core import contract, listing, openapi, periodic, validation
from scheduler_runtime.core.openapi import document, document_json
from scheduler_runtime.core.timeparse import InvalidInstant, format_rfc3339_ms, parse_rfc3339

REPO = Path(__file__).resolve().parents[2]
DOC = document()
TARGETS, DEFAULT = ["default"], "default"


def _valid(schema: dict, value: object) -> bool:
    """Whether ``value`` meets ``schema`` (a piece of the document, its $refs resolved in it), read with the
    ECMA-262 regular expressions JSON Schema specifies, as Schemathesis does (Python's jsonschema package
    uses re.search, whose $ also matches before a trailing newline)."""
    jsonschema_rs = pytest.importorskip("jsonschema_rs")  # Python 3.11+, installed with schemathesis
    return jsonschema_rs.validator_for({**schema, "components": DOC["components"]}).is_valid(value)


def _component(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _operation(method: str, path: str) -> dict:
    return DOC["paths"][path][method]


def _parameter(method: str, path: str, name: str) -> dict:
    return next(p["schema"] for p in _operation(method, path)["parameters"] if p["name"] == name)


def _accepts(check, *args) -> bool:
    try:
        check(*args)
    except (validation.ApiError, InvalidInstant):
        return False
    return True


def test_document_is_valid_openapi_3_1():
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(DOC)
    validator.validate(document(server_url="http://127.0.0.1:8000"))
    assert DOC["openapi"].startswith("3.1")


def test_every_contract_route_is_documented_under_its_operation():
    documented = {(method.upper(), path, operation["operationId"])
                  for path, methods in DOC["paths"].items() for method, operation in methods.items()}
    assert documented == {(route.method, route.path, route.operation) for route in contract.ROUTES}
    assert set(openapi.operations()) == {route.operation for route in contract.ROUTES}


def test_a_contract_route_with_no_documented_operation_is_refused(monkeypatch):
    monkeypatch.setattr(openapi, "ROUTES", (*contract.ROUTES, contract.Route("POST", "/schedules/{id}/copies",
                                                                            "copySchedule")))
    with pytest.raises(ValueError, match=r"POST /schedules/\{id\}/copies \(copySchedule\)"):
        document()


def test_committed_copy_is_current():
    committed = (REPO / "docs" / "openapi.json").read_text(encoding="utf-8")
    assert committed == document_json(), "docs/openapi.json is stale: run .venv/bin/python scripts/openapi.py"
    assert json.loads(committed) == DOC


@pytest.mark.parametrize("value", ["a", "x" * 128, "order-42", "A.b_c:d-9", "...", ".a", "", "x" * 129, "has space",
                                   "abc\n", "\nabc", "é", "a/b", "a\x00b", ".", ".."])
def test_id_rules_are_the_validators(value):
    accepted = _accepts(validation.validate_new_id, value)
    assert _valid(DOC["components"]["schemas"]["CreateSchedule"]["properties"]["id"], value) == accepted
    for method, path in [("get", "/schedules/{id}"), ("delete", "/periodic/{id}"), ("put", "/periodic/{id}")]:
        assert _valid(_parameter(method, path, "id"), value) == accepted


@pytest.mark.parametrize("value", [
    "2026-11-21T10:00:00Z", "2026-11-21t10:00:00.123456789+02:00", "2026-11-21 10:00:00z", "2026-11-21T10:00:00-05:30",
    "2026-11-21T10:00:00", "2026-11-21T10:00:00Z\n", "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00.1234567890Z",
    "\u0662\u0660\u0662\u0666-11-21T10:00:00Z", "2026-11-21T10:00:00.\u0663Z", "2026-11-21T10:00Z", "26-11-21T10:00:00Z",
])
def test_instant_pattern_is_the_parsers(value):
    """Strings whose date and time exist: the pattern alone decides, in the document as in the parser."""
    body_schema = DOC["components"]["schemas"]["CreateSchedule"]["properties"]["dueAt"]
    assert _valid(body_schema, value) == _accepts(parse_rfc3339, value)


@pytest.mark.parametrize("value", ["5", "5.", ".5", "1763719200.123", "2026-11-21T10:00:00Z",
                                   ".", "5.5.5", "-5", "+5", "1e3", "\u00b2", "\u0663", "5\n"])
def test_list_instant_parameter_is_the_parsers(value):
    accepted = _accepts(listing.parse_list_query, {"dueAfter": value}, "key")
    assert _valid(_parameter("get", "/schedules", "dueAfter"), value) == accepted


@pytest.mark.parametrize("value", ["1", "50", "100", "0", "101", "05", "-1", "+5", "5.0", "\u00b2", "\uff15", ""])
def test_limit_parameter_is_the_validators(value):
    """Query values arrive as text: the document's integer is the ASCII digits the validator reads."""
    as_sent = int(value) if value.isascii() and value.isdigit() else value
    accepted = _accepts(listing.parse_list_query, {"limit": value}, "key")
    assert _valid(_parameter("get", "/periodic", "limit"), as_sent) == accepted


def test_request_bodies_allow_the_validators_fields_and_examples_pass_both():
    schemas = DOC["components"]["schemas"]
    assert tuple(schemas["CreateSchedule"]["properties"]) == validation.ALLOWED_FIELDS
    assert tuple(schemas["PutPeriodic"]["properties"]) == periodic.ALLOWED_FIELDS
    for path, method, name, check in [
        ("/schedules", "post", "CreateSchedule", lambda body: validation.validate_create(body, 0, TARGETS, DEFAULT)),
        ("/periodic/{id}", "put", "PutPeriodic", lambda body: periodic.validate_periodic("p", body, TARGETS, DEFAULT)),
    ]:
        examples = _operation(method, path)["requestBody"]["content"]["application/json"]["examples"]
        assert examples
        for example in examples.values():
            assert _valid(_component(name), example["value"]) and _accepts(check, example["value"])
    for bad in [{"payload": 1}, {"delaySeconds": 1, "dueAt": 1, "payload": 1}, {"delaySeconds": -1, "payload": 1},
                {"delaySeconds": 1}, {"delaySeconds": 1, "payload": 1, "extra": 1}]:
        assert not _valid(_component("CreateSchedule"), bad)
        assert not _accepts(validation.validate_create, bad, 0, TARGETS, DEFAULT)
    for bad in [{"every": 5, "cron": "0 9 ? * MON-FRI *", "payload": 1}, {"every": 5, "timeZone": "UTC", "payload": 1},
                {"every": 0, "payload": 1}, {"payload": 1}]:
        assert not _valid(_component("PutPeriodic"), bad)
        assert not _accepts(periodic.validate_periodic, "p", bad, TARGETS, DEFAULT)


def test_answer_instants_match_the_formatter():
    instant = DOC["components"]["schemas"]["Schedule"]["properties"]["dueAt"]
    for epoch_ms in (0, 1, 1_763_719_200_123, 253_402_300_799_999):
        assert _valid(instant, format_rfc3339_ms(epoch_ms))


def test_definition_statuses_are_the_stores():
    """The document takes them from core.periodic; the definition store still spells its own."""
    assert (periodic.ACTIVE, periodic.ENDED, periodic.DELETED) == (definitions.ACTIVE, definitions.ENDED,
                                                                  definitions.DELETED)


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_the_api_function_never_imports_the_generator():
    """Its cold start does not grow: only the engine and the script load the document."""
    probe = "import sys, scheduler_runtime.handlers.api; print('scheduler_runtime.core.openapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(REPO / "lambda"), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "False"


def test_the_document_needs_no_signature_and_a_refusal_is_an_error_body():
    server = ApiServer(lambda event, context: {"statusCode": 200, "body": "{}"}, require_signature=True)
    server.start()
    try:
        with urllib.request.urlopen(f"{server.url}/openapi.json", timeout=5) as answer:
            assert json.loads(answer.read()) == document(server_url=server.url)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}/schedules", timeout=5)
        assert refused.value.code == 403
        body = json.loads(refused.value.read())
        assert _valid(_component("Error"), body) and _valid(_component("GatewayError"), body)
    finally:
        server.stop()
