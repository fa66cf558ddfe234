"""A minimal HTTP client for the scheduler API, and a recording target: shared by the demo and tests."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote


class ApiClient:
    """``post``/``get``/``delete`` against the API; each returns ``(status, json body)``."""

    def __init__(self, base_url: str, timeout_seconds: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout_seconds

    def create(self, body: Any) -> tuple[int, dict]:
        return self.request("POST", "/schedules", json.dumps(body).encode("utf-8"))

    def create_batch(self, bodies: list) -> tuple[int, dict]:
        """Up to 10 creates in one call; the answer's ``results`` are in request order."""
        return self.request("POST", "/schedule-batches", json.dumps({"schedules": bodies}).encode("utf-8"))

    def get(self, schedule_id: str) -> tuple[int, dict]:
        return self.request("GET", f"/schedules/{quote(schedule_id, safe='')}")

    def cancel(self, schedule_id: str) -> tuple[int, dict]:
        return self.request("DELETE", f"/schedules/{quote(schedule_id, safe='')}")

    def request(self, method: str, path: str, data: bytes | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")


def parse_due_ms(rfc3339: str) -> int:
    """The runtime always answers ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    return int(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000 + 0.5)


@dataclass
class Delivery:
    envelope: dict
    received_ms: int

    @property
    def lateness_ms(self) -> int:
        """Negative means early."""
        return self.received_ms - parse_due_ms(self.envelope["dueAt"])


@dataclass
class Recorder:
    """A target that records every envelope with its arrival time (wall clock, ms)."""

    deliveries: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _arrived: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._arrived = threading.Condition(self._lock)

    def __call__(self, envelope: dict) -> None:
        with self._arrived:
            self.deliveries.append(Delivery(envelope, time.time_ns() // 1_000_000))
            self._arrived.notify_all()

    def by_id(self) -> dict[str, list[Delivery]]:
        with self._lock:
            grouped: dict[str, list[Delivery]] = {}
            for delivery in self.deliveries:
                grouped.setdefault(delivery.envelope["id"], []).append(delivery)
            return grouped

    def wait_for(self, ids: set[str], timeout_seconds: float) -> bool:
        """Wait until every id in ``ids`` has been delivered at least once."""
        deadline = time.monotonic() + timeout_seconds
        with self._arrived:
            while not ids <= {d.envelope["id"] for d in self.deliveries}:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(min(left, 0.2))
            return True


def percentile(values: list, fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (0 < fraction <= 1)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]
