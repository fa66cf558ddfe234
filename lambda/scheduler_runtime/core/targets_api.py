"""``GET``/``PATCH /targets/{name}``, pure: a target's name and state as the API spells them, the rule of a
``PATCH`` body, and the answer both routes give.

A target is paused through its limits (:mod:`.flow`): a pause is a mark on the limited target's item, which every
start slot and every place among ``maxInFlight`` reads. A target without ``flowControl`` has no such item, so it
cannot be paused (409), and reading it costs nothing: it answers ``ACTIVE`` with no counts.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .contract import FLOW_CONTROL_FIELD, PER_GROUP_FIELD, TARGET_NAME_PATTERN
from .flow import TargetState
from .states import _Text
from .timeparse import format_rfc3339_ms
from .validation import GROUP_FIELD, ApiError, validate_group, validate_state_change

NAME_FIELD = "name"
"""The path parameter of ``/targets/{name}``: a target's name as the construct registered it."""
STATE_FIELD = "state"
"""The one field of a ``PATCH /targets/{name}`` body, and the answer's state."""
_NAME = re.compile(TARGET_NAME_PATTERN)


class TargetStateName(_Text):
    """A target's state: deliveries start (``ACTIVE``), or none starts until it is resumed (``PAUSED``)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"


STATES = tuple(TargetStateName)
"""The states a ``PATCH /targets/{name}`` may ask for."""


def validate_target_name(value: Any, field: str = NAME_FIELD) -> str:
    """A target name: 1-64 characters from A-Za-z0-9._:- (the contract's pattern); :class:`ApiError` naming ``field``."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ApiError(400, f"{field} must be a string of 1-64 characters from A-Za-z0-9._:-", field)
    return value


def validate_target_state(body: dict[str, Any]) -> TargetStateName:
    """A ``PATCH /targets/{name}`` body, ``{"state": "PAUSED"}`` or ``{"state": "ACTIVE"}``; :class:`ApiError` naming
    the field and the rule otherwise."""
    return TargetStateName(validate_state_change(body, STATES, STATE_FIELD))


def unknown_target(name: str) -> ApiError:
    return ApiError(404, f"target '{name}' not found: no target of this scheduler has that name", NAME_FIELD)


def not_pausable(name: str) -> ApiError:
    """The 409 of a ``PATCH`` to a target without limits, saying how to make it pausable."""
    return ApiError(409, f"target '{name}' has no {FLOW_CONTROL_FIELD}: a target is paused through its limits; give "
                         f"it {FLOW_CONTROL_FIELD} (e.g. maxInFlight) to pause it", STATE_FIELD)


def target_group(name: str, description: Mapping[str, Any], query: Mapping[str, Any]) -> str | None:
    """The group a ``GET /targets/{name}`` asks about (its ``group`` query parameter), None for the target itself:
    :class:`ApiError` naming the parameter for another one, a malformed group, or a group of a target without
    per-group limits (it has no group's item to read)."""
    unknown = sorted(set(query) - {GROUP_FIELD})
    if unknown:
        raise ApiError(400, f"'{unknown[0]}' is not a parameter of a target: it takes {GROUP_FIELD} alone", unknown[0])
    if GROUP_FIELD not in query:
        return None
    group = validate_group(query[GROUP_FIELD])
    if not (description.get(FLOW_CONTROL_FIELD) or {}).get(PER_GROUP_FIELD):
        raise ApiError(400, f"target '{name}' has no {FLOW_CONTROL_FIELD}.{PER_GROUP_FIELD}: only a target with "
                            f"per-group limits keeps a state per {GROUP_FIELD}", GROUP_FIELD)
    return group


def describe_target(name: str, description: Mapping[str, Any], state: TargetState | None,
                    group: str | None = None) -> dict[str, Any]:
    """The body ``GET`` and ``PATCH /targets/{name}`` answer: the target's state, its ``flowControl`` as described,
    and, read from its item (``state``; None for a target without limits), the deliveries waiting for a start slot
    (null without a rate), the places held now (null without ``maxInFlight``) and the end of a hold.

    With ``group`` (a target with per-group limits), ``waiting`` and ``inFlight`` are that group's, read from its
    own item and judged by ``perGroup``'s fields; the state and the hold are the target's, and ``group`` names it."""
    flow_control = description.get(FLOW_CONTROL_FIELD) or None
    if flow_control is None or state is None:
        return {NAME_FIELD: name, STATE_FIELD: TargetStateName.ACTIVE, FLOW_CONTROL_FIELD: None, "waiting": None,
                "inFlight": None, "heldUntil": None}
    counted = flow_control if group is None else flow_control[PER_GROUP_FIELD]
    return {
        NAME_FIELD: name, **({} if group is None else {GROUP_FIELD: group}),
        STATE_FIELD: TargetStateName.PAUSED if state.paused else TargetStateName.ACTIVE,
        FLOW_CONTROL_FIELD: dict(flow_control),
        "waiting": state.waiting if "rate" in counted else None,
        "inFlight": state.in_flight if "maxInFlight" in counted else None,
        "heldUntil": None if state.held_until_ms is None else format_rfc3339_ms(state.held_until_ms),
    }


__all__ = ["NAME_FIELD", "STATE_FIELD", "STATES", "TargetStateName", "describe_target", "not_pausable",
           "target_group", "unknown_target", "validate_target_name", "validate_target_state"]
