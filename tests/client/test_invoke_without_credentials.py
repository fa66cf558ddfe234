"""Direct invoke without AWS credentials: against a local endpoint (the engine, which accepts any
credentials) the client signs with placeholder ones and says so once, with a
``PlaceholderCredentialsWarning`` naming the line that made it; against any other endpoint it does
not make credentials up, and the call fails for want of them.

The client runs in a child process with no credentials anywhere botocore looks (the engine, in this
one, keeps the suite's)."""

from __future__ import annotations

import json
import textwrap
import warnings

import pytest

from cdk_delayed_scheduler.client import PlaceholderCredentialsWarning, SchedulerClient, TransportError
from cdk_delayed_scheduler.local.engine import API_FUNCTION

from .conftest import Local, fresh_id
from .subprocess_python import run_python

SYNC = """
from datetime import timedelta
from cdk_delayed_scheduler.client import SchedulerClient
timers = SchedulerClient.for_function({function!r})
created = timers.schedule(timedelta(hours=1), {{"order": 42}}, id={id!r})
answer = [created.status, timers.get(created.id).payload]
"""
ASYNC = """
import asyncio
from datetime import timedelta
from cdk_delayed_scheduler.client import AsyncSchedulerClient

async def main():
    async with AsyncSchedulerClient.for_function({function!r}) as timers:
        created = await timers.schedule(timedelta(hours=1), {{"order": 42}}, id={id!r})
        return [created.status, (await timers.get(created.id)).payload]

answer = asyncio.run(main())
"""
REPORT = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
{code}
print(json.dumps({{"answer": answer, "warnings": [[w.category.__name__, str(w.message), w.filename, w.lineno]
                                                  for w in caught]}}))
"""


def run_without_credentials(code: str, local: Local, credential_free: dict[str, str]) -> dict:
    environ = {**credential_free, "AWS_ENDPOINT_URL_LAMBDA": local.engine.lambda_endpoint_url}
    done = run_python(REPORT.format(code=textwrap.indent(code, "    ")), environ)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow  # a child process: a process without AWS credentials, whose warning is given once
@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_for_function_on_the_local_engine_without_credentials_warns_once_and_schedules(
        flavour: str, local: Local, credential_free: dict[str, str]) -> None:
    report = run_without_credentials(flavour.format(function=API_FUNCTION, id=fresh_id("no-credentials")), local,
                                     credential_free)
    assert report["answer"] == ["SCHEDULED", {"order": 42}]
    [[category, message, filename, line]] = report["warnings"]
    assert category == "PlaceholderCredentialsWarning"
    assert message.startswith(f"no AWS credentials found: invokes of {API_FUNCTION} at "
                              f"{local.engine.lambda_endpoint_url} are signed with placeholder credentials")
    # the line that made the client, in the caller's code
    made = next(n for n, text in enumerate(REPORT.format(code=textwrap.indent(flavour, "    ")).splitlines(), 1)
                if ".for_function(" in text)
    assert (filename, line) == ("<string>", made)


def test_without_credentials_another_endpoint_gets_no_placeholder_credentials(
        no_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Signing fails before anything is sent, so the endpoint is never reached."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", "http://lambda.scheduler.invalid")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlaceholderCredentialsWarning)
        timers = SchedulerClient.for_function(API_FUNCTION)
    with pytest.raises(TransportError, match="Unable to locate credentials"):
        timers.get("x")
