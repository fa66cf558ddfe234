"""docs/consuming.md's automatic rotation recipe, run as written against Secrets Manager (moto): a receiver
that verifies with the secret's current and previous values accepts a request signed before a
rotation (the dispatcher keeps the value it read for up to 300 s) and one signed after it, and, one
rotation later, no longer accepts the oldest."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk_delayed_scheduler.webhook import SignatureVerificationError, verify_signature
from scheduler_runtime.core.contract import WEBHOOK
from scheduler_runtime.core.signing import envelope_body, webhook_headers

ENVELOPE = {"id": "order-7", "dueAt": "2030-03-17T10:00:00.000Z", "firedAt": "2030-03-17T10:00:00.012Z",
            "attempt": 1, "dedupeKey": "order-7@1899999999000", "payload": {"order": 7}, "target": "webhook"}


def rotation_recipe() -> str:
    page = (Path(__file__).resolve().parents[2] / "docs" / "consuming.md").read_text(encoding="utf-8")
    block = re.search(r"^\*\*Automatic rotation\*\*.*?```python\n(.*?)```", page, re.S | re.M)
    assert block, "docs/consuming.md lost its automatic rotation recipe"
    return block.group(1)


def signed_with(secret: str) -> tuple[bytes, dict[str, str]]:
    body = envelope_body(ENVELOPE)
    return body, webhook_headers(ENVELOPE, body, secret.encode(), time.time(), WEBHOOK)


@pytest.fixture
def recipe(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "eu-west-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        namespace: dict[str, Any] = {}
        exec(compile(rotation_recipe(), "consuming.md", "exec"), namespace)  # noqa: S102 - the documented recipe
        yield namespace["signing_secrets"]


def test_a_receiver_with_the_current_and_previous_values_accepts_requests_across_a_rotation(recipe: Any) -> None:
    manager = boto3.client("secretsmanager")
    manager.create_secret(Name="hook-secret", SecretString="first")
    assert recipe("hook-secret") == ["first"]  # never rotated
    before = signed_with("first")  # what a dispatcher still holding the old value sends

    manager.put_secret_value(SecretId="hook-secret", SecretString="second")  # a rotation's last step
    secrets = recipe("hook-secret")
    assert secrets == ["second", "first"]
    after = signed_with("second")
    for body, headers in (before, after):
        assert verify_signature(body, headers, secrets).id == "order-7"

    manager.put_secret_value(SecretId="hook-secret", SecretString="third")
    with pytest.raises(SignatureVerificationError, match="matches the body with any of the 2 secrets"):
        verify_signature(*before, recipe("hook-secret"))
