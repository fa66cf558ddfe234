"""Instants as integer epoch milliseconds: parsing and formatting (the time now is always an argument).

Every conversion rounds a sub-millisecond part up, never down, and reads numbers exactly: a
JSON number reaches here as a :class:`JsonNumber`, which keeps the digits it was written with,
so ``1763719200.12300001`` is ``.124`` (a binary float would make it ``.123``: early).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from decimal import Decimal

# Upper bound for any instant we accept: 9999-12-31T23:59:59.999Z.
MAX_EPOCH_MS = 253_402_300_799_999
_RANGE_RULE = "must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z"

RFC3339_PATTERN = (r"^([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{1,9})?"
                   r"([Zz]|[+-][0-9]{2}:[0-9]{2})$")
"""The instants this API reads as text: RFC 3339 with an offset (groups: date, time, fraction, offset).

Written to mean the same in Python (used with ``fullmatch``) and in the ECMA-262 dialect of JSON
Schema, so the OpenAPI document (:mod:`.openapi`) states it as it is: ASCII digits only (Python's
``\\d`` takes any script's digits), and no trailing newline (Python's ``$`` allows one)."""
FORMATTED_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
"""What :func:`format_rfc3339_ms` writes: every instant the API answers with."""
_RFC3339 = re.compile(RFC3339_PATTERN)


class InvalidInstant(ValueError):
    """A value that is not an instant this API accepts. The message states the rule."""


class JsonNumber(float):
    """A JSON number with a fraction or an exponent: the float :func:`json.loads` would make, plus ``text``.

    ``json.loads(raw, parse_float=JsonNumber)`` gives every such number its digits as written,
    so an instant or a duration is read exactly (:func:`exact_decimal`), while everything else,
    payloads included, sees the same float as before and serializes it the same way (``json``
    writes a float subclass as a float). It costs a fraction of a microsecond per number.
    """

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> "JsonNumber":
        number = super().__new__(cls, text)
        number.text = text
        return number


def exact_decimal(value: int | float) -> Decimal:
    """A number's exact decimal value: a :class:`JsonNumber`'s written digits, an int, or a float's shortest form.

    A plain float (a direct invoke's body, which Lambda has already parsed) is read as the
    shortest decimal that makes it, which is what was written whenever that fits a float.
    """
    if isinstance(value, JsonNumber):
        return Decimal(value.text)
    if isinstance(value, int):
        return Decimal(value)
    return Decimal(repr(float(value)))


def ceil_milliseconds(seconds: Decimal) -> int:
    """``ceil(seconds * 1000)`` computed exactly: no decimal context rounds it first.

    The caller keeps ``seconds`` finite and within range (through its float value), so the
    only unbounded part is a fraction's length, and that is only looked at, never converted.
    """
    sign, digits, exponent = seconds.as_tuple()
    if not any(digits):
        return 0
    shift = int(exponent) + 3
    if shift >= 0:
        scale: int = 10**shift
        return (-1 if sign else 1) * int("".join(map(str, digits))) * scale
    cut = max(0, len(digits) + shift)  # the digits before the millisecond point; a fraction may be long
    whole = int("".join(map(str, digits[:cut])) or "0")
    return -whole if sign else whole + (1 if any(digits[cut:]) else 0)


def parse_rfc3339(text: str) -> int:
    """Parse an RFC 3339 timestamp with a mandatory offset into epoch ms.

    Fractions finer than a millisecond round up to the next millisecond, so a
    delivery at the parsed instant is never earlier than the one written.

    A leap second (``23:59:60`` UTC, in any offset) is read as the last millisecond of its
    minute, ``23:59:59.999``: epoch time, which the runtime keeps (as do AWS's smeared
    clocks), has no leap seconds. A ``:60`` at any other minute is refused.
    """
    match = _RFC3339.fullmatch(text)
    if not match:
        raise InvalidInstant(
            "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-21T10:00:00.250Z"
        )
    date, clock, frac, offset = match.group(1), match.group(2), match.group(3) or "", match.group(4).upper()
    leap = clock.endswith(":60")
    base = f"{date}T{clock[:-2] + '59' if leap else clock}{'+00:00' if offset == 'Z' else offset}"
    try:
        parsed = datetime.fromisoformat(base)
    except ValueError as exc:
        raise InvalidInstant(f"is not a valid date or time ({exc})") from None
    epoch_seconds = int(parsed.timestamp())
    if leap:
        if epoch_seconds % 86_400 != 86_399:
            raise InvalidInstant("has a leap second (:60) that does not fall at 23:59:60 UTC, where leap seconds are inserted")
        return _check_range(epoch_seconds * 1000 + 999)
    nanos = int((frac[1:] + "000000000")[:9]) if frac else 0
    return _check_range(epoch_seconds * 1000 + math.ceil(nanos / 1_000_000))


def parse_epoch_seconds(value: float | int) -> int:
    """Epoch seconds (integer or fractional) into epoch ms, keeping milliseconds.

    Sub-millisecond fractions round up, so the instant is never earlier than asked.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInstant("must be a number of epoch seconds or an RFC 3339 string")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInstant("must be a finite number")
    if isinstance(value, float) and abs(value) > MAX_EPOCH_MS / 1000 + 1:
        raise InvalidInstant(_RANGE_RULE)  # said before value * 1000 overflows to infinity
    return _check_range(value * 1000 if isinstance(value, int) else ceil_milliseconds(exact_decimal(value)))


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
        raise InvalidInstant(_RANGE_RULE)
    return epoch_ms
