"""Validation of API input into a normalized create request.

Every rule produces an :class:`ApiError` naming the field and the rule, so the
api handler answers 4xx with ``{"message", "field"}`` and never a 5xx.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from . import contract
from .contract import DEFAULT_MAX_RECEIVE_COUNT, GROUP_PATTERN, ID_PATTERN, MAX_BATCH_SIZE, MAX_PAYLOAD_BYTES, RETRY_MAX_AGE_SECONDS
from .retry import FIELD as RETRY
from .retry import MAX_AGE_SECONDS, MAX_ATTEMPTS, MAX_LATENESS, POLICY_FIELDS, RetryPolicy
from .timeparse import MAX_EPOCH_MS, InvalidInstant, JsonNumber, ceil_milliseconds, exact_decimal, parse_instant

GROUP_FIELD = "group"
ALLOWED_FIELDS = ("id", "dueAt", "delaySeconds", "payload", "target", RETRY, MAX_LATENESS, GROUP_FIELD)
DOT_SEGMENTS = (".", "..")
"""Ids the id pattern allows but no URL path can carry: HTTP clients remove them as dot segments (RFC 3986),
so ``GET /schedules/..`` is sent as ``GET /``. A create refuses them; a read or cancel still takes them
(a direct invoke can name one created before this rule)."""
# MAX_BATCH_SIZE (contract.json): ten 256 KiB payloads fit Lambda's 6 MB invocation limit even
# after API Gateway escapes the body into its event; the construct's request model allows the same.


class ApiError(Exception):
    """A client error: HTTP ``status``, a ``message`` stating the rule, the ``field``."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field

    def body(self) -> dict[str, Any]:
        return {"message": self.message, "field": self.field}


@dataclass(frozen=True)
class CreateRequest:
    """A validated ``POST /schedules`` body."""

    schedule_id: str
    due_ms: int
    payload_json: str
    target: str
    request_hash: bytes
    """The first 16 bytes of a SHA-256 of the normalized body: what tells a replay from a conflict."""
    id_generated: bool
    retry: RetryPolicy | None = None
    """The body's ``retry``, None when it gave none (the deployment's defaults apply)."""
    group: str | None = None
    """The body's ``group``, None when it gave none."""
    max_lateness_seconds: int | None = None
    """The body's ``maxLatenessSeconds``, None when it gave none (the deployment's, if any, applies)."""


def canonical_json(value: Any) -> str:
    """Compact, key-sorted JSON: the stored form of a payload and the hash input."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False)


def parse_json_body(raw: str | None) -> dict[str, Any]:
    """The request body as a JSON object; numbers with a fraction or an exponent keep their digits.

    They are :class:`~.timeparse.JsonNumber` floats: instants and durations are read from the
    digits as written (never rounded down), and payloads serialize exactly as plain floats would.
    """
    if raw is None or raw.strip() == "":
        raise ApiError(400, "request body is required and must be a JSON object", "body")
    try:
        body = json.loads(raw, parse_float=JsonNumber, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"request body is not valid JSON ({_short(exc)})", "body") from None
    if not isinstance(body, dict):
        raise ApiError(400, "request body must be a JSON object", "body")
    return body


def validate_schedule_id(value: Any, field: str = "id") -> str:
    if not isinstance(value, str):
        raise ApiError(400, f"{field} must be a string of 1-128 characters from A-Za-z0-9._:-", field)
    if not ID_PATTERN.fullmatch(value):  # match() would take a trailing newline: the pattern ends with $
        if not 1 <= len(value) <= 128:
            raise ApiError(400, f"{field} must be 1-128 characters long (got {len(value)})", field)
        position, bad = next((i, c) for i, c in enumerate(value) if not ID_PATTERN.match(c))
        raise ApiError(400, f"{field} may hold only A-Za-z0-9._:- (got {bad!r} at position {position})", field)
    return value


def validate_new_id(value: Any, field: str = "id") -> str:
    """The id of a schedule or periodic timer being created: :func:`validate_schedule_id`, and not a dot segment."""
    new_id = validate_schedule_id(value, field)
    if new_id in DOT_SEGMENTS:
        raise ApiError(400, f"{field} may not be '.' or '..': a URL path cannot carry them (dot segments)", field)
    return new_id


def validate_create(body: dict[str, Any], now_ms: int, targets: Iterable[str], default_target: str, *,
                    max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT) -> CreateRequest:
    """Validate a create body against the API contract; raise :class:`ApiError` on the first rule broken.
    ``max_receive_count``: the deployment's, the most ``retry.maxAttempts`` may be."""
    unknown = sorted(set(body) - set(ALLOWED_FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field '{unknown[0]}'; allowed fields are {', '.join(ALLOWED_FIELDS)}", unknown[0])

    id_generated = "id" not in body
    schedule_id = str(uuid.uuid4()) if id_generated else validate_new_id(body["id"])

    due_ms, timing = validate_timing(body, now_ms)
    payload_json = validate_payload(body)
    target = validate_target(body, targets, default_target)
    retry = validate_retry(body, max_receive_count)
    group = optional_group(body)
    max_lateness = validate_max_lateness(body)

    # A body without retry, group or bound hashes as it always did, so its replays still match records written before.
    hashed = {"id": schedule_id, **timing, "payload": payload_json, "target": target, **retry_hashed(retry),
              **group_hashed(group), **({} if max_lateness is None else {MAX_LATENESS: max_lateness})}
    request_hash = hashlib.sha256(canonical_json(hashed).encode("utf-8")).digest()[:16]
    return CreateRequest(schedule_id, due_ms, payload_json, target, request_hash, id_generated, retry, group,
                         max_lateness)


def validate_max_lateness(body: dict[str, Any]) -> int | None:
    """The body's ``maxLatenessSeconds``: a whole number of seconds in the contract's range (``30`` and ``30.0``
    are one), None when absent; :class:`ApiError` naming the field else."""
    if MAX_LATENESS not in body:
        return None
    bounds = contract.MAX_LATENESS_SECONDS
    return _whole_number(body[MAX_LATENESS], MAX_LATENESS, bounds.min, bounds.max, "seconds")


def validate_group(value: Any, field: str = GROUP_FIELD) -> str:
    """A group name: 1-64 characters from A-Za-z0-9._:- (an id's alphabet); :class:`ApiError` naming ``field``."""
    if not isinstance(value, str) or not GROUP_PATTERN.fullmatch(value):
        raise ApiError(400, f"{field} must be a string of 1-64 characters from A-Za-z0-9._:-", field)
    return value


def optional_group(body: dict[str, Any]) -> str | None:
    """The body's ``group``, None when absent."""
    return validate_group(body[GROUP_FIELD]) if GROUP_FIELD in body else None


def group_hashed(group: str | None) -> dict[str, Any]:
    """What a body's ``group`` adds to its request hash: nothing when absent."""
    return {} if group is None else {GROUP_FIELD: group}


def validate_timing(body: dict[str, Any], now_ms: int) -> tuple[int, dict[str, int | float]]:
    """The due time of exactly one of ``dueAt`` or ``delaySeconds`` (from ``now_ms``), and the field as the request
    hash holds it (``{"dueAt": ms}`` or ``{"delaySeconds": seconds}``)."""
    has_due, has_delay = "dueAt" in body, "delaySeconds" in body
    if has_due == has_delay:
        raise ApiError(400, "exactly one of dueAt or delaySeconds is required", "dueAt")
    if has_due:
        try:
            due_ms = parse_instant(body["dueAt"])
        except InvalidInstant as exc:
            raise ApiError(400, f"dueAt {exc}", "dueAt") from None
        return due_ms, {"dueAt": due_ms}
    delay = body["delaySeconds"]
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay):
        raise ApiError(400, "delaySeconds must be a number of seconds >= 0", "delaySeconds")
    if delay < 0:
        raise ApiError(400, "delaySeconds must be >= 0", "delaySeconds")
    if delay * 1000 > MAX_EPOCH_MS - now_ms:
        raise ApiError(400, "delaySeconds puts dueAt after 9999-12-31T23:59:59.999Z", "delaySeconds")
    delay_ms = ceil_milliseconds(exact_decimal(delay))
    due_ms = now_ms + delay_ms
    if due_ms > MAX_EPOCH_MS:
        raise ApiError(400, "delaySeconds puts dueAt after 9999-12-31T23:59:59.999Z", "delaySeconds")
    return due_ms, {"delaySeconds": seconds_of(delay_ms)}


@dataclass(frozen=True)
class RescheduleRequest:
    """A validated ``PATCH /schedules/{id}`` body."""

    due_ms: int
    payload_json: str | None
    """The new payload in its stored form; None when the body leaves the payload as it is."""
    request_hash: bytes
    """What tells a repeated PATCH (the same body: answered as it was, nothing changed) from a new one."""


RESCHEDULE_FIELDS = ("dueAt", "delaySeconds", "payload")


def validate_reschedule(body: dict[str, Any], now_ms: int) -> RescheduleRequest:
    """Validate a reschedule body: exactly one of ``dueAt`` or ``delaySeconds``, and ``payload`` if it changes."""
    unknown = sorted(set(body) - set(RESCHEDULE_FIELDS))
    if unknown:
        raise ApiError(400, f"field '{unknown[0]}' cannot be changed by a reschedule; allowed fields are "
                            f"{', '.join(RESCHEDULE_FIELDS)}", unknown[0])
    due_ms, timing = validate_timing(body, now_ms)
    payload_json = validate_payload(body) if "payload" in body else None
    hashed = {**timing, **({} if payload_json is None else {"payload": payload_json})}
    request_hash = hashlib.sha256(canonical_json(hashed).encode("utf-8")).digest()[:16]
    return RescheduleRequest(due_ms, payload_json, request_hash)


def validate_state_change(body: dict[str, Any], allowed: tuple[str, ...], field: str = "state") -> str:
    """A ``PATCH`` body that sets a state (``{"state": "PAUSED"}``), and nothing else: the state; :class:`ApiError`
    naming the field and the rule otherwise."""
    unknown = sorted(set(body) - {field})
    if unknown:
        raise ApiError(400, f"unknown field '{unknown[0]}'; the only field is {field}", unknown[0])
    state = body.get(field)
    if state not in allowed:
        raise ApiError(400, f"{field} is required and must be one of {', '.join(allowed)}", field)
    return str(state)


def seconds_of(milliseconds: int) -> int | float:
    """A duration as the request hash holds it: what it means, in seconds, whatever its spelling.

    ``5``, ``5.0`` and ``5.0000`` are one request (``5``), as are ``2.5`` and ``2.50`` (``2.5``),
    and the hash of an integer, or of a fraction of at most three decimals, is the one it always was.
    """
    return milliseconds // 1000 if milliseconds % 1000 == 0 else milliseconds / 1000


def validate_payload(body: dict[str, Any]) -> str:
    """The body's ``payload`` (required, any JSON, at most 256 KiB serialized) in its stored, canonical form."""
    if "payload" not in body:
        raise ApiError(400, "payload is required (any JSON value, at most 256 KiB serialized)", "payload")
    try:
        payload_json = canonical_json(body["payload"])
        size = len(payload_json.encode("utf-8"))
    except (UnicodeEncodeError, RecursionError, ValueError):
        raise ApiError(400, "payload must be JSON that encodes as UTF-8 (no lone surrogates, bounded nesting)", "payload") from None
    if size > MAX_PAYLOAD_BYTES:
        raise ApiError(413, f"payload is {size} bytes serialized; the limit is {MAX_PAYLOAD_BYTES} bytes (256 KiB)", "payload")
    return payload_json


def validate_target(body: dict[str, Any], targets: Iterable[str], default_target: str) -> str:
    """The body's ``target``: a registered target name, the default one when absent."""
    registered = list(targets)
    target = body.get("target", default_target)
    if not isinstance(target, str) or target not in registered:
        raise ApiError(400, f"target must be a registered target name: {', '.join(sorted(registered))}", "target")
    return target


def validate_retry(body: dict[str, Any], max_receive_count: int) -> RetryPolicy | None:
    """The body's ``retry``, None when absent; :class:`ApiError` naming ``retry`` or ``retry.<field>`` else."""
    if RETRY not in body:
        return None
    value = body[RETRY]
    shape = f"{{\"{MAX_ATTEMPTS}\": n, \"{MAX_AGE_SECONDS}\": s}} (either or both)"
    if not isinstance(value, dict) or not value:
        raise ApiError(400, f"{RETRY} must be an object {shape}", RETRY)
    unknown = sorted(set(value) - set(POLICY_FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field '{RETRY}.{unknown[0]}'; {RETRY} takes {', '.join(POLICY_FIELDS)}",
                       f"{RETRY}.{unknown[0]}")
    return RetryPolicy(
        max_attempts=_retry_limit(value, MAX_ATTEMPTS, 1, max_receive_count, "this deployment's max_receive_count"),
        max_age_seconds=_retry_limit(value, MAX_AGE_SECONDS, RETRY_MAX_AGE_SECONDS.min, RETRY_MAX_AGE_SECONDS.max,
                                     "seconds"),
    )


def retry_hashed(retry: RetryPolicy | None) -> dict[str, Any]:
    """What a body's ``retry`` adds to its request hash: nothing when absent, its fields as numbers otherwise
    (``3`` and ``3.0`` are one request)."""
    return {} if retry is None else {RETRY: retry.to_json()}


def _retry_limit(value: dict[str, Any], name: str, low: int, high: int, what: str) -> int | None:
    """``value[name]``: a whole number in ``low..high`` (``3`` and ``3.0`` are one), None when absent."""
    if name not in value:
        return None
    return _whole_number(value[name], f"{RETRY}.{name}", low, high, what)


def _whole_number(number: Any, field: str, low: int, high: int, what: str) -> int:
    """``number``, the value of ``field``: a whole number in ``low..high`` (``3`` and ``3.0`` are one)."""
    rule = f"{field} must be a whole number from {low} to {high} ({what})"
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ApiError(400, rule, field)
    if not low <= number <= high:  # before any exact arithmetic: 1e400 is inf
        raise ApiError(400, f"{rule}, got {number}", field)
    if exact_decimal(number) != int(number):
        raise ApiError(400, f"{rule}, got {number}", field)
    return int(number)


def batch_items(body: dict[str, Any]) -> list[Any]:
    """The ``schedules`` list of a batch create body: 1-10 items, each validated on its own later."""
    unknown = sorted(set(body) - {"schedules"})
    if unknown:
        raise ApiError(400, f"unknown field '{unknown[0]}'; a batch body is {{\"schedules\": [...]}}", unknown[0])
    items = body.get("schedules")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH_SIZE:
        raise ApiError(400, f"schedules must be a list of 1-{MAX_BATCH_SIZE} schedule bodies", "schedules")
    return items


def in_batch(error: ApiError, index: int) -> ApiError:
    """The same error, its field named within a batch: ``schedules[3].dueAt``."""
    field = f"schedules[{index}]" + (f".{error.field}" if error.field else "")
    return ApiError(error.status, f"schedules[{index}]: {error.message}", field)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _short(exc: Exception) -> str:
    return str(exc).split("\n", 1)[0][:120]
