"""The payloads the cost section stores: realistic JSON, and a high-entropy blob for contrast.

- ``json``: an order-reminder document (customer, address, order lines with SKUs, names,
  quantities and prices, a free-text note), generated from a fixed seed, with as many order
  lines as it takes to reach the size; the note is cut to hit it exactly. Field names repeat
  from line to line, as in most application JSON, so zlib shrinks it several times.
- ``random``: ``{"blob": "<base64 of random bytes>"}``, like an encrypted token or a
  compressed document. zlib can only undo base64's 4/3 expansion, about a quarter.

Sizes are of the canonical JSON the runtime stores (compact, keys sorted).
"""

from __future__ import annotations

import base64
import random

from scheduler_runtime.core import payload as stored
from scheduler_runtime.core.validation import canonical_json

_WORDS = ("blue", "cotton", "shirt", "large", "ceramic", "mug", "steel", "bottle", "wool", "socks", "pack",
          "of", "three", "leather", "wallet", "garden", "hose", "desk", "lamp", "oak", "frame", "travel", "bag")
_CITIES = ("Lyon", "Porto", "Leeds", "Graz", "Turku", "Gent", "Brno", "Cork")


def _json(size: int, rng: random.Random) -> dict:
    doc: dict = {"type": "order.reminder", "orderId": f"ORD-{rng.randrange(10**9):09d}", "note": ""}
    optional = {
        "customer": {"id": f"CUS-{rng.randrange(10**7):07d}", "name": "Alex Martin", "email": "alex.martin@example.com",
                     "locale": "en-GB", "address": {"street": f"{rng.randrange(1, 200)} High Street",
                                                    "city": rng.choice(_CITIES), "postcode": "AB1 2CD",
                                                    "country": "GB"}},
        "currency": "EUR",
    }
    for name, value in optional.items():  # as much of the header as fits
        if len(canonical_json({**doc, name: value})) <= size:
            doc[name] = value
    lines: list = []
    while True:
        line = {"sku": f"SKU-{rng.randrange(10**6):06d}", "name": " ".join(rng.choice(_WORDS) for _ in range(3)),
                "quantity": rng.randrange(1, 5), "unitPrice": round(rng.uniform(2, 120), 2),
                "giftWrap": rng.random() < 0.2}
        if len(canonical_json({**doc, "lines": lines + [line]})) > size:
            break
        lines.append(line)
    if lines:
        doc["lines"] = lines
    filler = " ".join(rng.choice(_WORDS) for _ in range(size))
    doc["note"] = filler[: max(0, size - len(canonical_json(doc)))].rstrip()
    return doc


def _random(size: int, rng: random.Random) -> dict:
    empty = len(canonical_json({"blob": ""}))
    chars = max(0, size - empty)
    raw = bytes(rng.getrandbits(8) for _ in range(chars * 3 // 4 + 3))
    return {"blob": base64.b64encode(raw).decode("ascii")[:chars]}


def make(kind: str, size: int, seed: int = 0) -> dict:
    """A payload of ``kind`` (``json`` or ``random``) whose canonical JSON is ``size`` bytes (or just under)."""
    rng = random.Random(f"{kind}-{size}-{seed}")
    if kind == "json":
        return _json(size, rng)
    if kind == "random":
        return _random(size, rng)
    raise ValueError(kind)


def describe(value: dict) -> dict:
    """Canonical and stored sizes of a payload: how much the runtime's zlib step shrinks it."""
    text = canonical_json(value)
    kind, stored_value = stored.encode(text)
    stored_bytes = len(stored_value) if kind == "B" else len(text.encode("utf-8"))
    raw = len(text.encode("utf-8"))
    return {"json_bytes": raw, "stored_bytes": stored_bytes, "stored_as": "zlib" if kind == "B" else "text",
            "stored_ratio": stored_bytes / raw if raw else 1.0}


# label -> (kind, size); "1KB" is the headline payload
PAYLOADS = {
    "100B": ("json", 100),
    "1KB": ("json", 1024),
    "1KB-random": ("random", 1024),
    "4KB": ("json", 4096),
    "64KB": ("json", 65536),
}
