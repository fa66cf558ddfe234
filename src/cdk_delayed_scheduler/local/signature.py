"""The local engine's stand-in for API Gateway's IAM authorization (``--require-signature``).

A request must carry a well-formed SigV4 ``Authorization`` header for the service
``execute-api`` and an ``X-Amz-Date`` header, or it is refused with 403, as API Gateway refuses
an unsigned request to an IAM-authorized route. The signature itself is NOT verified: moto's
credentials are fake, so there is no secret to check it against. What this catches is a client
that does not sign, or signs for the wrong service or without the ``host`` header.
"""

from __future__ import annotations

import re
from typing import Mapping

ALGORITHM = "AWS4-HMAC-SHA256"
_CREDENTIAL = re.compile(r"^(?P<key>[^/\s]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/(?P<service>[a-z0-9-]+)/aws4_request$")
_AMZ_DATE = re.compile(r"^(?P<date>\d{8})T\d{6}Z$")
_SIGNATURE = re.compile(r"^[0-9a-f]{64}$")


def signature_problem(headers: Mapping[str, str]) -> str | None:
    """What is missing from or malformed in a request's SigV4 headers; ``None`` when they are well formed.

    ``headers`` are keyed by lower-case name.
    """
    authorization = headers.get("authorization")
    if not authorization:
        return "Missing Authentication Token: sign the request with SigV4 for the service execute-api"
    algorithm, _, rest = authorization.strip().partition(" ")
    if algorithm != ALGORITHM:
        return f"Authorization header must start with {ALGORITHM}, got {algorithm[:40]!r}"
    parts: dict[str, str] = {}
    for part in rest.split(","):
        name, _, value = part.strip().partition("=")
        parts[name] = value
    missing = [name for name in ("Credential", "SignedHeaders", "Signature") if not parts.get(name)]
    if missing:
        return f"Authorization header lacks {', '.join(missing)}"
    credential = _CREDENTIAL.match(parts["Credential"])
    if not credential:
        return "Authorization header's Credential must be <access key>/<yyyymmdd>/<region>/execute-api/aws4_request"
    if credential.group("service") != "execute-api":
        return f"Authorization header's Credential is scoped to the service {credential.group('service')!r}, not execute-api"
    if "host" not in parts["SignedHeaders"].split(";"):
        return "Authorization header's SignedHeaders must include host"
    if not _SIGNATURE.match(parts["Signature"]):
        return "Authorization header's Signature must be 64 lower-case hex digits"
    amz_date = _AMZ_DATE.match(headers.get("x-amz-date") or "")
    if not amz_date:
        return "X-Amz-Date header is missing or not of the form yyyymmddThhmmssZ"
    if amz_date.group("date") != credential.group("date"):
        return "Authorization header's Credential date does not match X-Amz-Date"
    return None
