"""HTTPS endpoints as targets, through dispatcher handler events on in-process moto (the signing secret in
its Secrets Manager) and a receiver on 127.0.0.1 over TLS with a self-signed certificate trusted through
``SSL_CERT_FILE``: a delivery is a signed POST that the shipped ``verify_signature`` accepts; 408, 429,
5xx, a timeout and a refused connection are retried; any other status (redirects included, never
followed) parks the envelope at once with the status as the reason; the answer's body never reaches a log
or a reason; the secret is read again once its cache time has passed; connections are kept alive."""

from __future__ import annotations

import json
import logging
import os
import socket

import pytest

from cdk_delayed_scheduler.webhook import verify_signature
from scheduler_runtime.aws import https_target

from .conftest import aws_client, call_api, faulty, schedule, service_error
from .dispatching import dispatch, receive
from .https_receiver import Answer, Receiver, self_signed_certificate

pytestmark = pytest.mark.usefixtures("virtual_clock")

SECRET = "whsec-first"
ANSWER_BODY = b"receiver-private-answer-text"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def receiver(certificate, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.cert_path))
    https_target.POOL.clear()
    https_target.SECRETS.clear()
    with Receiver(certificate) as server:
        yield server
    https_target.POOL.clear()
    https_target.SECRETS.clear()


@pytest.fixture
def webhooks(aws, receiver, monkeypatch) -> dict[str, str]:
    """Targets on the receiver: ``hook`` (its path /hook, 2 s timeout) and ``headed`` (with headers of its
    own, some trying to replace the runtime's). {"secretArn": ...}."""
    secrets = aws_client("secretsmanager")
    arn = secrets.create_secret(Name="timers/webhook", SecretString=SECRET)["ARN"]
    add_targets(monkeypatch, {
        "hook": https(receiver.url("/hook"), arn),
        "headed": {**https(receiver.url("/headed"), arn),
                   "headers": {"X-Tenant": "acme", "scheduler-signature": "t=1,v1=forged",
                               "Content-Type": "text/plain", "Scheduler-Attempt": "99"}},
    })
    return {"secretArn": arn}


def https(url: str, secret_arn: str, timeout: int = 2) -> dict:
    return {"type": "https", "url": url, "secretArn": secret_arn, "timeoutSeconds": timeout}


def add_targets(monkeypatch, more: dict) -> None:
    monkeypatch.setenv("TARGETS", json.dumps({**json.loads(os.environ["TARGETS"]), **more}))


def deliver_once(aws, schedule_id: str, target: str = "hook") -> dict:
    schedule(schedule_id, 0, target=target)
    [message] = aws.receive(aws.delayer_url)
    return dispatch(receive(message, 1))


def parked_reason(aws, schedule_id: str) -> str:
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["id"] == schedule_id
    read = call_api("GET", f"/schedules/{schedule_id}")[1]
    assert read["status"] == "FAILED"
    return parked["messageAttributes"]["reason"]["stringValue"]


def retried(outcome: dict) -> bool:
    return len(outcome["batchItemFailures"]) == 1


# --- delivered -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 204])
def test_a_2xx_answer_is_a_delivery_signed_so_that_verify_signature_accepts_it(aws, webhooks, receiver, status):
    receiver.answers["/hook"] = Answer(status, body=ANSWER_BODY)
    assert deliver_once(aws, f"ok-{status}") == {"batchItemFailures": []}
    [seen] = receiver.requests_to("/hook")
    envelope = verify_signature(seen.body, seen.headers, SECRET)
    assert (envelope.id, envelope.attempt, envelope.payload, envelope.target) == (
        f"ok-{status}", 1, {"id": f"ok-{status}"}, "hook")
    assert seen.method == "POST" and seen.headers["Content-Type"] == "application/json"
    assert (seen.headers["Scheduler-Schedule-Id"], seen.headers["Scheduler-Dedupe-Key"],
            seen.headers["Scheduler-Attempt"]) == (envelope.id, envelope.dedupe_key, "1")
    assert call_api("GET", f"/schedules/ok-{status}")[1]["status"] == "FIRED"


def test_the_targets_own_headers_are_sent_but_never_replace_the_runtimes(aws, webhooks, receiver):
    assert deliver_once(aws, "headed-1", target="headed") == {"batchItemFailures": []}
    [seen] = receiver.requests_to("/headed")
    assert seen.headers["X-Tenant"] == "acme"
    assert seen.headers["Content-Type"] == "application/json" and seen.headers["Scheduler-Attempt"] == "1"
    assert "forged" not in seen.headers["Scheduler-Signature"]
    assert [name.lower() for name in seen.headers].count("scheduler-signature") == 1
    assert verify_signature(seen.body, seen.headers, SECRET).id == "headed-1"


def test_http_to_a_loopback_host_is_delivered(aws, webhooks, monkeypatch):
    with Receiver() as plain:
        add_targets(monkeypatch, {"local": https(plain.url("/local"), webhooks["secretArn"])})
        assert deliver_once(aws, "plain-1", target="local") == {"batchItemFailures": []}
        [seen] = plain.requests_to("/local")
    assert verify_signature(seen.body, seen.headers, SECRET).id == "plain-1"


# --- retried -------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_a_408_429_or_5xx_is_retried(aws, webhooks, receiver, status, caplog):
    receiver.answers["/hook"] = Answer(status, body=ANSWER_BODY)
    assert retried(deliver_once(aws, f"again-{status}"))
    assert f"{receiver.url('/hook')} answered {status}" in caplog.text
    assert call_api("GET", f"/schedules/again-{status}")[1]["status"] != "FAILED"
    assert not aws.receive(aws.dlq_url)


@pytest.mark.slow  # real time: the 1 s read timeout runs out on the socket, not on the virtual clock
def test_an_answer_slower_than_the_timeout_is_retried(aws, webhooks, receiver, monkeypatch, caplog):
    add_targets(monkeypatch, {"slow": https(receiver.url("/slow"), webhooks["secretArn"], timeout=1)})
    receiver.answers["/slow"] = Answer(200, held=True)
    assert retried(deliver_once(aws, "slow-1", target="slow"))
    assert f"{receiver.url('/slow')} did not answer within 1 s" in caplog.text


def test_a_refused_connection_is_retried(aws, webhooks, monkeypatch, caplog):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    add_targets(monkeypatch, {"closed": https(f"https://127.0.0.1:{port}/hook", webhooks["secretArn"])})
    assert retried(deliver_once(aws, "refused-1", target="closed"))
    assert "ConnectionRefusedError" in caplog.text


def test_a_secret_that_cannot_be_read_for_now_is_retried(aws, webhooks, receiver):
    def throttled(real, **kwargs):
        raise service_error("GetSecretValue", "ThrottlingException")

    with faulty("secretsmanager", get_secret_value=throttled):
        assert retried(deliver_once(aws, "throttled-1"))
    assert not receiver.seen


# --- parked at once ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 400, 404, 410])
def test_a_redirect_or_another_4xx_parks_at_once_with_the_status_and_is_never_followed(aws, webhooks, receiver,
                                                                                        status):
    receiver.answers["/hook"] = Answer(status, body=ANSWER_BODY, headers={"Location": receiver.url("/elsewhere")})
    assert deliver_once(aws, f"parked-{status}") == {"batchItemFailures": []}
    reason = parked_reason(aws, f"parked-{status}")
    assert reason == f"undeliverable (attempt 1, not retried): {receiver.url('/hook')} answered {status}"
    assert len(receiver.requests_to("/hook")) == 1 and not receiver.requests_to("/elsewhere")


def test_the_answers_body_never_reaches_a_log_or_a_reason(aws, webhooks, receiver, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="scheduler_runtime")  # the runtime sets its own level (INFO)
    for index, status in enumerate((500, 410, 200)):
        receiver.answers["/hook"] = Answer(status, body=ANSWER_BODY)
        deliver_once(aws, f"quiet-{index}")
    out, err = capsys.readouterr()
    reasons = [m["messageAttributes"]["reason"]["stringValue"] for m in aws.receive(aws.dlq_url)]
    assert reasons and "answered 500" in caplog.text
    assert ANSWER_BODY.decode() not in caplog.text + out + err + " ".join(reasons)


def test_the_query_string_stays_out_of_the_reason(aws, webhooks, receiver, monkeypatch):
    add_targets(monkeypatch, {"keyed": https(receiver.url("/gone?token=private-query-token"), webhooks["secretArn"])})
    receiver.answers["/gone?token=private-query-token"] = Answer(410)
    deliver_once(aws, "keyed-1", target="keyed")
    assert parked_reason(aws, "keyed-1").endswith(f"{receiver.url('/gone')} answered 410")


def test_http_to_a_host_that_is_not_loopback_is_refused(aws, webhooks, monkeypatch):
    add_targets(monkeypatch, {"plain": https("http://example.com/hook", webhooks["secretArn"])})
    deliver_once(aws, "plain-remote", target="plain")
    assert "http://example.com/hook: http:// is allowed only to a loopback host" in parked_reason(aws, "plain-remote")


@pytest.mark.parametrize("code", ["AccessDeniedException", "ResourceNotFoundException"])
def test_a_denied_or_missing_secret_parks_at_once(aws, webhooks, receiver, code):
    def refuse(real, **kwargs):
        raise service_error("GetSecretValue", code)

    with faulty("secretsmanager", get_secret_value=refuse):
        deliver_once(aws, f"secretless-{code}")
    assert f"signing secret {webhooks['secretArn']}: {code}" in parked_reason(aws, f"secretless-{code}")
    assert not receiver.seen


# --- the secret's cache, and kept-alive connections ----------------------------------------------


def test_a_rotated_secret_is_used_once_the_cache_time_has_passed(aws, webhooks, receiver, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(https_target.SECRETS, "clock", lambda: clock[0])
    assert https_target.SECRETS.ttl_s == 300
    deliver_once(aws, "before-rotation")
    aws_client("secretsmanager").put_secret_value(
        SecretId=webhooks["secretArn"], SecretString="whsec-second")
    clock[0] += 299
    deliver_once(aws, "within-cache")
    clock[0] += 2
    deliver_once(aws, "after-cache")
    first, cached, rotated = receiver.requests_to("/hook")
    assert verify_signature(cached.body, cached.headers, SECRET).id == "within-cache"
    assert verify_signature(rotated.body, rotated.headers, "whsec-second").id == "after-cache"
    assert verify_signature(rotated.body, rotated.headers, ["whsec-second", SECRET]).id == "after-cache"


def test_a_hundred_deliveries_to_one_host_reuse_their_connections_and_read_the_secret_once(aws, webhooks,
                                                                                            receiver):
    reads = []

    def counted(real, **kwargs):
        reads.append(kwargs["SecretId"])
        return real.get_secret_value(**kwargs)

    for index in range(100):
        schedule(f"kept-{index}", 0, target="hook")
    delivered = 0
    with faulty("secretsmanager", get_secret_value=counted):
        while delivered < 100:
            batch = aws.receive(aws.delayer_url)
            assert batch, f"only {delivered} of 100 messages came back"
            assert dispatch(*(receive(message, 1) for message in batch)) == {"batchItemFailures": []}
            delivered += len(batch)
    assert len(receiver.requests_to("/hook")) == 100
    assert receiver.handshakes == receiver.connections <= 10  # at most one per delivery running at once
    assert reads == [webhooks["secretArn"]]


def test_a_pooled_connection_the_server_closed_is_replaced_and_the_request_sent_once(aws, webhooks, receiver):
    receiver.answers["/hook"] = Answer(200, drop_after=True)  # closed after answering, without saying so
    deliver_once(aws, "raced-1")
    receiver.answers["/hook"] = Answer(200)
    assert deliver_once(aws, "raced-2") == {"batchItemFailures": []}
    assert [verify_signature(s.body, s.headers, SECRET).id for s in receiver.requests_to("/hook")] == [
        "raced-1", "raced-2"]
    assert receiver.connections == 2


def test_a_header_no_request_can_carry_parks_at_once_naming_it_without_its_value(aws, webhooks, receiver,
                                                                                  monkeypatch):
    target = {**https(receiver.url("/hook"), webhooks["secretArn"]),
              "headers": {"X-Token": "private-value\r\nX-Injected: 1"}}
    add_targets(monkeypatch, {"split": target})
    deliver_once(aws, "split-1", target="split")
    reason = parked_reason(aws, "split-1")
    assert "the target's header 'X-Token' cannot be sent" in reason and "private-value" not in reason
    assert not receiver.seen


def test_a_refresh_that_fails_for_now_keeps_the_secret_read_before_and_is_tried_again_later(aws, webhooks, receiver,
                                                                                           monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(https_target.SECRETS, "clock", lambda: clock[0])
    deliver_once(aws, "read")
    aws_client("secretsmanager").put_secret_value(
        SecretId=webhooks["secretArn"], SecretString="whsec-second")
    tries = []

    def throttled(real, **kwargs):
        tries.append(clock[0])
        raise service_error("GetSecretValue", "ThrottlingException")

    clock[0] += 301
    with faulty("secretsmanager", get_secret_value=throttled):
        assert deliver_once(aws, "stale-1") == {"batchItemFailures": []}
        clock[0] += 29
        assert deliver_once(aws, "stale-2") == {"batchItemFailures": []}
        clock[0] += 2
        assert deliver_once(aws, "stale-3") == {"batchItemFailures": []}
    assert tries == [1301.0, 1332.0]
    clock[0] += 30
    assert deliver_once(aws, "refreshed") == {"batchItemFailures": []}  # 30 s after the last failed try: read
    *stale, refreshed = receiver.requests_to("/hook")[1:]
    assert [verify_signature(s.body, s.headers, SECRET).id for s in stale] == ["stale-1", "stale-2", "stale-3"]
    assert verify_signature(refreshed.body, refreshed.headers, "whsec-second").id == "refreshed"
