"""The cost section's tables at the dispatcher's simulated batch formation (``bench.cost_spread``): per million by
rate, the batch formation behind them, the monthly bill beside EventBridge Scheduler's, and the targets."""

from __future__ import annotations

from .report_cost import _exact, _met, _usd

_MODE = {"on_demand": "on demand", "provisioned": "provisioned (70 %)"}
PROVISIONED_NOTE = ("the 70 % utilisation is what `provisioned_capacity=TableCapacity.autoscaled(...)` holds the table "
                    "and its indexes at (its default target); `BillingMode.PROVISIONED` alone provisions a fixed 5 RCU / "
                    "5 WCU on the table and on its group index, which reaches it only at one traffic level")


def _col(col: str) -> str:
    return "full batches (heavy)" if col == "heavy" else f"{int(col):,}/s spread"


def _volume(n: float) -> str:
    return f"{n / 1e9:,.0f} B" if n >= 1e9 else f"{n / 1e6:,.0f} M"


def _rate(r: float) -> str:
    return f"{r:,.0f}" if r >= 10 else f"{r:.2g}"


def _cause(t: dict) -> str:
    """The bill's groups, largest first; for a missed target, by how much, and those that alone reach the limit."""
    shown = ", ".join(f"{g} {_usd(v)}" for g, v in t["groups"] if v)
    margin = t["limit"] - t["values"][t["worst"]]
    if t["met"]:
        return f"within it by {_exact(margin)} ({shown})"
    over = f"over by {_exact(-margin)} at {_col(t['worst'])}"
    if not t["alone"] or t["alone"] == len([v for _, v in t["groups"] if v]):
        return f"{over}, only with every group of the bill ({shown})"
    head = t["groups"][:t["alone"]]
    terms = " + ".join(f"{g} {_usd(v)}" for g, v in head)
    total = f" = {_usd(sum(v for _, v in head))}" if len(head) > 1 else ""
    verb = "are" if len(head) > 1 else "is"
    return (f"{over}: {terms}{total} {verb} already at or over the {_usd(t['limit'])} before the rest of the bill "
            f"({shown})")


def targets(c: dict) -> list[str]:
    sp = c.get("spread") or {}
    out = []
    for t in sp.get("targets", []):
        values = ", ".join(f"{_col(col)} {_exact(v)}" for col, v in t["values"].items())
        note = f"; {PROVISIONED_NOTE}" if t["mode"] == "provisioned" else ""
        out.append(f"- **Target: {t['what']}**: {values}; ≤ {_usd(t['limit'])}: {_met(t['met'])}. Cause: {_cause(t)}"
                   f"{note}.")
    return out + [""] if out else []


def target_rows(c: dict) -> list[str]:
    sp = c.get("spread") or {}
    rows = []
    for t in sp.get("targets", []):
        if list(t["values"]) == ["heavy"] and t["kind"] == "short, batch creates of 10":
            continue  # the headline's own row above
        values = " / ".join(_exact(v) for v in t["values"].values())
        cols = f" ({' / '.join(_col(col) for col in t['values'])})" if len(t["values"]) > 1 else ""
        note = " (`TableCapacity.autoscaled` at 70 %)" if t["mode"] == "provisioned" else ""
        rows.append(f"| cost per million, {t['what']}{cols}{note} | {values} | ≤ {_usd(t['limit'])}: "
                    f"{_met(t['met'])} | EventBridge Scheduler $1.00 (first 14 M a month free) |")
    return rows


def per_million(c: dict) -> list[str]:
    sp = c.get("spread")
    if not sp:
        return []
    cols = ["heavy", *(str(r) for r in sp["rates"])]
    out = [f"### By traffic: due times spread out, the dispatcher's batches simulated (HTTP API, 1 KB JSON payload)", "",
           "Lambda's SQS trigger invokes as soon as a receive returns, so due times that are spread out reach the "
           "dispatcher one or a few at a time, each invocation waiting out its own sub-second remainder. Here the "
           "dispatcher's invocations per timer (each with one receive and one delete) and its billed time come from "
           "the scale simulation's batch formation (`bench/scale/`, `scenarios.batch_formation`) for due times spread "
           "as Poisson arrivals at each rate; everything else is the measured bill of materials above. The "
           "simulation's two readings of the mapping's scaling (pollers scaled to the load, pollers at the maximum) "
           "bound the batch formation: each cell takes the costlier. The enqueuer is priced at full batches in every "
           "column (a sweep claims a minute's due timers at once); the create side is what the row says. "
           "**Full batches** is the heavy case: ten timers in every batch, the dispatcher's duration measured in the "
           "engine at ten messages (for every-minute periodic timers this overstates the wait: their occurrences "
           "surface 0.25 s early, not up to a second).", "",
           "| kind (provisioned 70 % / on demand, per million) | " + " | ".join(_col(col) for col in cols) + " |",
           "|---|" + "---|" * len(cols)]
    for kind, cells in sp["per_million"].items():
        out.append(f"| {kind} | " + " | ".join(
            f"{_usd(cells[col]['total_provisioned'])} / {_usd(cells[col]['total_on_demand'])}" for col in cols) + " |")
    out += ["", f"Provisioned figures: {PROVISIONED_NOTE}.", ""]
    out += _formation(sp)
    out += targets(c)
    return out


def _formation(sp: dict) -> list[str]:
    out = ["The batch formation priced (simulated; messages visible a random fraction of a second early, or 250 ms "
           "early for an every-minute periodic timer's occurrence, armed that long ahead):", "",
           "| due times a second | reading | visible early | mean batch | dispatcher invocations per timer | "
           "billed ms per invocation | billed ms per timer |", "|---|---|---|---|---|---|---|"]
    for f in sp["formations"]:
        if f["rate"] not in sp["rates"]:
            continue
        early = "random fraction" if f["early_s"] is None else f"{f['early_s'] * 1000:.0f} ms"
        reading = "pollers scaled to the load" if f["pollers"] == "scaled" else "pollers at the maximum"
        out.append(f"| {_rate(f['rate'])} | {reading} | {early} | {f['mean_batch']:.2f} | "
                   f"{f['invocations_per_timer']:.2f} | {f['billed_ms_per_invocation']:.0f} | "
                   f"{f['billed_ms_per_timer']:.0f} |")
    return out + [""]


def monthly(c: dict) -> list[str]:
    sp = c.get("spread")
    if not sp or not sp.get("monthly"):
        return []
    fm = c["fixed_monthly"]["http"]
    lead = sp["lead_month"]
    kms = sp["kms"]
    out = ["### The monthly bill, beside EventBridge Scheduler", "",
           "Per month (30 days) at each volume, due times spread evenly over the month as Poisson arrivals (the rate "
           "column), the dispatcher's batches simulated at that rate (the costlier reading), through the HTTP API with "
           "single creates, 1 KB JSON payloads, the idle floor below included "
           f"({_usd(fm['total_on_demand'])} on demand), and storage with point-in-time recovery (the construct's "
           f"default): a one-shot's record is kept {sp['retention_s'] / 3600:.0f} h after it fires (the history "
           f"retention), a long timer also waits {sp['long_lead_days']:.0f} day as its record and a timer item, a "
           "periodic timer is its definition (and, beyond the window, its pending timer item). Periodic rows count "
           "occurrences: an every-minute timer makes 43,200 a month, a daily cron 30. Provisioned: what the month "
           "consumes at 70 %, or the construct's 5 WCU / 5 RCU, whichever is higher, for each capacity "
           "(auto scaling assumed, as above). EventBridge Scheduler: $1.00 per million invocations, the first 14 million a month "
           "free, no fixed cost, at most one-minute precision.", "",
           "| timers (occurrences) a month | kind | due a second | dispatcher invocations per timer | storage + PITR | "
           "on demand | provisioned | EventBridge Scheduler |", "|---|---|---|---|---|---|---|---|"]
    for m in sp["monthly"].values():
        f = m["formation"]
        out.append(f"| {_volume(m['timers'])} | {m['kind']} | {_rate(f['rate'])} | {f['invocations_per_timer']:.2f} | "
                   f"{_usd(m['storage'])} | **{_usd(m['on_demand'])}** | {_usd(m['provisioned'])} | "
                   f"{_usd(m['eventbridge_scheduler'])} |")
    out += ["", f"**Storage per month of lead time**: a long timer waits as its record and a timer item, "
            f"{sp['stored_bytes']['record']:.0f} + {sp['stored_bytes']['timer']:.0f} bytes (measured, 100 bytes of "
            f"DynamoDB's per-item overhead included): {lead['gb_per_million']:.2f} GB per million timers waiting, "
            f"{_usd(lead['usd_per_million'])} a month with point-in-time recovery ({_usd(lead['usd_per_million_without_pitr'])} "
            "without). A timer created a month ahead adds that to its per-million price; one created a day ahead, "
            "a thirtieth of it.", "",
            f"**A customer managed KMS key** (the construct's `encryption_key`: the table and both queues; the default "
            f"is AWS owned and SQS managed keys, free): {_usd(kms['key'])} a month for the key, plus at most "
            f"{kms['requests']:,.0f} SQS data-key requests a month ({_usd(kms['requests_usd'])}: "
            "api, enqueuer and dispatcher, one each per 300 s reuse period while the queue is in use). DynamoDB's "
            "own requests for the table key are not counted: AWS does not publish how many it makes (it caches the "
            "key; not one request per item).", ""]
    return out
