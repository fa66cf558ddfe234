"""Stream positions, persisted like an event source mapping's, so a restart resumes."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path


class CheckpointStore:
    """``{consumer: {shard_key: last processed sequence number}}``, in memory or in a JSON file."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, str]] = {}
        if path is not None and path.exists():
            self._data = json.loads(path.read_text())

    def get(self, consumer: str, shard_key: str) -> str | None:
        with self._lock:
            return self._data.get(consumer, {}).get(shard_key)

    def put(self, consumer: str, shard_key: str, sequence_number: str) -> None:
        with self._lock:
            self._data.setdefault(consumer, {})[shard_key] = sequence_number
            if self._path is not None:
                tmp = self._path.with_suffix(".tmp")
                tmp.write_text(json.dumps(self._data, indent=1, sort_keys=True))
                os.replace(tmp, self._path)  # atomic: a crash leaves the old or the new file
