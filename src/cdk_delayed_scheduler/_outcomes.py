"""``Outcomes``: where each occurrence's outcome event goes (the ``outcomes`` prop), which kinds are sent, and
whether the payload rides along; and the ``OUTCOMES`` object the functions read, which the construct renders
from it once its target is bound to the dispatcher."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from ._contract import contract
from ._validation import describe
from .outcome import OutcomeKind
from .targets import IScheduleTarget, check_target

__all__ = ["Outcomes", "OutcomeKind", "outcomes_of"]

#: The prop every refusal here names.
PROP = "outcomes"
#: The kinds sent when ``kinds`` is not given: contract.json's ``outcomes.defaultKinds`` (CANCELLED is opt-in).
DEFAULT_KINDS: tuple[OutcomeKind, ...] = tuple(OutcomeKind(kind) for kind in contract.DEFAULT_OUTCOME_KINDS)
_ALLOWED = ", ".join(f"OutcomeKind.{kind.name}" for kind in OutcomeKind)


class Outcomes:
    """Outcome events, one per occurrence when it ends, sent to ``target``: ``DELIVERED`` (its target
    answered), ``FAILED`` (parked after its retries), ``STALE`` (its lateness bound passed first) and, when
    asked, ``CANCELLED``. Each event is ``{"outcome", "id", "group", "target", "dueAt", "dedupeKey",
    "attempts", "endedAt", ...}`` (``cdk_delayed_scheduler.outcome`` types it), sent at least once: drop
    repeats by ``(dedupeKey, outcome)``. Only the dispatcher sends them, so only it is granted the target;
    a failing outcomes target never delays or fails a delivery, and an event it never takes is parked in
    the dead-letter queue (reason ``outcome: ...``).

    Example::

        DelayedScheduler(self, "Timers", target=targets.LambdaInvoke(fn),
                         outcomes=Outcomes(targets.SqsSendMessage(outcomes_queue),
                                           kinds=[OutcomeKind.DELIVERED, OutcomeKind.FAILED, OutcomeKind.STALE,
                                                  OutcomeKind.CANCELLED]))

    :param target: where the events go, any kind of target: e.g. ``targets.SqsSendMessage(queue)`` or
        ``targets.EventBridgePutEvents(bus, detail_type=..., source=...)``.
    :param kinds: the kinds of outcome sent, each an ``OutcomeKind`` (or its value, ``"CANCELLED"``), once
        each; an occurrence whose kind is not among them ends without an event. Default: ``DELIVERED``,
        ``FAILED`` and ``STALE`` (``CANCELLED`` is opt-in).
    :param include_payload: whether each event carries the schedule's payload (``payload``). Default: false.
    """

    def __init__(self, target: IScheduleTarget, *, kinds: Optional[Sequence[OutcomeKind]] = None,
                 include_payload: bool = False) -> None:
        check_target(PROP, target)
        if getattr(target, "flow_control", None) is not None:
            raise ValueError(f"{PROP}: the outcomes target takes no flow_control (its events are never held back); "
                             f"leave it out of {type(target).__name__}(...)")
        self.target: IScheduleTarget = target
        """Where the events go; bound to the dispatcher as a delivery target is."""
        self.kinds: tuple[OutcomeKind, ...] = DEFAULT_KINDS if kinds is None else _kinds(kinds)
        """The kinds of outcome sent, in ``OutcomeKind``'s order."""
        if not isinstance(include_payload, bool):
            raise ValueError(f"{PROP}.include_payload: must be a bool, True or False, got {describe(include_payload)}")
        self.include_payload: bool = include_payload
        """Whether each event carries the schedule's payload."""

    def settings(self, target_description: Mapping[str, Any]) -> dict[str, Any]:
        """The ``OUTCOMES`` object the functions read, with ``target_description``, the bound target's
        description as ``TARGETS`` holds it (it may hold tokens)."""
        return {"target": dict(target_description), "kinds": [kind.value for kind in self.kinds],
                "includePayload": self.include_payload}

    def __repr__(self) -> str:
        kinds = ", ".join(f"OutcomeKind.{kind.name}" for kind in self.kinds)
        return (f"Outcomes({type(self.target).__name__}(...), kinds=[{kinds}], "
                f"include_payload={self.include_payload})")


def _kinds(kinds: Any) -> tuple[OutcomeKind, ...]:
    """``kinds`` as ``OutcomeKind``s in the enum's order: a non-empty sequence, each kind once."""
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, Sequence):
        raise ValueError(f"{PROP}.kinds: must be a list of OutcomeKind, e.g. [OutcomeKind.DELIVERED, "
                         f"OutcomeKind.FAILED], got {describe(kinds)}")
    if not kinds:
        raise ValueError(f"{PROP}.kinds: must name at least one kind ({_ALLOWED}); to send no outcome events, "
                         "leave the outcomes prop out")
    given: list[OutcomeKind] = []
    for value in kinds:
        try:
            kind = OutcomeKind(value)
        except ValueError:
            raise ValueError(f"{PROP}.kinds: each must be one of {_ALLOWED}, got {describe(value)}") from None
        if kind in given:
            raise ValueError(f"{PROP}.kinds: {kind.value} is given more than once")
        given.append(kind)
    return tuple(kind for kind in OutcomeKind if kind in given)


def outcomes_of(value: Optional[Union[IScheduleTarget, Outcomes]]) -> Optional[Outcomes]:
    """The ``outcomes`` prop as ``Outcomes``: a bare target is ``Outcomes(target)``, with the default kinds and
    no payload; ``None`` stays ``None`` (no outcome events)."""
    if value is None or isinstance(value, Outcomes):
        return value
    check_target(PROP, value, also="Outcomes(...)")
    return Outcomes(value)
