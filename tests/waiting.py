"""The suite's one wait on a condition: polled, with a bound, and naming what it waited for (never a fixed sleep)."""

from __future__ import annotations

import time
from typing import Any, Callable


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """``condition()``'s first truthy value; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(interval)
