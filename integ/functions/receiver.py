"""The HTTPS target's receiver, behind a Lambda function URL: it checks each request's signature as
docs/consuming.md shows ("An HTTPS receiver"), answers 401 to a request it refuses, and writes each
delivery it accepts in the seen table (arrived as ``https``) before answering 204.

The signing secret is read from Secrets Manager (``SIGNING_SECRET_ARN``) by the sandbox's first request:
no secret in the function's configuration.
"""

from __future__ import annotations

import base64
import os
from functools import lru_cache
from typing import Any

import botocore.session

import seen
from cdk_delayed_scheduler.webhook import SignatureVerificationError, verify_signature


@lru_cache(maxsize=1)
def signing_secrets() -> list[str]:
    secrets = botocore.session.get_session().create_client("secretsmanager")
    return [secrets.get_secret_value(SecretId=os.environ["SIGNING_SECRET_ARN"])["SecretString"]]


def handler(event: dict[str, Any], context: object) -> dict[str, int]:
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8")
    try:
        envelope = verify_signature(raw, event.get("headers") or {}, signing_secrets())
    except SignatureVerificationError:
        return {"statusCode": 401}
    seen.record(envelope, "https")
    return {"statusCode": 204}
