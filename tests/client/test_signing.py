"""Signing: a client with AWS credentials signs its requests; one without sends them unsigned and says
so once (an ``UnsignedRequestsWarning``); ``sign=`` chooses explicitly. An unsigned request to an engine
that requires SigV4 gets its 403 as the client's ``AccessDeniedError``; ``docs/client.md``'s local
example runs as written with no credentials at all.

The suite's conftest sets fake credentials, so the cases without any remove them: every variable
botocore reads credentials from, its files pointed at an empty one, the instance metadata service off.
"""

from __future__ import annotations

import json
import re
import textwrap
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Callable, Iterator

import botocore.exceptions
import pytest

from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient, UnsignedRequestsWarning
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import Local, ScriptedServer, fresh_id
from .subprocess_python import run_python

ROOT = Path(__file__).resolve().parents[2]
Scripted = Callable[[list[tuple[int, dict[str, str]]]], ScriptedServer]
ANSWER = {"id": "x", "dueAt": "2030-01-01T00:00:00.000Z", "status": "SCHEDULED", "target": "default"}


def authorizations(server: ScriptedServer) -> list[str | None]:
    return [seen.headers.get("authorization") for seen in server.seen]


def test_without_credentials_the_client_sends_unsigned_requests_and_warns(no_credentials: None,
                                                                           scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with pytest.warns(UnsignedRequestsWarning, match="no AWS credentials found: requests to http://127.0.0.1:"):
        client = SchedulerClient(server.url, region="us-east-1")
    client.get("x")
    client.get("x")
    assert authorizations(server) == [None, None]


def test_sign_false_sends_unsigned_requests_without_a_warning_even_with_credentials(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SchedulerClient(server.url, region="us-east-1", sign=False).get("x")
    assert authorizations(server) == [None]


def test_with_credentials_the_client_signs_without_a_warning(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SchedulerClient(server.url, region="us-east-1").get("x")
    [authorization] = authorizations(server)
    assert authorization is not None and authorization.startswith("AWS4-HMAC-SHA256 Credential=")
    assert "/us-east-1/execute-api/aws4_request" in authorization


def test_sign_true_without_credentials_refuses_to_make_the_client(no_credentials: None, scripted: Scripted) -> None:
    with pytest.raises(botocore.exceptions.NoCredentialsError):
        SchedulerClient(scripted([(200, ANSWER)]).url, region="us-east-1", sign=True)


@pytest.mark.slow  # a child process: the warning is given once a process
def test_the_warning_is_given_once_for_many_clients_and_calls(credential_free: dict[str, str],
                                                              scripted: Scripted) -> None:
    """In a plain process, under Python's default warning filters, as a user runs it."""
    server = scripted([(200, ANSWER)])
    done = run_python(textwrap.dedent(f"""
        from cdk_delayed_scheduler.client import SchedulerClient
        for _ in range(3):
            SchedulerClient({server.url!r}, region="us-east-1").get("x")
    """), credential_free)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("UnsignedRequestsWarning") == 1, done.stderr
    assert authorizations(server) == [None] * 3


@pytest.mark.slow  # a child process: a process without AWS credentials
def test_an_engine_that_requires_signatures_answers_the_signed_client_and_refuses_the_unsigned(
        local: Local, credential_free: dict[str, str]) -> None:
    signed = SchedulerClient(local.engine.api_url)  # the suite's (fake) credentials: any will do
    assert signed.schedule(timedelta(hours=1), 1, id=fresh_id("signed")).status == "SCHEDULED"
    unsigned_id = fresh_id("unsigned")
    done = run_python(textwrap.dedent(f"""
        import json, warnings
        from datetime import timedelta
        from cdk_delayed_scheduler.client import AccessDeniedError, SchedulerClient
        warnings.simplefilter("ignore")
        try:
            SchedulerClient({local.engine.api_url!r}).schedule(timedelta(hours=1), 1, id={unsigned_id!r})
        except AccessDeniedError as error:
            print(json.dumps({{"status": error.status, "message": error.message}}))
    """), credential_free)
    assert done.returncode == 0, done.stderr
    refused = json.loads(done.stdout)
    assert refused["status"] == 403 and refused["message"].startswith("Missing Authentication Token"), refused
    with pytest.raises(NotFoundError):  # the refused request created nothing
        signed.get(unsigned_id)


@pytest.fixture(scope="module")
def open_engine() -> Iterator[Engine]:
    """An engine as ``cdk-delayed-scheduler local`` starts one by default: no signature required."""
    with Engine(EngineOptions(target=Recorder())) as engine:
        yield engine


@pytest.mark.slow  # a child process: a process without AWS credentials
def test_the_local_example_in_the_client_docs_runs_as_written_without_credentials(
        open_engine: Engine, credential_free: dict[str, str]) -> None:
    docs = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    block = re.search(r"## Against the local engine.*?```python\n(.*?)```", docs, re.S)
    assert block, "docs/client.md's local section lost its example"
    example = block.group(1)
    assert "http://127.0.0.1:8787" in example
    done = run_python(example.replace("http://127.0.0.1:8787", open_engine.api_url), credential_free)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["SCHEDULED", "CANCELLED"], done.stdout
    assert done.stderr.count("UnsignedRequestsWarning") == 1, done.stderr
