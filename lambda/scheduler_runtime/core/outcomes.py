"""Outcome events, pure: a deployment's outcome settings, the event each ended occurrence gets, and the delayer
message that carries one to the outcomes target.

An occurrence (a one-shot schedule, or one occurrence of a periodic timer) ends once, and its outcome event says
how: ``DELIVERED`` (its target answered), ``FAILED`` (parked after its retries, or refused for good), ``STALE``
(its lateness bound passed before an attempt could start) or, where a deployment asks for it, ``CANCELLED``. Each
event carries ``outcome``, ``id``, ``group``, ``target``, ``dueAt``, ``dedupeKey``, ``attempts`` (attempts
started) and ``endedAt``; a ``DELIVERED`` event ``firedAt``, ``latenessMs`` and ``answer`` (a short summary of
the target's answer), a ``FAILED`` or ``STALE`` one ``reason`` (and ``lastError`` when an attempt failed), a
``CANCELLED`` one ``reason``; with ``includePayload`` the payload too.

It is delivered at least once: a consumer drops repeats by ``(dedupeKey, outcome)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .contract import DEFAULT_OUTCOME_KINDS, FLOW_CONTROL_FIELD, OUTCOME_KINDS, OUTCOMES, target_description_problem
from .retry import STALE
from .states import _Text
from .timeparse import format_rfc3339_ms

MARKER: str = OUTCOMES["marker"]
"""The field that tells an outcome's delayer message from a delivery's: ``{"outcome": <event>}``."""
ANSWER_MAX_CHARS: int = OUTCOMES["answerMaxChars"]
PARK_REASON: str = OUTCOMES["parkReason"]


class Kind(_Text):
    """How an occurrence ended."""

    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    STALE = "STALE"
    CANCELLED = "CANCELLED"


assert tuple(Kind) == OUTCOME_KINDS, "contract.json's outcomes.kinds and Kind must list the same kinds"


class CancelReason(_Text):
    """Why a ``CANCELLED`` occurrence was cancelled."""

    CANCELLED = "cancelled"
    """``DELETE /schedules/{id}``."""
    GROUP_CANCELLED = "group cancelled"
    """``DELETE /groups/{group}``: at its start, by its sweep, or by the delivery start that read it."""
    DELETED = "deleted"
    """``DELETE /periodic/{id}``: the periodic timer's pending occurrence."""


@dataclass(frozen=True)
class Settings:
    """A deployment's outcomes (``OUTCOMES``): where they go, which kinds, and whether the payload rides along."""

    target: Mapping[str, Any]
    kinds: frozenset[str]
    include_payload: bool = False

    def wants(self, kind: Kind) -> bool:
        return kind in self.kinds

    @classmethod
    def from_json(cls, data: Any) -> "Settings":
        """The settings from ``OUTCOMES``' JSON; raises ``ValueError`` saying what is wrong."""
        problem = settings_problem(data)
        if problem is not None:
            raise ValueError(problem)
        return cls(target=data["target"], kinds=frozenset(data.get("kinds") or DEFAULT_OUTCOME_KINDS),
                   include_payload=bool(data.get("includePayload", False)))


def settings_problem(data: Any) -> str | None:
    """What is wrong with an ``OUTCOMES`` object (``{"target": <description>, "kinds": [...]?,
    "includePayload": bool?}``), or None. The construct renders it; the engine writes it by hand."""
    if not isinstance(data, Mapping):
        return "must be a JSON object with a target"
    unknown = sorted(set(data) - {"target", "kinds", "includePayload"})
    if unknown:
        return f"takes no {', '.join(unknown)} (only target, kinds and includePayload)"
    problem = target_description_problem(data.get("target"))
    if problem is not None:
        return f"target: {problem}"
    if FLOW_CONTROL_FIELD in data["target"]:
        return f"target: the outcomes target takes no {FLOW_CONTROL_FIELD} (its events are never held back)"
    kinds = data.get("kinds", list(DEFAULT_OUTCOME_KINDS))
    if not isinstance(kinds, list) or not kinds or any(kind not in OUTCOME_KINDS for kind in kinds):
        return f"kinds must be a non-empty list of {', '.join(OUTCOME_KINDS)}, got {kinds!r}"
    if not isinstance(data.get("includePayload", False), bool):
        return f"includePayload must be true or false, got {data.get('includePayload')!r}"
    return None


def kind_of_park(reason: str) -> Kind:
    """The outcome of an occurrence parked with ``reason``: ``STALE`` when its lateness bound ended it."""
    return Kind.STALE if reason.startswith(STALE) else Kind.FAILED


def event(kind: Kind, envelope: Mapping[str, Any], group: str | None, ended_ms: int, attempts: int,
          include_payload: bool, **details: Any) -> dict[str, Any]:
    """The outcome event of the occurrence ``envelope`` describes (its ``id``, ``dueAt``, ``dedupeKey``,
    ``target``, ``payload``); ``details`` are the kind's own fields (None values are left out)."""
    body: dict[str, Any] = {
        "outcome": str(kind), "id": envelope["id"], "group": group, "target": envelope["target"],
        "dueAt": envelope["dueAt"], "dedupeKey": envelope["dedupeKey"], "attempts": attempts,
        "endedAt": format_rfc3339_ms(ended_ms)}
    body.update((name, value) for name, value in details.items() if value is not None)
    if include_payload and "payload" in envelope:
        body["payload"] = envelope["payload"]
    return body


def answer_summary(**fields: Any) -> dict[str, Any]:
    """A target's answer, short: its fields (None left out), each text cut to :data:`ANSWER_MAX_CHARS`."""
    return {name: value[:ANSWER_MAX_CHARS] if isinstance(value, str) else value
            for name, value in fields.items() if value is not None}


def message_body(outcome: Mapping[str, Any]) -> str:
    """The delayer message that carries ``outcome`` to the outcomes target."""
    return json.dumps({MARKER: outcome}, separators=(",", ":"), ensure_ascii=False)


def is_outcome_message(data: Mapping[str, Any]) -> bool:
    return isinstance(data.get(MARKER), dict)


def park_reason(error: str) -> str:
    """The dead-letter reason of an outcome event its target never took."""
    return f"{PARK_REASON}: {error}"
