"""A limited HTTPS target as the handler tests make it: a plain-HTTP receiver on 127.0.0.1 as the target ``hook``,
limited to 10 starts a second, and the starts it received."""

from __future__ import annotations

import pytest

from cdk_delayed_scheduler.webhook import verify_signature
from scheduler_runtime.aws import https_target

from .conftest import aws_client
from .flow_controlling import limit
from .https_receiver import Receiver

SECRET = "whsec-flow"


@pytest.fixture
def hook(aws, monkeypatch):
    """The receiver, as the target ``hook``, limited to 10 starts a second."""
    https_target.POOL.clear()
    https_target.SECRETS.clear()
    arn = aws_client("secretsmanager").create_secret(Name="timers/flow", SecretString=SECRET)["ARN"]
    with Receiver() as receiver:
        limit(aws, monkeypatch, "hook", {"rate": 10}, description={
            "type": "https", "url": receiver.url("/hook"), "secretArn": arn, "timeoutSeconds": 2})
        yield receiver
    https_target.POOL.clear()


def starts(receiver: Receiver) -> list[tuple[str, str]]:
    """``(id, firedAt)`` of every request the receiver got, in order."""
    return [(envelope.id, envelope.raw["firedAt"]) for envelope in
            (verify_signature(seen.body, seen.headers, SECRET) for seen in receiver.requests_to("/hook"))]
