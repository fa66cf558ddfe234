"""docs/client.md's FastAPI example, run as written against the local engine (SigV4 required).

FastAPI is not a dependency of this project: the example runs under a stand-in ``fastapi`` module
that does what the example uses of it (the app's lifespan, and route decorators that keep the
handler), and the test calls the handlers as FastAPI would, within the lifespan.
"""

from __future__ import annotations

import asyncio
import re
import sys
import types
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Callable

import pytest

from cdk_delayed_scheduler.client import SchedulerClient, ScheduleStatus

from .conftest import Local

ROOT = Path(__file__).resolve().parents[2]
Handler = Callable[..., Any]


class _FastAPI:
    """What the example uses of ``fastapi.FastAPI``."""

    def __init__(self, lifespan: Callable[["_FastAPI"], AbstractAsyncContextManager[None]]) -> None:
        self.lifespan = lifespan
        self.routes: dict[tuple[str, str], Handler] = {}

    def _route(self, method: str, path: str) -> Callable[[Handler], Handler]:
        def keep(handler: Handler) -> Handler:
            self.routes[(method, path)] = handler
            return handler
        return keep

    def post(self, path: str) -> Callable[[Handler], Handler]:
        return self._route("POST", path)

    def delete(self, path: str) -> Callable[[Handler], Handler]:
        return self._route("DELETE", path)


def test_the_fastapi_example_schedules_and_cancels_through_the_async_client(
        local: Local, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    block = re.search(r"## asyncio: `AsyncSchedulerClient`.*?```python\n(.*?)```", docs, re.S)
    assert block, "docs/client.md's asyncio section lost its example"
    monkeypatch.setitem(sys.modules, "fastapi", types.SimpleNamespace(FastAPI=_FastAPI))
    monkeypatch.setenv("TIMERS_API", local.engine.api_url)
    example: dict[str, Any] = {}
    exec(compile(block.group(1), "docs/client.md", "exec"), example)  # noqa: S102 - the documented example, verbatim
    app = example["app"]
    remind, forget = app.routes[("POST", "/orders/{order}/reminder")], app.routes[("DELETE", "/orders/{order}/reminder")]

    async def serve() -> list[Any]:
        async with app.lifespan(app):
            made = await asyncio.gather(*(remind(order=order) for order in (41, 42, 43)))
            return [made, await forget(order=42), await forget(order=44)]

    made, cancelled, unknown = asyncio.run(serve())
    assert [answer["timer"] for answer in made] == ["remind-41", "remind-42", "remind-43"]
    assert all(answer["status"] == "SCHEDULED" for answer in made)
    assert (cancelled, unknown) == ({"cancelled": True}, {"cancelled": False})
    timers = SchedulerClient(local.engine.api_url)
    assert timers.get("remind-41").payload == {"order": 41, "action": "remind"}
    assert timers.get("remind-42").status is ScheduleStatus.CANCELLED
    with pytest.raises(RuntimeError, match="closed"):  # the lifespan closed the client
        asyncio.run(example["timers"]["client"].get("remind-41"))
