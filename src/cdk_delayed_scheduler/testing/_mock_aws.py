"""A target that finds no such resource while moto's ``mock_aws`` is active: the kit says where its calls went.

While a kit scheduler runs, the AWS SDK in the test process calls the kit's moto (``AWS_ENDPOINT_URL``), a
process of its own, which keeps an account apart from the one ``mock_aws`` keeps in the test process. A
resource made under ``mock_aws`` before the kit started is not in the kit's moto (and one made in the kit's
moto is not where a client made under ``mock_aws`` before the kit looks). Read without importing moto.
"""

from __future__ import annotations

import os
import re
import sys

_NOT_FOUND = re.compile(r"NotFound|NoSuch|NonExistent|DoesNotExist")
"""AWS error codes that say a resource does not exist (``ResourceNotFoundException``, ``NoSuchBucket``,
``AWS.SimpleQueueService.NonExistentQueue``, SNS's ``NotFound``, ``StateMachineDoesNotExist``, ...)."""


def mock_aws_active() -> bool:
    """Whether moto's ``mock_aws`` intercepts this process's AWS calls now."""
    models = sys.modules.get("moto.core.models")
    return bool(getattr(getattr(models, "botocore_stubber", None), "enabled", False))


def not_found_code(error: BaseException) -> str | None:
    """The AWS error code saying "no such resource" that ``error``, or an error it was raised from, carries."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        response = getattr(current, "response", None)
        code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
        if isinstance(code, str) and _NOT_FOUND.search(code):
            return code
        current = current.__cause__ or current.__context__
    return None


def mock_aws_hint(error: BaseException, target: str) -> str | None:
    """What to say when target ``target`` raised ``error``: ``None`` unless it is a "no such resource" answer
    met while ``mock_aws`` is active."""
    code = not_found_code(error)
    if code is None or not mock_aws_active():
        return None
    return (f"local_scheduler: target {target!r} got {code} while moto's mock_aws is active in this process. "
            f"The kit's moto (AWS_ENDPOINT_URL={os.environ.get('AWS_ENDPOINT_URL')}) is an account apart from "
            "mock_aws's: a client made while the kit runs calls the kit's moto, one made before it started keeps "
            "calling mock_aws. Create the resources your targets use once the kit runs, in a fixture that takes "
            "local_scheduler (docs/testing.md, \"Your own AWS resources\")")
