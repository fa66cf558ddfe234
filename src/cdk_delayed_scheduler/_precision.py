"""``DeliveryPrecision``: how close to its due time a schedule is delivered, an enum-like class."""

from __future__ import annotations

from typing import ClassVar

from ._contract import contract

__all__ = ["DeliveryPrecision"]


class DeliveryPrecision:
    """How close to its due time a schedule is delivered (the functions' ``PRECISION``); never early either way.

    - ``DeliveryPrecision.SUB_SECOND`` (the default): the delayer message surfaces up to a second (plus
      ``dispatcher_max_batching_window``) before it is due, and the dispatcher waits out the rest: tens
      of milliseconds late, and the wait is billed dispatcher time.
    - ``DeliveryPrecision.SECOND``: the message is delayed by the whole seconds left rounded up and
      delivered on arrival, with no billed wait: up to about a second late (plus
      ``dispatcher_max_batching_window``, while the mapping gathers a batch).

    Example::

        DelayedScheduler(self, "Timers", target=target, precision=DeliveryPrecision.SECOND)
    """

    NAMES: ClassVar[tuple[str, ...]] = contract.PRECISIONS
    SUB_SECOND: ClassVar[DeliveryPrecision]
    SECOND: ClassVar[DeliveryPrecision]

    def __init__(self, name: str) -> None:
        self.name: str = name
        """The precision's name, as the functions read it (``"SUB_SECOND"``, ``"SECOND"``)."""

    @staticmethod
    def of(name: str) -> DeliveryPrecision:
        """A precision from its name, in any case (``"second"``).

        :param name: SUB_SECOND or SECOND.
        """
        if not isinstance(name, str) or name.upper() not in DeliveryPrecision.NAMES:
            raise ValueError(f"precision: must be one of {', '.join(DeliveryPrecision.NAMES)}, got {name!r}")
        return DeliveryPrecision(name.upper())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeliveryPrecision) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"DeliveryPrecision.{self.name}"


for _name in DeliveryPrecision.NAMES:
    setattr(DeliveryPrecision, _name, DeliveryPrecision(_name))
