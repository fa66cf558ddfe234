"""The asyncio client's ways to prove who calls, as the sync client's: SigV4 (the unsigned case warned
once, naming the caller's line), ``sign=``, ``api_key=``, ``token=`` with a plain or an async provider;
credential refreshes off the event loop; and httpx imported only for an async HTTP client."""

from __future__ import annotations

import itertools
import textwrap
import threading
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import botocore.exceptions
import botocore.session
import pytest
from botocore.credentials import RefreshableCredentials

from cdk_delayed_scheduler.client import AsyncSchedulerClient, SchedulerClient, UnsignedRequestsWarning

from .async_calls import run
from .conftest import ScriptedServer
from .subprocess_python import run_python

Scripted = Callable[[list[Any]], ScriptedServer]
ANSWER = {"id": "x", "dueAt": "2030-01-01T00:00:00.000Z", "status": "SCHEDULED", "target": "default"}


def sent(server: ScriptedServer, name: str) -> list[str | None]:
    return [seen.headers.get(name) for seen in server.seen]


def test_without_credentials_requests_go_unsigned_with_a_warning_naming_the_line_that_made_the_client(
        no_credentials: None, scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with pytest.warns(UnsignedRequestsWarning, match="no AWS credentials found: requests to http://127.0.0.1:") as caught:
        client = AsyncSchedulerClient(server.url, region="us-east-1")
    assert caught[0].filename == __file__
    run(lambda: client, lambda timers: timers.get("x"))
    assert sent(server, "authorization") == [None]


def test_sign_false_sends_unsigned_requests_without_a_warning_even_with_credentials(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(lambda: AsyncSchedulerClient(server.url, region="us-east-1", sign=False), lambda timers: timers.get("x"))
    assert sent(server, "authorization") == [None]


def test_sign_true_without_credentials_refuses_to_make_the_client(no_credentials: None, scripted: Scripted) -> None:
    with pytest.raises(botocore.exceptions.NoCredentialsError):
        AsyncSchedulerClient(scripted([(200, ANSWER)]).url, region="us-east-1", sign=True)


def test_an_api_key_is_sent_as_x_api_key_unsigned_and_needs_no_region(scripted: Scripted,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    server = scripted([(200, ANSWER)])
    client = AsyncSchedulerClient(server.url, api_key="key-123")
    assert client.region is None
    run(lambda: client, lambda timers: timers.get("x"))
    assert sent(server, "x-api-key") == ["key-123"] and sent(server, "x-amz-date") == [None]


def test_a_plain_token_provider_is_asked_before_each_request_retries_included(scripted: Scripted) -> None:
    server = scripted([(503, {"message": "later"}), (200, ANSWER)])
    tokens = (f"jwt-{n}" for n in itertools.count(1))
    run(lambda: AsyncSchedulerClient(server.url, token=lambda: next(tokens), backoff_base=0.01),
        lambda timers: timers.get("x"))
    assert sent(server, "authorization") == ["jwt-1", "jwt-2"]


def test_an_async_token_provider_is_awaited_before_each_request(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    count = itertools.count(1)

    async def refreshed() -> str:
        return f"async-jwt-{next(count)}"

    async def calls(timers: AsyncSchedulerClient) -> None:
        await timers.get("x")
        await timers.get("x")

    run(lambda: AsyncSchedulerClient(server.url, token=refreshed), calls)
    assert sent(server, "authorization") == ["async-jwt-1", "async-jwt-2"]


@pytest.mark.parametrize("answer", ["", None, 42])
def test_an_async_provider_answering_no_token_raises_before_anything_is_sent(scripted: Scripted, answer: Any) -> None:
    server = scripted([(200, ANSWER)])

    async def provider() -> Any:
        return answer

    with pytest.raises(ValueError, match="token must return the JWT as a non-empty str"):
        run(lambda: AsyncSchedulerClient(server.url, token=provider), lambda timers: timers.get("x"))
    assert server.seen == []


def test_the_sync_client_refuses_an_async_provider_naming_the_async_client(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])

    async def provider() -> str:
        return "jwt"

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the provider's coroutine is closed, never left un-awaited
        with pytest.raises(ValueError, match="an async token provider needs AsyncSchedulerClient"):
            SchedulerClient(server.url, token=provider).get("x")
    assert server.seen == []


def test_two_ways_to_authenticate_are_refused_naming_both() -> None:
    with pytest.raises(ValueError, match="not both api_key and token"):
        AsyncSchedulerClient("http://127.0.0.1:1", region="us-east-1", api_key="k", token=lambda: "t")


class _Expiring(botocore.session.Session):
    """A session whose credentials are due for a refresh, recording the thread each refresh runs on."""

    def __init__(self, refreshed_on: list[threading.Thread]) -> None:
        super().__init__()

        def refresh() -> dict[str, str]:
            refreshed_on.append(threading.current_thread())
            return {"access_key": "AKIDREFRESHED", "secret_key": "s", "token": "t",
                    "expiry_time": (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()}

        expiring = {"access_key": "AKIDOLD", "secret_key": "s", "token": "t",
                    "expiry_time": (datetime.now(timezone.utc) + timedelta(minutes=1)).isoformat()}
        self._expiring = RefreshableCredentials.create_from_metadata(expiring, refresh, "test")

    def get_credentials(self) -> RefreshableCredentials:
        return self._expiring


def test_expiring_credentials_are_refreshed_on_a_worker_thread_not_the_event_loop(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    refreshed_on: list[threading.Thread] = []

    async def calls(timers: AsyncSchedulerClient) -> None:
        await timers.get("x")
        await timers.get("x")

    run(lambda: AsyncSchedulerClient(server.url, _Expiring(refreshed_on), region="us-east-1"), calls)
    assert len(refreshed_on) == 1 and refreshed_on[0] is not threading.current_thread()
    assert all("Credential=AKIDREFRESHED/" in (header or "") for header in sent(server, "authorization"))


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_importing_the_client_does_not_import_httpx() -> None:
    done = run_python("import cdk_delayed_scheduler.client, sys; assert 'httpx' not in sys.modules")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # a child process: an interpreter where httpx cannot be imported
def test_without_httpx_a_direct_invoke_client_works_and_an_http_one_names_the_extra(scripted: Scripted) -> None:
    server = scripted([(200, {"statusCode": 200, "body": ANSWER})])
    code = textwrap.dedent(f"""
        import asyncio, importlib.abc, os, sys

        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "httpx":
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, Absent())
        from cdk_delayed_scheduler.client import AsyncSchedulerClient
        os.environ["AWS_ENDPOINT_URL_LAMBDA"] = {server.url!r}

        async def main():
            async with AsyncSchedulerClient.for_function("timers-api", region="us-east-1") as timers:
                print((await timers.get("x")).status)

        asyncio.run(main())
        try:
            AsyncSchedulerClient("http://127.0.0.1:1", region="us-east-1")
        except ModuleNotFoundError as error:
            print(error)
    """)
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    status, refused = done.stdout.splitlines()
    assert status == "SCHEDULED" and refused.startswith("AsyncSchedulerClient over HTTP needs httpx")
    assert "pip install 'cdk-delayed-scheduler[async]'" in refused and "for_function needs only botocore" in refused

