"""API keys and JWTs: ``api_key=`` sends ``x-api-key``, ``token=`` sends ``Authorization`` with the token
its provider answers before each request; neither signs, and asking for two ways raises ``ValueError``.
The local engine checks neither, so the headers are read by a scripted server; against the engine the
answers are parsed as usual."""

from __future__ import annotations

import itertools
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from cdk_delayed_scheduler.client import SchedulerClient, ScheduleStatus
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import ScriptedServer, fresh_id

Scripted = Callable[[list[Any]], ScriptedServer]
ANSWER = {"id": "x", "dueAt": "2030-01-01T00:00:00.000Z", "status": "SCHEDULED", "target": "default"}
SIGV4_HEADERS = ("x-amz-date", "x-amz-security-token")


def sent(server: ScriptedServer, name: str) -> list[str | None]:
    return [seen.headers.get(name) for seen in server.seen]


def unsigned(server: ScriptedServer) -> bool:
    return not any(seen.headers.get(name) for seen in server.seen for name in SIGV4_HEADERS)


def test_an_api_key_is_sent_as_x_api_key_on_every_request_unsigned(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the suite has credentials: still no signing, and no warning
        client = SchedulerClient(server.url, api_key="key-123", region="us-east-1")
    client.get("x")
    client.schedule(timedelta(minutes=1), {"a": 1})
    assert sent(server, "x-api-key") == ["key-123", "key-123"]
    assert sent(server, "authorization") == [None, None] and unsigned(server)


def test_the_token_provider_is_asked_before_each_request_so_a_refreshed_token_is_sent(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.signature-{}"
    tokens = (jwt.format(n) for n in itertools.count(1))
    client = SchedulerClient(server.url, token=lambda: next(tokens), region="us-east-1")
    for _ in range(3):
        client.get("x")
    assert sent(server, "authorization") == [jwt.format(n) for n in (1, 2, 3)]
    assert sent(server, "x-api-key") == [None] * 3 and unsigned(server)


def test_a_token_is_sent_exactly_as_the_provider_answers_it(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    SchedulerClient(server.url, token=lambda: "Bearer abc.def.ghi", region="us-east-1").get("x")
    assert sent(server, "authorization") == ["Bearer abc.def.ghi"]


def test_retries_ask_the_provider_again(scripted: Scripted) -> None:
    server = scripted([(503, {"message": "Service Unavailable"}), (200, ANSWER)])
    tokens = iter(["expired", "fresh"])
    SchedulerClient(server.url, token=lambda: next(tokens), region="us-east-1", backoff_base=0.01).get("x")
    assert sent(server, "authorization") == ["expired", "fresh"]


@pytest.mark.parametrize("arguments, named", [
    ({"api_key": "k", "token": lambda: "t"}, ("api_key", "token")),
    ({"api_key": "k", "sign": True}, ("api_key", "sign=True")),
    ({"token": lambda: "t", "sign": True}, ("token", "sign=True")),
])
def test_two_ways_to_authenticate_are_refused_naming_both(arguments: dict[str, Any], named: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match=f"not both {named[0]} and {named[1]}"):
        SchedulerClient("https://api.example.com", region="us-east-1", **arguments)


def test_sign_false_goes_with_an_api_key(scripted: Scripted) -> None:
    server = scripted([(200, ANSWER)])
    SchedulerClient(server.url, api_key="k", sign=False, region="us-east-1").get("x")
    assert sent(server, "x-api-key") == ["k"]


def test_a_token_that_is_not_a_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="token must be a callable"):
        SchedulerClient("https://api.example.com", region="us-east-1", token="abc.def.ghi")  # type: ignore[arg-type]


@pytest.mark.parametrize("api_key", ["", "  "])
def test_an_empty_api_key_is_refused(api_key: str) -> None:
    with pytest.raises(ValueError, match="api_key must be a non-empty str"):
        SchedulerClient("https://api.example.com", region="us-east-1", api_key=api_key)


@pytest.mark.parametrize("answer", [None, "", b"abc"])
def test_a_provider_answering_no_token_raises_before_anything_is_sent(scripted: Scripted, answer: Any) -> None:
    server = scripted([(200, ANSWER)])
    client = SchedulerClient(server.url, token=lambda: answer, region="us-east-1")
    with pytest.raises(ValueError, match="token must return the JWT as a non-empty str"):
        client.get("x")
    assert server.seen == []


def test_a_client_with_an_api_key_needs_no_region(scripted: Scripted, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "empty"))
    server = scripted([(200, ANSWER)])
    client = SchedulerClient(server.url, api_key="k")
    assert client.region is None and client.get("x").id == "x"
    with pytest.raises(ValueError, match="no AWS region"):  # a signing client still needs one
        SchedulerClient(server.url)


@pytest.fixture(scope="module")
def open_engine() -> Iterator[Engine]:
    """An engine as ``cdk-delayed-scheduler local`` starts one by default: no signature required."""
    with Engine(EngineOptions(target=Recorder())) as engine:
        yield engine


@pytest.mark.parametrize("authentication", [{"api_key": "key-123"}, {"token": lambda: "abc.def.ghi"}],
                         ids=["api_key", "token"])
def test_against_the_engine_answers_are_parsed_as_usual(open_engine: Engine, authentication: dict[str, Any]) -> None:
    client = SchedulerClient(open_engine.api_url, region="us-east-1", **authentication)
    created = client.schedule(timedelta(hours=1), {"order": 42}, id=fresh_id("keyed"))
    fetched = client.get(created.id)
    assert fetched.status is ScheduleStatus.SCHEDULED
    assert (fetched.payload, fetched.due_at) == ({"order": 42}, created.due_at)
    assert client.cancel(created.id).status is ScheduleStatus.CANCELLED
