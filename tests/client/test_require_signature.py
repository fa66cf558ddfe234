"""``--require-signature``: the local engine's HTTP API refuses a request without well-formed SigV4
headers with 403 and a message saying what is wrong, as API Gateway does with IAM auth: on every route
(one-shots, batches, the listing, periodic timers), before the request reaches the api function.

(API Gateway's own 403 cannot be shown on moto: see test_security_gates.py. The engine's Lambda
endpoint, the client's invoke transport, checks no signature.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta

import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient

from .conftest import fresh_id

pytestmark = pytest.mark.e2e
BODY = json.dumps({"delaySeconds": 60, "payload": 1}).encode()


def signed_headers(url: str, service: str = "execute-api", method: str = "POST", body: bytes | None = BODY) -> dict:
    """The headers botocore signs a ``method`` of ``body`` to ``url`` with, for ``service``."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(botocore.session.get_session().get_credentials(), service, "us-east-1").add_auth(request)
    return dict(request.headers.items())


def send(method: str, url: str, headers: dict, body: bytes | None = BODY) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def post(url: str, headers: dict) -> tuple[int, dict]:
    return send("POST", url, headers)


def test_an_unsigned_request_is_refused_and_creates_nothing(local):
    schedule_id = fresh_id("unsigned")
    url = f"{local.engine.api_url}/schedules"
    body = json.dumps({"id": schedule_id, "delaySeconds": 60, "payload": 1}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 403
    assert json.loads(raised.value.read())["message"].startswith("Missing Authentication Token")
    with pytest.raises(NotFoundError):
        SchedulerClient(local.engine.api_url).get(schedule_id)


@pytest.mark.parametrize("spoil, words", [
    (lambda h: {**h, "Authorization": h["Authorization"].replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1")}, "must start with"),
    (lambda h: {k: v for k, v in h.items() if k != "X-Amz-Date"}, "X-Amz-Date"),
    (lambda h: {**h, "Authorization": h["Authorization"].replace("SignedHeaders=", "SignedHeaders=x-a;")
                .replace(";host;", ";").replace("=host;", "=")}, "must include host"),
    (lambda h: {**h, "Authorization": h["Authorization"][:-1]}, "64 lower-case hex"),
    (lambda h: {**h, "Authorization": h["Authorization"].split(", Signature=")[0]}, "lacks Signature"),
], ids=["algorithm", "no-date", "host-unsigned", "short-signature", "no-signature"])
def test_a_malformed_signature_is_refused_saying_what_is_wrong(local, spoil, words):
    url = f"{local.engine.api_url}/schedules"
    status, body = post(url, spoil(signed_headers(url)))
    assert status == 403 and words in body["message"]


def test_a_request_signed_for_another_service_is_refused(local):
    url = f"{local.engine.api_url}/schedules"
    status, body = post(url, signed_headers(url, service="lambda"))
    assert status == 403 and "'lambda', not execute-api" in body["message"]


def test_a_well_formed_signature_passes(local):
    url = f"{local.engine.api_url}/schedules"
    status, body = post(url, signed_headers(url))
    assert status == 201 and body["status"] == "SCHEDULED"


#: Every route, as (method, path, body, the status of the signed request); ``{new}`` is an id nothing
#: has used, ``{schedule}`` and ``{periodic}`` a scheduled one-shot and a periodic timer made for the test.
ROUTES = [
    ("POST", "/schedules", {"id": "{new}", "delaySeconds": 600, "payload": 1}, 201),
    ("GET", "/schedules/{schedule}", None, 200),
    ("DELETE", "/schedules/{schedule}", None, 200),
    ("POST", "/schedule-batches", {"schedules": [{"id": "{new}", "delaySeconds": 600, "payload": 1}]}, 200),
    ("GET", "/schedules?status=SCHEDULED&limit=1", None, 200),
    ("PUT", "/periodic/{new}", {"every": 600, "payload": 1}, 201),
    ("GET", "/periodic/{periodic}", None, 200),
    ("DELETE", "/periodic/{periodic}", None, 200),
    ("GET", "/periodic?limit=1", None, 200),
]


@pytest.mark.parametrize("method, path, body, signed_status", ROUTES, ids=[f"{m} {p}" for m, p, _, _ in ROUTES])
def test_every_route_refuses_an_unsigned_request_changing_nothing_and_answers_the_signed_one(
        local, method, path, body, signed_status):
    client = SchedulerClient(local.engine.api_url)  # signed: the typed client's HTTP transport
    ids = {"new": fresh_id("new"), "schedule": fresh_id("once"), "periodic": fresh_id("every")}
    client.schedule(timedelta(minutes=10), 1, id=ids["schedule"])
    client.put_periodic(ids["periodic"], 1, every=600)
    url = local.engine.api_url.rstrip("/") + path.format(**ids)
    data = json.dumps(body).replace("{new}", ids["new"]).encode() if body is not None else None
    unsigned = {"Content-Type": "application/json"} if data is not None else {}

    status, answer = send(method, url, unsigned, data)
    assert status == 403 and answer["message"].startswith("Missing Authentication Token"), answer
    assert (client.get(ids["schedule"]).status, client.get_periodic(ids["periodic"]).status) == ("SCHEDULED", "ACTIVE")
    for read in (client.get, client.get_periodic):
        with pytest.raises(NotFoundError):
            read(ids["new"])

    status, answer = send(method, url, signed_headers(url, method=method, body=data), data)
    assert status == signed_status, answer
