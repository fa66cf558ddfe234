"""``TableCapacity``: the Schedules table's provisioned capacity (``provisioned_capacity``), fixed or
auto scaled, for the table and each of its global secondary indexes alike, and the synth warning on a
capacity left to its default."""

from __future__ import annotations

from typing import Any, Optional

from aws_cdk import Token

from ._validation import check_range

__all__ = ["TableCapacity"]

#: The least provisioned capacity a table or an index takes, in units.
MIN_CAPACITY_UNITS = 1
#: Application Auto Scaling's range for a DynamoDB target utilisation, in percent.
TARGET_UTILIZATION_PERCENT = (20, 90)
#: The target utilisation of ``TableCapacity.autoscaled()`` when not given (as ``Capacity.autoscaled``'s).
DEFAULT_TARGET_UTILIZATION_PERCENT = 70
#: The id of the synth warning on a provisioned table whose read or write capacity is left to its default;
#: ``Annotations.of(scheduler).acknowledge_warning`` takes it.
CAPACITY_DEFAULTED_WARNING = "cdk-delayed-scheduler:provisionedCapacityDefaulted"
#: The table writes of a short timer, one write unit each up to 1 KB: the api's record, the dispatcher's FIRED write.
SHORT_TIMER_WRITES = 2

#: Only the factories hold it: ``TableCapacity`` is never built directly.
_FACTORY = object()


class TableCapacity:
    """The provisioned capacity of the Schedules table and of each of its global secondary indexes
    (``ByGroup`` always, ``ByStatus`` with ``listing=True``), with ``BillingMode.PROVISIONED`` only:
    ``TableCapacity.fixed(read=..., write=...)`` or ``TableCapacity.autoscaled(max_read=...,
    max_write=..., target_utilization_percent=...)``.

    Example::

        DelayedScheduler(self, "Timers", target=target, billing_mode=BillingMode.PROVISIONED,
                         provisioned_capacity=TableCapacity.autoscaled(max_read=100, max_write=200))

    A capacity left to its default (``BillingMode.PROVISIONED`` alone, a ``read_capacity`` or
    ``write_capacity`` alone, or ``fixed()`` without a unit) gets a synth warning,
    ``TableCapacity.DEFAULTED_WARNING``.
    """

    DEFAULTED_WARNING = CAPACITY_DEFAULTED_WARNING

    def __init__(self, key: object = None, /, *, min_read: Optional[int], min_write: Optional[int],
                 max_read: Optional[int] = None,
                 max_write: Optional[int] = None, target_utilization_percent: Optional[float] = None) -> None:
        if key is not _FACTORY:
            raise TypeError("TableCapacity is built with its factories: TableCapacity.fixed(...) or "
                            "TableCapacity.autoscaled(...)")
        self.min_read: Optional[int] = min_read
        """Read capacity units: the fixed ones (``None``: the default, 5), or the least auto scaling goes
        down to (and the units the table and each index are created with)."""
        self.min_write: Optional[int] = min_write
        """Write capacity units: the fixed ones (``None``: the default, 5), or the least auto scaling goes
        down to (and the units the table and each index are created with)."""
        self.max_read: Optional[int] = max_read
        """The most read capacity units auto scaling goes up to; ``None`` when fixed."""
        self.max_write: Optional[int] = max_write
        """The most write capacity units auto scaling goes up to; ``None`` when fixed."""
        self.target_utilization_percent: Optional[float] = target_utilization_percent
        """The consumed share of the provisioned capacity auto scaling holds; ``None`` when fixed."""

    @staticmethod
    def fixed(*, read: Optional[int] = None, write: Optional[int] = None) -> TableCapacity:
        """The same capacity at all times: a request beyond it is throttled (and retried by the SDK).

        :param read: read capacity units of the table and of each index. Allowed: >= 1. Default: 5.
        :param write: write capacity units of the table and of each index. Allowed: >= 1. Default: 5.
        """
        check_range("read", read, MIN_CAPACITY_UNITS, None)
        check_range("write", write, MIN_CAPACITY_UNITS, None)
        return TableCapacity(_FACTORY, min_read=read, min_write=write)

    @staticmethod
    def autoscaled(*, max_read: int, max_write: int, min_read: int = MIN_CAPACITY_UNITS,
                   min_write: int = MIN_CAPACITY_UNITS,
                   target_utilization_percent: float = DEFAULT_TARGET_UTILIZATION_PERCENT) -> TableCapacity:
        """Application Auto Scaling holds the consumed share of each capacity near the target, between
        the minimum and the maximum: one target tracking policy for reads and one for writes, on the
        table and on each index (``Table/ReadScaling``, ``Table/WriteScaling``,
        ``Table/<index>ReadScaling``, ``Table/<index>WriteScaling``), through Application Auto Scaling's
        service-linked role for DynamoDB (the stack creates no role). Scaling follows traffic over
        minutes: DynamoDB raises capacity after two consecutive minutes above the target and lowers it
        after fifteen below, so a sudden burst beyond the current capacity and DynamoDB's burst
        capacity is throttled until then (the DynamoDB developer guide, "Managing throughput capacity
        automatically with DynamoDB auto scaling").

        :param max_read: the most read capacity units of the table, and of each index. Allowed: >= ``min_read``.
        :param max_write: the most write capacity units of the table, and of each index. Allowed: >= ``min_write``.
        :param min_read: the least read capacity units; the table and each index are created with
            them. Allowed: >= 1. Default: 1.
        :param min_write: the least write capacity units; the table and each index are created with
            them. Allowed: >= 1. Default: 1.
        :param target_utilization_percent: the consumed share of the provisioned capacity to hold, in
            percent. Allowed: 20-90, not a token. Default: 70.
        """
        check_range("min_read", min_read, MIN_CAPACITY_UNITS, None)
        check_range("min_write", min_write, MIN_CAPACITY_UNITS, None)
        _check_max("max_read", max_read, "min_read", min_read)
        _check_max("max_write", max_write, "min_write", min_write)
        low, high = TARGET_UTILIZATION_PERCENT
        if Token.is_unresolved(target_utilization_percent):
            raise ValueError(f"target_utilization_percent: must be a number ({low}-{high}), not a token: "
                             "aws-cdk-lib checks it when it builds the scaling policy")
        check_range("target_utilization_percent", target_utilization_percent, low, high, unit="percent")
        return TableCapacity(_FACTORY, min_read=min_read, min_write=min_write, max_read=max_read, max_write=max_write,
                             target_utilization_percent=target_utilization_percent)

    @property
    def is_autoscaled(self) -> bool:
        """Whether Application Auto Scaling adjusts this capacity (``TableCapacity.autoscaled()``)."""
        return self.target_utilization_percent is not None

    def __repr__(self) -> str:
        if not self.is_autoscaled:
            given = {"read": self.min_read, "write": self.min_write}
            return f"TableCapacity.fixed({', '.join(f'{k}={v!r}' for k, v in given.items() if v is not None)})"
        return (f"TableCapacity.autoscaled(min_read={self.min_read!r}, max_read={self.max_read!r}, "
                f"min_write={self.min_write!r}, max_write={self.max_write!r}, "
                f"target_utilization_percent={self.target_utilization_percent!r})")


def defaulted_capacity_warning(capacity: TableCapacity, default_units: int) -> Optional[str]:
    """The warning on a provisioned ``capacity`` whose reads or writes take ``default_units``, the fixed
    default, because no one stated them: what the table gets, and how to state it; ``None`` when both
    are stated."""
    defaulted = [kind for kind, units in (("read", capacity.min_read), ("write", capacity.min_write)) if units is None]
    if not defaulted:
        return None
    given = " and ".join(f"{default_units} {kind}" for kind in defaulted)
    beyond = (f"{default_units} write units take about {default_units / SHORT_TIMER_WRITES:g} short timers a second "
              f"(each writes the table {SHORT_TIMER_WRITES} times), and creates and deliveries beyond that are "
              "throttled" if "write" in defaulted else "reads beyond them are throttled")
    return (f"billing_mode=BillingMode.PROVISIONED with no {' or '.join(defaulted)} capacity stated: the table and "
            f"each index get a fixed {given} units and no auto scaling; {beyond}. State it with "
            "provisioned_capacity=TableCapacity.autoscaled(max_read=..., max_write=...), or "
            "TableCapacity.fixed(read=..., write=...) for a fixed capacity, to have this warning go.")


def _check_max(prop: str, value: Any, low_prop: str, low: Any) -> None:
    if value is None:
        raise ValueError(f"{prop}: required: the most capacity units auto scaling may provision, e.g. 100")
    check_range(prop, value, MIN_CAPACITY_UNITS, None)
    if not any(Token.is_unresolved(v) for v in (value, low)) and value < low:
        raise ValueError(f"{prop}: must be >= {low_prop} ({low}), got {value}")

