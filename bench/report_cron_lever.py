"""The cost section's subsection on cron occurrences without a timer item, from ``bench.cron_lever`` (no run
needed): each design's DynamoDB requests per occurrence beyond the window, priced."""

from __future__ import annotations

from .cron_lever import REPEATS, SWEEP_INTERVAL_S, break_even_period_s, priced

from scheduler_runtime.core.contract import DEFAULT_DELAY_WINDOW_SECONDS  # noqa: E402


def section(measured: dict | None) -> list[str]:
    """The subsection (``###``, inside the cost section). ``measured``: the Cost section's ``periodic_long``
    scenario, whose write and read units per occurrence stand beside today's count."""
    rows = priced()
    today = rows[0]
    cheaper = [r["design"] for r in rows[1:] if r["on_demand"] < today["on_demand"]]
    out = ["### Lever: cron occurrences without a timer item (counted, not built)", "",
           "An occurrence beyond the window (an hourly or daily cron) goes through a timer item: the dispatcher "
           "reads and advances the definition and puts the next occurrence's timer item, which the sweeper claims "
           "with a conditional delete. The lever was to let the definition carry its next occurrence through the "
           "sweep instead. `bench/cron_lever.py` counts each way of doing that by DynamoDB's billing rules, rendered "
           "with the report (no run needed): the sweeper finds a definition by its due time only through a key or an "
           "index's key (an index's write is billed as a table write: a put when the indexed attribute appears, a "
           "delete when it goes, both when it changes), or by reading every definition; and the claim is what keeps "
           f"the next sweep (every {SWEEP_INTERVAL_S} s, over a window of up to {REPEATS} sweeps) from enqueueing the "
           "occurrence again. 1 KB definitions.", "",
           "| design | what an occurrence writes and reads | write units | read units | DynamoDB per million, "
           "on demand | provisioned (70 %) |",
           "|---|---|---|---|---|---|"]
    for row in rows:
        out.append(f"| {row['design']} | {row['why']} | {row['wru']:g} | {row['rru']:,.3g} | ${row['on_demand']:.3f} | "
                   f"${row['provisioned']:.3f} |")
    even = break_even_period_s()
    out += ["", (f"- **Today's count is the measured one**: the Cost section's beyond-the-window scenario wrote "
                 f"{measured['wru']:.2f} write units and read {measured['rru']:.2f} read units per occurrence (the "
                 "definition's read and its share of the sweeper's Query pages)." if measured else
                 "- Today's count is the Cost section's beyond-the-window scenario's (not run here)."),
            f"- **Sweeping every definition** costs less than a timer item only for periods under "
            f"{even / 60:.0f} minutes, where its reads cost less than the write it saves; periods up to the window "
            f"({DEFAULT_DELAY_WINDOW_SECONDS} s) never have a timer item at all. Its reads are paid by every "
            "definition, whatever its period: a table of daily crons would pay the daily row for each occurrence.",
            "- **Not built.** " + (f"Cheaper than today in this table: {', '.join(cheaper)}. " if cheaper else
                                   "No design in this table costs less than today's. ")
            + "An occurrence needs one write that makes the next one findable by its due time, one that claims it "
            "for a single enqueue and one that fences its start against a pause or a delete, and DynamoDB cannot "
            "move an item or an index entry to a new due time in place. The only saving found is for periods of "
            f"{DEFAULT_DELAY_WINDOW_SECONDS // 60}-{even / 60:.0f} minutes, bought with reads that every other "
            "definition in the table pays too.", ""]
    return out
