"""Schemathesis fuzzes every route of the local engine's HTTP API against the OpenAPI document.

One engine (listing on) serves the whole module. Each operation gets a bounded, deterministic run
(a fixed seed, ``MAX_EXAMPLES`` generated cases, plus the document's examples and Schemathesis's
coverage cases): valid and invalid requests alike (``mode = all``), and every response must be no
server error, with a documented status, content type and body, 4xx bodies included. Plain tests
check that the engine serves that same document, and that it names exactly the routes the
construct sends to the api function, which answers each of them and no other method on their paths.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

schemathesis = pytest.importorskip("schemathesis")  # Python 3.11+ (the test dependency is marked so)

from cdk_delayed_scheduler._contract import contract  # noqa: E402 - after the skip
from cdk_delayed_scheduler.local import Engine, EngineOptions  # noqa: E402
from cdk_delayed_scheduler.local.api_calls import raw_client  # noqa: E402
from cdk_delayed_scheduler.local.deliveries import Recorder  # noqa: E402
from scheduler_runtime.core.openapi import document  # noqa: E402
from scheduler_runtime.core.validation import DOT_SEGMENTS  # noqa: E402

pytestmark = pytest.mark.e2e
MAX_EXAMPLES = 25
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance")
CONFIG = schemathesis.Config.from_dict({
    "seed": 20261122,
    "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "deterministic": True},
    "phases": {"stateful": {"enabled": False}},
    "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
})
SCHEMA = schemathesis.openapi.from_dict(document(), config=CONFIG)


@SCHEMA.hook
def filter_path_parameters(context, path_parameters) -> bool:
    """A negative case may name the id ``.`` or ``..``, which no HTTP client sends: it removes them from the
    URL as dot segments (``PUT /periodic/..`` goes out as ``PUT /``), so the request would test another route."""
    return not path_parameters or path_parameters.get("id") not in DOT_SEGMENTS
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def construct_routes() -> set[tuple[str, str]]:
    """The routes the construct declares (``api.ROUTES`` is the contract's ``ROUTES``), what API Gateway
    sends to the api function; read from the contract (importing the construct would load
    aws-cdk-lib, seconds of this module's time)."""
    return {(route.method, route.path) for route in contract.ROUTES}


@pytest.fixture(scope="module")
def engine():
    with Engine(EngineOptions(target=Recorder(), shard_count=2, listing=True, delay_window=90)) as running:
        yield running


@SCHEMA.parametrize()
def test_every_operation_conforms(case, engine):
    case.call_and_validate(base_url=engine.api_url)


def test_the_engine_serves_the_document(engine):
    with urllib.request.urlopen(f"{engine.api_url}/openapi.json", timeout=5) as answer:
        assert (answer.status, answer.headers["Content-Type"]) == (200, "application/json")
        served = json.loads(answer.read())
    assert served == document(server_url=engine.api_url)
    loaded = schemathesis.openapi.from_dict(served)  # refuses a document that is not valid OpenAPI
    operations = {(result.ok().method.upper(), result.ok().path) for result in loaded.get_all_operations()}
    assert operations == construct_routes()


def test_the_api_function_answers_exactly_the_documented_routes(engine):
    api = raw_client(engine.api_url)
    routes = construct_routes()
    for path in {path for _, path in routes}:
        for method in METHODS:
            status, body = api.raw_request(method, re.sub(r"{\w+}", "probe", path),
                                           b"{}" if method in ("POST", "PUT") else None)
            assert (status == 405) == ((method, path) not in routes), (method, path, status, body)
            assert "no route" not in str(body.get("message")), (method, path, body)


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "QUERY", "HEAD"])
def test_any_other_method_is_a_405_from_the_api_function(engine, method):
    """Found by the fuzzing: the engine answered these with http.server's 501 HTML page."""
    request = urllib.request.Request(f"{engine.api_url}/schedules", method=method)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert (refused.value.code, refused.value.headers["Content-Type"]) == (405, "application/json")
    body = refused.value.read()
    assert (body == b"") if method == "HEAD" else json.loads(body)["message"].startswith(f"method {method} ")


@pytest.mark.parametrize("field, value", [("limit", "\u00b2"), ("dueAfter", "\u00b2"), ("dueBefore", "1\u00b2.5"),
                                          ("dueAfter", "\u0663")])  # superscript two, Arabic-Indic three
def test_a_listing_parameter_in_other_digits_is_400(engine, field, value):
    status, body = raw_client(engine.api_url).raw("listSchedules", query={field: value})
    assert (status, body["field"]) == (400, field), body
