"""The HTTPS target's signature: what the runtime sends (``core.signing.webhook_headers``) passes the
receiver's check (``cdk_delayed_scheduler.webhook.verify_signature``), and every way a request can be
forged, replayed or mangled fails it with a message saying which."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path

import pytest

from cdk_delayed_scheduler.webhook import SIGNATURE_HEADER, SignatureVerificationError, verify_signature
from scheduler_runtime.core.contract import WEBHOOK
from scheduler_runtime.core.signing import envelope_body, webhook_headers

NOW = 1_900_000_000
SECRET = "whsec-current"
ENVELOPE = {"id": "order-7", "dueAt": "2030-03-17T10:00:00.000Z", "firedAt": "2030-03-17T10:00:00.012Z",
            "attempt": 2, "dedupeKey": "order-7@1899999999000", "payload": {"total": "12.50", "name": "Zoë"},
            "target": "webhook"}


def signed(secret: str = SECRET, at: float = NOW, envelope: dict = ENVELOPE) -> tuple[bytes, dict[str, str]]:
    body = envelope_body(envelope)
    return body, webhook_headers(envelope, body, secret.encode(), at, WEBHOOK)


def test_a_signed_request_verifies_and_returns_its_envelope():
    body, headers = signed()
    envelope = verify_signature(body, headers, SECRET, now=NOW + 3)
    assert (envelope.id, envelope.attempt, envelope.dedupe_key, envelope.payload) == (
        "order-7", 2, "order-7@1899999999000", {"total": "12.50", "name": "Zoë"})
    assert envelope.raw == ENVELOPE


def test_the_headers_carry_the_signature_and_the_envelopes_id_dedupe_key_and_attempt():
    body, headers = signed()
    assert headers == {
        "Content-Type": "application/json",
        "Scheduler-Signature": f"t={NOW},v1=" + hmac.new(SECRET.encode(), f"{NOW}.".encode() + body,
                                                         hashlib.sha256).hexdigest(),
        "Scheduler-Schedule-Id": "order-7", "Scheduler-Dedupe-Key": "order-7@1899999999000", "Scheduler-Attempt": "2"}
    assert SIGNATURE_HEADER == WEBHOOK.signature_header == "Scheduler-Signature"


def test_the_body_is_compact_utf8_json_of_the_envelope():
    body = envelope_body(ENVELOPE)
    assert b" " not in body.replace(b"Zo\xc3\xab", b"") and "Zoë".encode() in body
    assert json.loads(body) == ENVELOPE


def test_the_body_may_be_given_as_text():
    body, headers = signed()
    assert verify_signature(body.decode("utf-8"), headers, SECRET, now=NOW).id == "order-7"


@pytest.mark.parametrize("case", [str.lower, str.upper, lambda name: name])
def test_header_names_are_matched_whatever_their_case(case):
    body, headers = signed()
    assert verify_signature(body, {case(name): value for name, value in headers.items()}, SECRET, now=NOW).attempt == 2


def test_a_tampered_body_fails():
    body, headers = signed()
    tampered = body.replace(b"12.50", b"99.50")
    with pytest.raises(SignatureVerificationError, match="no v1 signature in Scheduler-Signature matches the body"):
        verify_signature(tampered, headers, SECRET, now=NOW)


def test_a_body_parsed_and_serialized_again_fails():
    body, headers = signed()
    with pytest.raises(SignatureVerificationError, match="matches the body"):
        verify_signature(json.dumps(json.loads(body)), headers, SECRET, now=NOW)


def test_a_wrong_secret_fails():
    body, headers = signed()
    with pytest.raises(SignatureVerificationError, match="with the secret$"):
        verify_signature(body, headers, "whsec-other", now=NOW)


def test_a_timestamp_older_than_the_tolerance_fails():
    body, headers = signed()
    assert verify_signature(body, headers, SECRET, now=NOW + 300).id == "order-7"
    with pytest.raises(SignatureVerificationError, match="timestamp is 301 s old, more than the 300 s tolerance"):
        verify_signature(body, headers, SECRET, now=NOW + 301)
    with pytest.raises(SignatureVerificationError, match="61 s old, more than the 60 s tolerance"):
        verify_signature(body, headers, SECRET, now=NOW + 61, tolerance=60)


def test_a_timestamp_too_far_in_the_future_fails():
    body, headers = signed()
    with pytest.raises(SignatureVerificationError, match="timestamp is 301 s in the future"):
        verify_signature(body, headers, SECRET, now=NOW - 301)


def test_a_replayed_signature_with_a_new_timestamp_fails():
    body, headers = signed()
    forged = headers["Scheduler-Signature"].replace(f"t={NOW}", f"t={NOW + 100}")
    with pytest.raises(SignatureVerificationError, match="matches the body"):
        verify_signature(body, {**headers, "Scheduler-Signature": forged}, SECRET, now=NOW + 100)


def test_a_missing_signature_header_fails():
    body, headers = signed()
    del headers["Scheduler-Signature"]
    with pytest.raises(SignatureVerificationError, match="^the request has no Scheduler-Signature header$"):
        verify_signature(body, headers, SECRET, now=NOW)


@pytest.mark.parametrize(("value", "problem"), [
    ("", "is not name=value"),
    ("v1=abc", "no t=<unix seconds>"),
    (f"t={NOW}", "no v1=<signature>"),
    (f"t={NOW},v0=abc", "no v1=<signature>"),
    ("t=soon,v1=abc", "t must be unix seconds"),
    (f"t=-{NOW},v1=abc", "t must be unix seconds"),
    (f"t={NOW};v1=abc", "t must be unix seconds"),
])
def test_a_malformed_signature_header_fails(value, problem):
    body, headers = signed()
    with pytest.raises(SignatureVerificationError, match=f"^malformed Scheduler-Signature: .*{problem}"):
        verify_signature(body, {**headers, "Scheduler-Signature": value}, SECRET, now=NOW)


def test_during_a_rotation_either_secret_is_accepted():
    for secret in ("whsec-old", "whsec-new"):
        body, headers = signed(secret)
        assert verify_signature(body, headers, ["whsec-new", b"whsec-old"], now=NOW).id == "order-7"
    body, headers = signed("whsec-retired")
    with pytest.raises(SignatureVerificationError, match="with any of the 2 secrets$"):
        verify_signature(body, headers, ("whsec-new", "whsec-old"), now=NOW)


def test_a_header_with_several_signatures_passes_when_one_matches():
    body, headers = signed()
    value = headers["Scheduler-Signature"].replace(f"t={NOW},", f"t={NOW},v1={'0' * 64},")
    assert verify_signature(body, {**headers, "Scheduler-Signature": value}, SECRET, now=NOW).id == "order-7"


@pytest.mark.parametrize(("secret", "error", "message"), [
    ([], ValueError, "no secret given"), ("", ValueError, "must not be empty"),
    ([SECRET, 7], TypeError, "must be str or bytes, got int"),
])
def test_no_secret_an_empty_one_or_a_non_text_one_is_a_usage_error(secret, error, message):
    body, headers = signed()
    with pytest.raises(error, match=message) as raised:
        verify_signature(body, headers, secret, now=NOW)
    assert not isinstance(raised.value, SignatureVerificationError)


def test_a_correctly_signed_body_that_is_not_an_envelope_is_refused():
    body = envelope_body({"id": "x"})
    headers = webhook_headers({"id": "x", "dedupeKey": "k", "attempt": 1}, body, SECRET.encode(), NOW, WEBHOOK)
    with pytest.raises(SignatureVerificationError, match="the signed body is not an envelope: .* lacks dueAt"):
        verify_signature(body, headers, SECRET, now=NOW)


def test_importing_the_receivers_check_imports_nothing_beyond_the_standard_library():
    from tests.client.subprocess_python import HEAVY, imports_none_of

    done = imports_none_of("cdk_delayed_scheduler.webhook", (*HEAVY, "botocore", "scheduler_runtime"))
    assert done.returncode == 0, done.stderr


def documented_receiver(monkeypatch, settled: list) -> dict:
    """docs/consuming.md's HTTPS receiver, run as written, with ``settle_order`` and ``already_done`` of a test."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "consuming.md").read_text(encoding="utf-8")
    block = re.search(r"^## An HTTPS receiver\n.*?```python\n(.*?)```", page, re.S | re.M)
    assert block, "docs/consuming.md lost its HTTPS receiver"
    monkeypatch.setenv("SIGNING_SECRET", SECRET)
    namespace: dict = {"settle_order": settled.append, "already_done": lambda key: key in {"done@1"}}
    exec(compile(block.group(1), "consuming.md", "exec"), namespace)
    return namespace


def function_url_event(body: bytes, headers: dict[str, str], base64_encoded: bool = False) -> dict:
    text = base64.b64encode(body).decode() if base64_encoded else body.decode("utf-8")
    return {"headers": {name.lower(): value for name, value in headers.items()}, "body": text,
            "isBase64Encoded": base64_encoded}


def test_the_documented_receiver_settles_a_signed_delivery_and_refuses_a_forged_one(monkeypatch):
    settled: list = []
    receiver = documented_receiver(monkeypatch, settled)
    envelope = {**ENVELOPE, "payload": {"order": "o-1"}}
    body = envelope_body(envelope)
    headers = webhook_headers(envelope, body, SECRET.encode(), time.time(), WEBHOOK)
    for encoded in (False, True):
        assert receiver["handler"](function_url_event(body, headers, encoded), None) == {"statusCode": 204}
    forged = body.replace(b"o-1", b"o-2")
    assert receiver["handler"](function_url_event(forged, headers), None) == {"statusCode": 401}
    assert settled == ["o-1", "o-1"]


def test_the_documented_receiver_accepts_both_secrets_during_a_rotation(monkeypatch):
    settled: list = []
    receiver = documented_receiver(monkeypatch, settled)
    receiver["SIGNING_SECRETS"] = ["whsec-next", SECRET]
    for secret, order in ((SECRET, "old"), ("whsec-next", "new")):
        envelope = {**ENVELOPE, "payload": {"order": order}}
        body = envelope_body(envelope)
        event = function_url_event(body, webhook_headers(envelope, body, secret.encode(), time.time(), WEBHOOK))
        assert receiver["handler"](event, None) == {"statusCode": 204}
    assert settled == ["old", "new"]
