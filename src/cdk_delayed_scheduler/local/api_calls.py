"""A minimal HTTP client for the scheduler API (the demo, chaos and the tests call the engine with it)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any
from urllib.parse import quote


class ApiClient:
    """``post``/``get``/``delete`` against the API; each returns ``(status, json body)``."""

    def __init__(self, base_url: str, timeout_seconds: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout_seconds

    def create(self, body: Any) -> tuple[int, dict[str, Any]]:
        return self.request("POST", "/schedules", json.dumps(body).encode("utf-8"))

    def create_batch(self, bodies: list[Any]) -> tuple[int, dict[str, Any]]:
        """Up to 10 creates in one call; the answer's ``results`` are in request order."""
        return self.request("POST", "/schedule-batches", json.dumps({"schedules": bodies}).encode("utf-8"))

    def get(self, schedule_id: str) -> tuple[int, dict[str, Any]]:
        return self.request("GET", f"/schedules/{quote(schedule_id, safe='')}")

    def cancel(self, schedule_id: str) -> tuple[int, dict[str, Any]]:
        return self.request("DELETE", f"/schedules/{quote(schedule_id, safe='')}")

    def request(self, method: str, path: str, data: bytes | None = None) -> tuple[int, dict[str, Any]]:
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
