"""Listing, pure: the ``GET /schedules`` query, the opaque page token, and the index keys of a record.

With listing on, a record in a listed status carries two more attributes, the keys of a sparse,
keys-only index: ``listPk`` = ``<stored status>#<shard>`` (spread over ``shard_count``
partitions, so no index key is hot) and ``listSk`` = the due time and id, the same order as a
timer's sort key. A page queries each wanted partition for the next due times and merges them.

Listed: the pending statuses ``SCHEDULED`` and ``QUEUED``, and ``FAILED``. ``FIRED`` and
``CANCELLED`` records leave the index (one more index write each), and stay readable by id.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from . import states
from .contract import LISTING
from .keys import timer_sort_key
from .timeparse import MAX_EPOCH_MS, InvalidInstant, JsonNumber, parse_instant
from .validation import ApiError

STATUSES: tuple[str, ...] = tuple(LISTING["statuses"])
DEFAULT_LIMIT, MIN_LIMIT, MAX_LIMIT = (LISTING["limit"][k] for k in ("default", "min", "max"))
PAGE_PARAMETERS = ("limit", "nextToken")
"""The query parameters of every listing (``GET /schedules`` and ``GET /periodic``)."""
PARAMETERS = ("status", "dueAfter", "dueBefore", *PAGE_PARAMETERS)
"""The query parameters of ``GET /schedules``."""
EPOCH_SECONDS_PATTERN = r"^([0-9]+\.?[0-9]*|\.[0-9]+)$"
"""``dueAfter``/``dueBefore`` as epoch seconds (anything else is read as RFC 3339)."""
# ASCII digits: str.isdigit() also takes '²' and other scripts' digits, which int() refuses or misreads.
_EPOCH_SECONDS, _DIGITS = re.compile(EPOCH_SECONDS_PATTERN), re.compile("[0-9]+")
# Which stored statuses hold the records that may show as each listed status (a waiting timer's
# record stays stored as SCHEDULED once the sweeper has claimed it, and shows as QUEUED).
STORED_FOR: Mapping[str, tuple[str, ...]] = {
    states.SCHEDULED: (states.SCHEDULED,), states.QUEUED: (states.QUEUED, states.SCHEDULED), states.FAILED: (states.FAILED,)}
_FIRST_KEY, _LAST_KEY = "0", "9" * 15 + "$"
# Sort keys are "<15 digits>#<id>" and ids hold only A-Za-z0-9._:- (all above ','), so the
# cursor followed by ',' sorts after the cursor and before every key that follows it.
_AFTER = ","


@dataclass(frozen=True)
class ListQuery:
    status: str | None
    due_after_ms: int | None
    due_before_ms: int | None
    limit: int
    cursor: str | None
    """The sort key of the last item of the previous page."""

    @property
    def stored_statuses(self) -> tuple[str, ...]:
        return STORED_FOR[self.status] if self.status else STATUSES

    def key_range(self) -> tuple[str, str] | None:
        """The inclusive ``listSk`` range still to read; None when it is empty."""
        low = _FIRST_KEY if self.due_after_ms is None else timer_sort_key(self.due_after_ms, "").replace("#", "$")
        if self.cursor is not None:
            low = max(low, self.cursor + _AFTER)
        high = _LAST_KEY if self.due_before_ms is None else timer_sort_key(self.due_before_ms - 1, "").replace("#", "$")
        return (low, high) if low <= high else None

    def filters(self) -> list[Any]:
        return [self.status or "", self.due_after_ms, self.due_before_ms]


def partitions(query: ListQuery, shard_count: int) -> list[str]:
    return [f"{status}#{shard:02d}" for status in query.stored_statuses for shard in range(shard_count)]


def parse_list_query(params: dict[str, Any], token_key: str) -> ListQuery:
    """Validate ``GET /schedules`` parameters; :class:`ApiError` (400) names the parameter and the rule."""
    refuse_unknown(params, PARAMETERS)
    status = params.get("status") or None
    if status is not None and status not in STATUSES:
        raise ApiError(400, f"status must be one of {', '.join(STATUSES)} (FIRED and CANCELLED schedules "
                            "are not listed; read them by id)", "status")
    due_after, due_before = _instant(params, "dueAfter"), _instant(params, "dueBefore")
    filters = ListQuery(status, due_after, due_before, 0, None).filters()
    limit, cursor = page_position(params, token_key, filters)
    return ListQuery(status, due_after, due_before, limit, cursor)


def page_position(params: dict[str, Any], token_key: str, filters: list[Any]) -> tuple[int, str | None]:
    """``(limit, cursor)`` of a listing's ``limit`` and ``nextToken`` parameters, the token checked
    against the ``filters`` of the listing it is used with; :class:`ApiError` (400) otherwise."""
    limit_text = params.get("limit")
    limit = DEFAULT_LIMIT
    if limit_text is not None:
        if not _DIGITS.fullmatch(str(limit_text)) or not MIN_LIMIT <= int(limit_text) <= MAX_LIMIT:
            raise ApiError(400, f"limit must be a whole number from {MIN_LIMIT} to {MAX_LIMIT}", "limit")
        limit = int(limit_text)
    token = params.get("nextToken")
    if not token:
        return limit, None
    cursor, issued_for = read_token(token, token_key)
    if issued_for != filters:
        raise ApiError(400, "nextToken belongs to a listing with other filters; repeat the same parameters "
                            "with it, or start again without it", "nextToken")
    return limit, cursor


def refuse_unknown(params: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """400 naming the first query parameter that is not in ``allowed``."""
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ApiError(400, f"unknown query parameter '{unknown[0]}'; allowed are {', '.join(allowed)}", unknown[0])


def make_token(cursor: str, filters: list[Any], key: str) -> str:
    """An opaque page token: the position and the filters, with a keyed checksum."""
    body = base64.urlsafe_b64encode(json.dumps([cursor, filters], separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{body}.{_mac(body, key)}"


def read_token(token: str, key: str) -> tuple[str, list[Any]]:
    """``(cursor, filters)`` of a token this API issued; :class:`ApiError` for anything else."""
    error = ApiError(400, "nextToken is not a token this listing issued (changed, truncated or from "
                          "another scheduler); start again without it", "nextToken")
    body, _, mac = str(token).partition(".")
    if not body or not hmac.compare_digest(mac, _mac(body, key)):
        raise error
    try:
        cursor, filters = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, binascii.Error, TypeError):
        raise error from None
    if not isinstance(cursor, str) or not isinstance(filters, list):
        raise error
    return cursor, filters


def _mac(body: str, key: str) -> str:
    # Integrity, not secrecy: a token grants nothing the caller could not ask for with parameters.
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()[:32]


def _instant(params: dict[str, Any], name: str) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = str(raw)
    # Epoch seconds are read from their written digits (exactly, as a body's are); anything else is RFC 3339.
    value: object = text
    if _EPOCH_SECONDS.fullmatch(text):
        value = JsonNumber(text) if "." in text else int(text)
    try:
        parsed = parse_instant(value)
    except InvalidInstant as exc:
        raise ApiError(400, f"{name} {exc}", name) from None
    return min(parsed, MAX_EPOCH_MS)
