"""Cron occurrences without a timer item: the DynamoDB requests of each way a definition could carry its next
occurrence beyond the window to the sweeper, counted by DynamoDB's billing rules and priced by the one price table.

Today (the runtime as built, measured by the Cost section's "beyond the window" scenario, ``periodic_long``), an
occurrence's dispatcher reads the definition (one strongly consistent read), advances it (an ``UpdateItem``: the
start's fence and the pointer to the next occurrence) and puts the next occurrence's timer item (a ``PutItem``),
which the sweeper later claims (a conditional ``DeleteItem``; its stream record carries it to the enqueuer).

The alternatives let the sweeper find the *definition* by its next due time instead. DynamoDB finds an item by a
value only through its key or an index's key, and bills an index's write as a table write: a put of the entry when
the indexed attribute appears, a delete when it goes, both when it changes
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes).
Or the sweeper reads every definition at every sweep. Whatever finds it, the claim stays: a sweep runs every minute
over a window of up to fifteen minutes, so without a write that takes the occurrence out of the next sweep's reach
it would be enqueued again at each.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .operation_costs import DELETE, GET, PUT, QUERY, UPDATE, priced_calls
from .pricing import PRICES

from scheduler_runtime.core.contract import DEFAULT_DELAY_WINDOW_SECONDS  # noqa: E402

INDEX_WRITE = "dynamodb.IndexWrite"
"""A write to a global secondary index's entry (a put or a delete), billed as one write unit of the table."""

DEFINITION_BYTES = 1024
"""A definition's size: a 1 KB JSON payload's definition."""

SWEEP_INTERVAL_S = 60
"""The sweeper's schedule (once a minute)."""

REPEATS = DEFAULT_DELAY_WINDOW_SECONDS // SWEEP_INTERVAL_S
"""Sweeps after the first that find an unclaimed occurrence again, under the default window: each enqueues it again,
and the dispatcher reads the definition to refuse it (one strongly consistent read, the least each repeat costs; its
message, receive, delete and invocation are left out, so that design's price is a floor)."""

DAY_S, HOUR_S = 86_400, 3_600


def sweep_reads(period_s: int) -> float:
    """Read units that sweeping every definition spends per occurrence of one with period ``period_s``: its share of
    the Query pages of every sweep in a period (eventually consistent, half a unit per 4 KB)."""
    return period_s / SWEEP_INTERVAL_S * DEFINITION_BYTES / 4096 / 2


@dataclass(frozen=True)
class Design:
    name: str
    calls: tuple[tuple[str, float], ...]
    """The DynamoDB requests (and index writes) of one occurrence, as ``(call, count)``."""
    why: str

    @property
    def counter(self) -> Counter[str]:
        counted: Counter[str] = Counter()
        for call, count in self.calls:
            counted[call] += count
        return counted


TODAY = Design(
    "today: a timer item per occurrence",
    ((GET, 1), (UPDATE, 1), (PUT, 1), (DELETE, 1)),
    "the dispatcher's read and advance of the definition, the next occurrence's timer item, the sweeper's claim")

DESIGNS = (
    TODAY,
    Design("the definition in a sparse due-time index, claimed by an update",
           ((GET, 1), (UPDATE, 1), (INDEX_WRITE, 1), (UPDATE, 1), (INDEX_WRITE, 1)),
           "the advance sets the due attribute (the index puts the entry); the claim removes it (an update of the "
           "definition, and the index deletes the entry)"),
    Design("the definition in a due-time index, moved by the advance and never claimed",
           ((GET, 1), (UPDATE, 1), (INDEX_WRITE, 2), (GET, REPEATS)),
           f"the advance changes the indexed due time (the index deletes the old entry and puts the new one); with no "
           f"claim, each of the next {REPEATS} sweeps enqueues the occurrence again and the dispatcher reads the "
           "definition to refuse it (a floor: those messages' own requests left out)"),
    Design("every definition swept, claimed by an update: a daily cron",
           ((GET, 1), (UPDATE, 1), (UPDATE, 1), (QUERY, sweep_reads(DAY_S))),
           "the advance; the claim; the sweeps' Query pages read the definition once a minute all day"),
    Design("every definition swept, claimed by an update: an hourly cron",
           ((GET, 1), (UPDATE, 1), (UPDATE, 1), (QUERY, sweep_reads(HOUR_S))),
           "the advance; the claim; the sweeps' Query pages read the definition once a minute all hour"),
)


def break_even_period_s() -> float:
    """The period below which sweeping every definition costs less than a timer item: where its reads per occurrence
    cost what the timer item's extra write does (on demand; provisioned units keep the same 5:1 ratio)."""
    write, read = PRICES["ddb_od_per_million_wru"], PRICES["ddb_od_per_million_rru"]
    return (write / read) / sweep_reads(1)


def priced() -> list[dict]:
    """Each design's requests and its DynamoDB cost per million occurrences, on demand and provisioned (70 %)."""
    out = []
    for design in DESIGNS:
        p = priced_calls(design.counter, 0)
        counted = design.counter
        out.append({"design": design.name, "why": design.why,
                    "wru": sum(n for call, n in counted.items() if call not in (GET, QUERY)),
                    "rru": counted[GET] + counted[QUERY], "on_demand": p["calls_on_demand"],
                    "provisioned": p["provisioned"]})
    return out
