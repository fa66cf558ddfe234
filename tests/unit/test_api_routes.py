"""The api function's one route table: every route of ``contract.json`` answered by the function registered
for its operation, no function without a route, and the periodic routes loaded by the first periodic call."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from scheduler_runtime.core import contract
from scheduler_runtime.core.contract import Route
from scheduler_runtime.core.validation import ApiError
from scheduler_runtime.handlers import api
from scheduler_runtime.handlers._api_events import parse_event
from scheduler_runtime.handlers._router import Operations, Router

REPO = Path(__file__).resolve().parents[2]
THINGS = (Route("GET", "/things/{id}", "getThing"), Route("DELETE", "/things/{id}", "deleteThing"),
          Route("GET", "/things/summary", "summarizeThings"), Route("POST", "/things", "createThing"))


def request(method: str, path: str, **event: Any):
    return parse_event({"method": method, "path": path, **event})


def things_router() -> Router:
    """A route table of its own: each function answers with its operation and path parameters."""
    operations = Operations(THINGS)
    for route in THINGS:
        operations.answers(route.operation)(lambda call: (200, {"operation": call.route.operation, **call.params}))
    router = Router(THINGS)
    router.include(operations)
    router.check()
    return router


def refusal(router: Router, method: str, path: str, **event: Any) -> tuple[int, str, str | None]:
    with pytest.raises(ApiError) as refused:
        router.answer(None, request(method, path, **event))
    return refused.value.status, refused.value.message, refused.value.field


def test_every_contract_route_has_a_function_and_every_function_a_contract_route():
    api.ROUTER.load_lazily_included()
    assert api.ROUTER.operations == {route.operation for route in contract.ROUTES}


def test_a_route_is_one_table_entry_plus_the_function_that_answers_it():
    router = things_router()
    assert router.answer(None, request("GET", "/things/a-1")) == (200, {"operation": "getThing", "id": "a-1"})
    assert router.answer(None, request("DELETE", "//things/a-1/")) == (200, {"operation": "deleteThing", "id": "a-1"})
    assert router.answer(None, request("POST", "/things")) == (200, {"operation": "createThing"})


def test_a_literal_segment_wins_over_a_path_parameter():
    assert things_router().answer(None, request("GET", "/things/summary")) == (200, {"operation": "summarizeThings"})


def test_unknown_paths_wrong_methods_and_bad_ids_are_refused_as_before():
    router = things_router()
    assert refusal(router, "GET", "/elsewhere") == (404, "no route for GET /elsewhere", None)
    assert refusal(router, "GET", "/things/a/b") == (404, "no route for GET /things/a/b", None)
    assert refusal(router, "PUT", "/things/x") == (405, "method PUT is not allowed on /things/{id}; use GET or DELETE",
                                                    None)
    assert refusal(router, "GET", "/things") == (405, "method GET is not allowed on /things; use POST", None)
    status, _, field = refusal(router, "PUT", "/things/" + "x" * 129)  # the id is checked before the method
    assert (status, field) == (400, "id")


def test_the_id_api_gateway_decoded_is_the_one_answered():
    router = things_router()
    event = {"httpMethod": "GET", "path": "/things/a%3A1", "pathParameters": {"id": "a:1"}}
    assert router.answer(None, parse_event(event)) == (200, {"operation": "getThing", "id": "a:1"})


def test_a_function_for_no_route_or_a_route_with_no_function_is_refused():
    with pytest.raises(ValueError, match="'getWidget'"):
        Operations().answers("getWidget")
    operations = Operations(THINGS)
    operations.answers("getThing")(lambda call: (200, {}))
    with pytest.raises(ValueError, match="'getThing' is answered twice"):
        operations.answers("getThing")(lambda call: (200, {}))
    with pytest.raises(ValueError, match="no route has the operation 'getThing'"):
        Router(contract.ROUTES).include(operations)
    router = Router(THINGS)
    router.include(operations)
    with pytest.raises(RuntimeError, match=r"DELETE /things/\{id\} \(deleteThing\)"):
        router.check()


def test_a_path_parameter_with_no_validation_is_refused():
    with pytest.raises(ValueError, match="'slug'"):
        Router([Route("GET", "/things/{slug}", "getThing")])


def test_a_lazily_included_module_must_answer_exactly_its_routes(monkeypatch):
    module = types.ModuleType("lazy_things")
    module.OPERATIONS = Operations(THINGS)
    module.OPERATIONS.answers("getThing")(lambda call: (200, {}))
    monkeypatch.setitem(sys.modules, "lazy_things", module)
    router = Router(THINGS)
    router.include_lazily("lazy_things", under="/things")
    router.check()  # answered lazily: nothing is imported yet
    with pytest.raises(RuntimeError, match="lazy_things answers"):
        router.answer(None, request("GET", "/things/a"))


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_the_periodic_routes_are_imported_by_the_first_periodic_call_only():
    """A deployment that only schedules one-shots never pays for the periodic routes' imports."""
    probe = """
import sys
from scheduler_runtime.handlers import api
from scheduler_runtime.handlers._api_events import parse_event
class _NoAws:  # a context whose first use stops the route's function: no AWS needed
    def __getattr__(self, name):
        raise LookupError(name)
loaded = lambda: "scheduler_runtime.handlers._periodic_routes" in sys.modules
seen = [loaded()]
for path in ("/schedules/a", "/periodic/a"):
    try:
        api.ROUTER.answer(_NoAws(), parse_event({"method": "GET", "path": path}))
    except LookupError:
        seen.append(loaded())
print(seen)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO,
                         env={"PYTHONPATH": str(REPO / "lambda"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[False, False, True]"
