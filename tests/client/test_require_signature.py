"""``--require-signature``: the local engine's HTTP API refuses a request without well-formed SigV4
headers with 403 and a message saying what is wrong, as API Gateway does with IAM auth."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient

from .conftest import fresh_id

pytestmark = pytest.mark.e2e
BODY = json.dumps({"delaySeconds": 60, "payload": 1}).encode()


def signed_headers(url: str, service: str = "execute-api") -> dict:
    """The headers botocore signs a ``POST`` of ``BODY`` to ``url`` with, for ``service``."""
    request = AWSRequest(method="POST", url=url, data=BODY, headers={"Content-Type": "application/json"})
    SigV4Auth(botocore.session.get_session().get_credentials(), service, "us-east-1").add_auth(request)
    return dict(request.headers.items())


def post(url: str, headers: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=BODY, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


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
