"""The local engine's API as the demo, chaos and the tests call it (the typed client's raw mode), and the wire's
times."""

from __future__ import annotations

from datetime import datetime

from ..client import SchedulerClient


def raw_client(api_url: str, timeout_seconds: float = 10.0) -> SchedulerClient:
    """A client of the engine's HTTP API at ``api_url`` for :meth:`~SchedulerClient.raw` calls, each answered as it
    came: unsigned, and sent once (a 429 or a 5xx is seen, not retried); no answer within ``timeout_seconds`` is
    status ``None``."""
    return SchedulerClient(api_url, sign=False, max_attempts=1, timeout=timeout_seconds)


def parse_due_ms(rfc3339: str) -> int:
    """The runtime always answers ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    return int(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000 + 0.5)
