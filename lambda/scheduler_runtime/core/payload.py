"""How a payload is stored in its record: as JSON text, or zlib-compressed when that is smaller.

Every write of a record is billed by its size in 1 KB units, and a one-shot's record is
written twice (the create and the FIRED update, which is billed by the larger of the old and
new item). JSON compresses well, so a typical 1-4 KB payload fits a smaller unit count once
compressed; a payload that does not shrink is stored as it is. Decompression is exact.
"""

from __future__ import annotations

import zlib

# Below this, zlib's header and the loss of repetition make compression a wash.
COMPRESS_FROM_BYTES = 200


def encode(payload_json: str) -> tuple[str, object]:
    """``("S", text)`` or ``("B", compressed bytes)``: the attribute type and value to store."""
    raw = payload_json.encode("utf-8")
    if len(raw) >= COMPRESS_FROM_BYTES:
        packed = zlib.compress(raw, 6)
        if len(packed) < len(raw):
            return "B", packed
    return "S", payload_json


def decode(kind: str, value: object) -> str:
    """The payload's JSON text back from what :func:`encode` stored."""
    if kind == "B":
        return zlib.decompress(value).decode("utf-8")  # type: ignore[arg-type]
    return str(value)
