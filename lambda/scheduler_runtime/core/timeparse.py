"""Instants as integer epoch milliseconds: parsing, formatting and the clock."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timezone

# Upper bound for any instant we accept: 9999-12-31T23:59:59.999Z.
MAX_EPOCH_MS = 253_402_300_799_999

_RFC3339 = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<time>\d{2}:\d{2}:\d{2})(?P<frac>\.\d{1,9})?"
    r"(?P<offset>[Zz]|[+-]\d{2}:\d{2})$"
)


class InvalidInstant(ValueError):
    """A value that is not an instant this API accepts. The message states the rule."""


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def parse_rfc3339(text: str) -> int:
    """Parse an RFC 3339 timestamp with a mandatory offset into epoch ms.

    Fractions finer than a millisecond round up to the next millisecond, so a
    delivery at the parsed instant is never earlier than the one written.
    """
    match = _RFC3339.match(text)
    if not match:
        raise InvalidInstant(
            "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-21T10:00:00.250Z"
        )
    frac = match.group("frac") or ""
    offset = match.group("offset").upper()
    base = f"{match.group('date')}T{match.group('time')}{'+00:00' if offset == 'Z' else offset}"
    try:
        parsed = datetime.fromisoformat(base)
    except ValueError as exc:
        raise InvalidInstant(f"is not a valid date or time ({exc})") from None
    nanos = int((frac[1:] + "000000000")[:9]) if frac else 0
    epoch_ms = int(parsed.timestamp()) * 1000 + math.ceil(nanos / 1_000_000)
    return _check_range(epoch_ms)


def parse_epoch_seconds(value: float | int) -> int:
    """Epoch seconds (integer or fractional) into epoch ms, keeping milliseconds.

    Sub-millisecond fractions round up, so the instant is never earlier than asked.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInstant("must be a number of epoch seconds or an RFC 3339 string")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInstant("must be a finite number")
    if isinstance(value, float) and abs(value) > MAX_EPOCH_MS / 1000 + 1:
        _check_range(MAX_EPOCH_MS + 1)  # out of range, said before value * 1000 overflows to infinity
    if isinstance(value, int):
        epoch_ms = value * 1000
    else:
        epoch_ms = math.ceil(round(value * 1000, 6))
    return _check_range(epoch_ms)


def parse_instant(value: object) -> int:
    """An API ``dueAt``: RFC 3339 with offset, or epoch seconds."""
    if isinstance(value, str):
        return parse_rfc3339(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_epoch_seconds(value)
    raise InvalidInstant("must be an RFC 3339 string with an offset or a number of epoch seconds")


def format_rfc3339_ms(epoch_ms: int) -> str:
    """Epoch ms as RFC 3339 UTC with exactly three fraction digits and a ``Z``."""
    seconds, millis = divmod(epoch_ms, 1000)
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{millis:03d}Z"


def _check_range(epoch_ms: int) -> int:
    if epoch_ms < 0 or epoch_ms > MAX_EPOCH_MS:
        raise InvalidInstant("must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z")
    return epoch_ms
