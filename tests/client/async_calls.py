"""An asyncio client's calls run to their answer from synchronous test code."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

from cdk_delayed_scheduler.client import AsyncSchedulerClient

T = TypeVar("T")


def run(make: Callable[[], AsyncSchedulerClient], calls: Callable[[AsyncSchedulerClient], Awaitable[T]]) -> T:
    """``await calls(client)`` in a new event loop, with the client made and closed in it."""
    async def main() -> T:
        async with make() as timers:
            return await calls(timers)
    return asyncio.run(main())
