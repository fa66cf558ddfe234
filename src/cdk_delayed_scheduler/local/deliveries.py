"""Where the local engine delivers: stdout, a URL, or a Python handler, all behind one local function."""

from __future__ import annotations

import importlib
import json
import sys
import threading
import urllib.error
import urllib.request
from typing import Any, Callable, TextIO

Delivery = Callable[[dict], Any]


def stdout_target(stream: TextIO | None = None) -> Delivery:
    """One JSON line per delivery."""
    lock = threading.Lock()

    def deliver(envelope: dict) -> None:
        line = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
        with lock:
            out = stream or sys.stdout
            out.write(line + "\n")
            out.flush()

    return deliver


def url_target(url: str, timeout_seconds: float = 10.0) -> Delivery:
    """POST the envelope as JSON; any non-2xx answer is a failed delivery (and is retried)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--target-url must be an http(s) URL, got {url!r}")

    def deliver(envelope: dict) -> None:
        request = urllib.request.Request(
            url, data=json.dumps(envelope).encode("utf-8"), method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{url} answered {exc.code}") from None

    return deliver


def handler_target(spec: str) -> Delivery:
    """``module:function``, called like a Lambda handler with the envelope as its event."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"--target-handler must look like module:function, got {spec!r}")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--target-handler {spec!r} cannot be loaded: {exc}") from None

    def deliver(envelope: dict) -> Any:
        return function(envelope, None)

    return deliver
