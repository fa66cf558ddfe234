"""``GET``/``PATCH /targets/{name}``: read a target's limits and state, pause it and resume it.

The router (:mod:`.api`) imports this module on the first call to a route under ``/targets``. Each call is thin over
the limited target's item (:class:`~..aws.flow.FlowStore`): one consistent read, and for a ``PATCH`` one write before
it (of each item, for a target whose limits are spread over several). A target without ``flowControl`` is answered
from the deployment's description alone, with no request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ..aws.flow import FlowStore
from ..core.flow import PAUSE_SETTLE_MS, FlowLimits
from ..core.targets_api import (NAME_FIELD, TargetStateName, describe_target, not_pausable, target_group,
                                unknown_target, validate_target_state)
from ..observability import log_event
from ._router import Answer, Call, Operations

OPERATIONS = Operations()


def _description(call: Call) -> tuple[str, Mapping[str, Any]]:
    """The target the path names and its description; 404 naming ``name`` for a name the deployment lacks."""
    name = call.params[NAME_FIELD]
    description = call.ctx.config.targets.get(name)
    if description is None:
        raise unknown_target(name)
    return name, description


def _answer(call: Call, name: str, description: Mapping[str, Any], group: str | None = None) -> Answer:
    limits = FlowLimits.of(description)
    if limits is None:
        return 200, describe_target(name, description, None)
    store, now_ms = FlowStore(call.ctx.dynamodb, call.ctx.config.table_name), call.ctx.clock.now_ms()
    state = store.state(name, limits, now_ms)
    if group is not None and limits.per_group is not None:  # the group's counts, the target's pause and hold
        counts = store.group_state(name, group, limits.per_group, now_ms)
        state = replace(counts, paused=state.paused, held_until_ms=state.held_until_ms)
    return 200, describe_target(name, description, state, group)


@OPERATIONS.answers("getTarget")
def get_target(call: Call) -> Answer:
    """A target's state, limits and counts (estimates read from its one item): 200, or 404 for an unknown name.
    With ``group``, a target with per-group limits answers that group's counts (a second read, of its item)."""
    name, description = _description(call)
    return _answer(call, name, description, target_group(name, description, call.request.query))


@OPERATIONS.answers("updateTarget")
def update_target(call: Call) -> Answer:
    """Pause or resume a limited target: 200 with its state after the write (the state it already has again changes
    nothing); 409 for a target without limits, which has nothing a pause could mark.

    Once a pause is answered, no start slot and no place is given: a delivery waiting for room looks again every
    ``HELD_POLL_SECONDS`` and starts after the resume, never dropped; one already started finishes.
    """
    state = validate_target_state(call.request.json_body())
    name, description = _description(call)
    limits = FlowLimits.of(description)
    if limits is None:
        raise not_pausable(name)
    paused = state == TargetStateName.PAUSED
    FlowStore(call.ctx.dynamodb, call.ctx.config.table_name).set_paused(name, limits, paused, call.ctx.clock.now_ms())
    if paused:  # a delivery that read the target just before the pause starts within this: answered after it
        call.ctx.clock.sleep(PAUSE_SETTLE_MS / 1000)
    log_event("target_paused" if paused else "target_resumed", target=name)
    return _answer(call, name, description)


__all__ = ["OPERATIONS", "get_target", "update_target"]
