"""``grant_schedule`` and ``grant_invoke`` on each kind of API: exactly the routes, and the api function."""

from __future__ import annotations

import json
import re

from construct_helpers import only
from construct_stacks import ROUTES, client_statements, invoke_statement, logical_id


def test_rest_grant_schedule_is_execute_api_on_every_route_and_the_invoke(stacks):
    b = stacks["rest"]
    invoke, statement = client_statements(b)
    assert invoke == invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    rendered = [json.dumps(r) for r in statement["Resource"]]
    assert len(rendered) == len(ROUTES)
    for suffix in ('/POST/schedules"', '/GET/schedules/*"', '/DELETE/schedules/*"', '/PATCH/schedules/*"',
                   '/POST/schedule-batches"',
                   '/GET/schedules"', '/PUT/periodic/*"', '/GET/periodic/*"', '/DELETE/periodic/*"', '/GET/periodic"',
                   '/DELETE/groups/*"'):
        assert sum(r.endswith(suffix + "]]}") for r in rendered) == 1, (suffix, rendered)
    stage_id = only(b.json, "AWS::ApiGateway::Stage")[0]
    api_id = logical_id(b, b.scheduler.api)
    assert all(f'{{"Ref": "{api_id}"}}, "/", {{"Ref": "{stage_id}"}}' in r for r in rendered), rendered


def test_http_grant_schedule_is_execute_api_on_every_route_and_the_invoke(stacks):
    b = stacks["defaults"]
    invoke, statement = client_statements(b)
    assert invoke == invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    api_id = only(b.json, "AWS::ApiGatewayV2::Api")[0]
    assert sorted(map(json.dumps, statement["Resource"])) == sorted(
        json.dumps({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":execute-api:eu-west-1:123456789012:",
                                      {"Ref": api_id}, f"/$default/{verb}{re.sub('{[a-z]+}', '*', path)}"]]})
        for verb, path in ROUTES)


def test_grant_invoke_is_exactly_the_api_function(stacks):
    for name in ("defaults", "rest", "no_api"):
        b = stacks[name]
        assert client_statements(b, "Invoker") == [invoke_statement(b)], name
