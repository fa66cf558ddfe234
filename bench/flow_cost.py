"""What a limited delivery costs on top of an unlimited one: measured on the engine, then priced.

Each workload runs twice, each time in a fresh engine: to the default target without limits, then limited. Counting
starts once every timer is created and ends a second after the last delivery (the mapping's delete): every call of
the delivery side (the dispatcher, and the SQS mapping that feeds it; a receive that came back empty is a fixed
cost, left out) is counted by the item it touched and whether its condition refused it (:class:`ItemMeter`: the
write units of the actual items, ``bench.meter``), with the dispatcher's invocations, their billed time, its EMF
lines and its runtime log lines at the default level. What the limits added per delivery (limited minus unlimited)
is priced at on-demand list prices (``bench.pricing``). The target's own request is the target's cost, left out
as in the cost section.

Workloads: a rate alone with no backlog (one timer every ``idle_every_s``, slower than the rate); a rate with a
backlog (all due in one second); a rate and ``maxInFlight`` with a backlog; and, once the runtime reads
``perGroup`` (:func:`per_group_built`), a rate and per-group limits with a backlog spread over groups (the
unlimited run has the same groups, so a group's own writes are not counted as the limits').
"""

from __future__ import annotations

import collections
import math
import time
from typing import Any

from cdk_delayed_scheduler.local.deliveries import Recorder

from .common import BATCH_SIZE, BenchEngine, EngineOptions, HandlerTimes, api_client, item_statuses, log
from .fmt import usd
from .meter import CapacityMeter, LogMeter, RequestCounter
from .pricing import PRICES, bill

from scheduler_runtime.core.contract import PER_GROUP_FIELD  # noqa: E402  (bench.common puts lambda/ on the path)
from scheduler_runtime.core.flow import KEY_PREFIX, FlowLimits  # noqa: E402

CALLERS = ("dispatcher", "esm:sqs:dispatcher")
"""The delivery side: the dispatcher and the mapping that receives and deletes its messages."""
LEAD_S = 3.0
"""How far ahead of the first due time the timers are created (uncounted)."""


def per_group_built() -> bool:
    """Whether the runtime reads a target's ``perGroup`` limits (its ``FlowLimits`` differ with them)."""
    limits = {"rate": 20}
    return FlowLimits.of({"flowControl": {**limits, PER_GROUP_FIELD: {"rate": 5}}}) != FlowLimits.of({"flowControl": limits})


def item_label(service: str, operation: str, params: dict, error: BaseException | None) -> str:
    """The item a DynamoDB call touched (and ``, refused`` when its condition refused it); empty for other calls."""
    if service != "dynamodb":
        return ""
    pk = str(((params.get("Key") or params.get("Item") or {}).get("pk") or {}).get("S", ""))
    if pk.startswith(KEY_PREFIX):
        item = "a group's FLOW item" if "#" in pk[len(KEY_PREFIX):] else "the target's FLOW item"
    else:
        item = "the schedule's record" if pk.startswith("SCHEDULE#") else "another item"
    refused = (getattr(error, "response", None) or {}).get("Error", {}).get("Code") == "ConditionalCheckFailedException"
    return item + (", refused" if refused else "")


class ItemMeter(CapacityMeter):
    """A :class:`~bench.meter.CapacityMeter` whose sums name the item each DynamoDB call touched and whether its
    condition refused it (folded into the caller: ``caller<TAB>item``); an empty receive is not summed."""

    def after(self, raw: Any, caller: str, service: str, operation: str, params: dict, old: Any,
              result: dict | None, error: BaseException | None) -> None:
        if operation == "ReceiveMessage" and not (result or {}).get("Messages"):
            return
        label = item_label(service, operation, params, error)
        super().after(raw, f"{caller}\t{label}", service, operation, params, old, result, error)


def _due(kind: str, n: int, start: float, every_s: float) -> list[float]:
    return [round(start + k * every_s, 3) for k in range(n)] if kind == "idle" else [start + k / n for k in range(n)]


def scenario(kind: str, limits: dict | None, n: int, every_s: float, groups: int, counter: RequestCounter,
             meter: ItemMeter) -> dict:
    """One workload in a fresh engine: what the delivery side asked of AWS per delivery (``usage``, as
    ``pricing.bill`` reads it, and every call by label)."""
    recorder, times, logs = Recorder(), HandlerTimes(), LogMeter(counter)
    meter.forget()
    logs.install()
    try:
        with BenchEngine(EngineOptions(target=recorder, flow_control=limits), times) as engine:
            client = api_client(engine.api_url)
            start = math.ceil(time.time() + LEAD_S + n / 80)
            bodies: list[dict[str, Any]] = [{"id": f"c-{k}", "dueAt": due, "payload": {"k": k},
                       **({"group": f"g{k % groups}"} if kind == "grouped" else {})}
                      for k, due in enumerate(_due(kind, n, start, every_s))]
            for at in range(0, n, BATCH_SIZE):
                answer = client.raw("createScheduleBatch", {"schedules": bodies[at:at + BATCH_SIZE]})
                assert item_statuses(answer) == [201] * len(bodies[at:at + BATCH_SIZE]), answer.body
            time.sleep(max(0.0, start - 1.5 - time.time()))
            times.reset()
            counter.reset()
            logs.reset()
            counter.enabled = True
            recorder.wait_for({b["id"] for b in bodies}, 60 + 2 * n)
            time.sleep(1.0)  # the mapping's DeleteMessageBatch after the last delivery
            counter.enabled = False
            put_back = engine.stats.events.get("put_back", 0)
    finally:
        logs.uninstall()
    delivered = len(recorder.by_id())
    per = 1 / max(1, delivered)
    usage: dict[str, Any] = {"calls": collections.Counter(), "sqs": collections.Counter(), "wru": collections.Counter(),
                   "rru": collections.Counter(), "log_bytes": collections.Counter()}
    for (who, service, operation, _), sums in meter.snapshot().items():
        caller, _, item = who.partition("\t")
        if caller not in CALLERS:
            continue
        label = f"{operation} {item} ({caller})" if item else f"{operation} ({caller})"
        usage["calls"][label] += sums.get("calls", sums.get("chunks", 0)) * per
        for field, into in (("chunks", "sqs"), ("wru", "wru"), ("rru", "rru")):
            if sums.get(field):
                usage[into][label] += sums[field] * per
    ms = times.durations.get("dispatcher", [])
    usage["lambda"] = {"dispatcher": {"invocations": len(ms) * per, "billed_ms": sum(math.ceil(x) for x in ms) * per}}
    usage["log_bytes"]["EMF metric lines (dispatcher)"] = sum(times.metric_lines) * per
    usage["log_bytes"]["runtime log lines (dispatcher, WARNING+)"] = logs.bytes.get(("dispatcher", "default"), 0) * per
    return {"kind": kind, "n": n, "delivered": delivered, "put_back": put_back,
            "usage": {k: dict(v) if isinstance(v, collections.Counter) else v for k, v in usage.items()}}


def added(limited: dict, unlimited: dict) -> dict:
    """What the limits added per delivery: each quantity limited minus unlimited."""
    out: dict = {}
    for key in ("calls", "sqs", "wru", "rru", "log_bytes"):
        a, b = limited[key], unlimited[key]
        diff = {k: a.get(k, 0.0) - b.get(k, 0.0) for k in sorted(set(a) | set(b))}
        out[key] = {k: v for k, v in diff.items() if abs(v) > 1e-9}
    la, lb = limited["lambda"]["dispatcher"], unlimited["lambda"]["dispatcher"]
    out["lambda"] = {"dispatcher": {k: la[k] - lb[k] for k in ("invocations", "billed_ms")}}
    return out


def priced(add: dict) -> dict:
    """``pricing.bill`` of what the limits added per delivery, its dispatcher duration named per delivery."""
    out: dict[str, Any] = bill({"create_requests": 0, "create_request_bytes": 0, "access_log_bytes": {}, **add},
                               "direct")
    for row in out["rows"]:
        if row["item"].startswith("dispatcher duration"):
            row["item"] = (f"dispatcher duration ({PRICES['lambda_memory_mb']['dispatcher']} MB, "
                           f"{add['lambda']['dispatcher']['billed_ms']:+,.0f} ms a delivery)")
    return out


def workloads(rate: int, max_in_flight: int, groups: int) -> list[tuple[str, str, dict]]:
    """(name, kind of timers, limits) of each workload measured."""
    rows: list[tuple[str, str, dict]] = [
        ("rate only, idle", "idle", {"rate": rate}), ("rate only, backlog", "backlog", {"rate": rate}),
        ("rate + maxInFlight, backlog", "backlog", {"rate": rate, "maxInFlight": max_in_flight})]
    if per_group_built():
        rows.append((f"rate + perGroup, backlog over {groups} groups", "grouped",
                     {"rate": rate, PER_GROUP_FIELD: {"rate": max(1, rate // groups)}}))
    return rows


def run(idle_n: int, idle_every_s: float, backlog_n: int, rate: int, max_in_flight: int, groups: int,
        counter: RequestCounter) -> dict:
    """Each workload without limits (once per kind of timers), then limited; ``counter`` is installed."""
    meter = ItemMeter()
    counter.observers.append(meter)
    try:
        baselines: dict = {}
        rows = []
        for name, kind, limits in workloads(rate, max_in_flight, groups):
            n = idle_n if kind == "idle" else backlog_n
            if kind not in baselines:
                log(f"flow cost: {n} timers ({kind}) to a target without limits")
                baselines[kind] = scenario(kind, None, n, idle_every_s, groups, counter, meter)
            log(f"flow cost: {name}, {n} timers, limits {limits}")
            s = scenario(kind, limits, n, idle_every_s, groups, counter, meter)
            add = added(s["usage"], baselines[kind]["usage"])
            bill_ = priced(add)
            rows.append({"name": name, "limits": limits, **s, "added": add,
                         "rows": [{k: r[k] for k in ("group", "item", "quantity", "unit", "usd_od")} for r in bill_["rows"]],
                         "total_on_demand": bill_["total_on_demand"]})
            log(f"  ${bill_['total_on_demand']:.2f} per million limited deliveries on top")
    finally:
        counter.observers.remove(meter)
    return {"idle_every_s": idle_every_s, "rate": rate, "max_in_flight": max_in_flight, "groups": groups,
            "per_group_built": per_group_built(), "baselines": baselines, "rows": rows}


# --- the report ------------------------------------------------------------------------------------------------
def _timers(r: dict, every_s: float) -> str:
    how = f"one every {every_s:g} s" if r["kind"] == "idle" else "due in one second"
    return f"{r['delivered']} of {r['n']} {how}"


def figures(c: dict) -> dict:
    """The cost subsection: a row per workload, each itemised, the design's own figures priced the same way."""
    rows, items = [], []
    for r in c["rows"]:
        add, d = r["added"], r["added"]["lambda"]["dispatcher"]
        calls = "; ".join(f"{label} {v:+.2f}" for label, v in sorted(add["calls"].items()))
        rows.append([r["name"], _timers(r, c["idle_every_s"]), f"{r['put_back'] / max(1, r['n']):.2f}", calls or "none",
                     f"{d['invocations']:+.2f} / {d['billed_ms']:+,.0f}", f"**{usd(r['total_on_demand'])}**"])
        items.append({"part": "cost_items", "name": r["name"],
                      "rows": [[x["group"], x["item"], f"{x['quantity']:+.3g} {x['unit']}", usd(x["usd_od"])]
                               for x in r["rows"] if x["usd_od"]]})
    wru, rru = PRICES["ddb_od_per_million_wru"], PRICES["ddb_od_per_million_rru"]
    totals = "; ".join(f"{r['name']} {usd(r['total_on_demand'])}" for r in c["rows"])
    return {"part": "cost", "rate": c["rate"], "places": c["max_in_flight"], "rows": rows, "items": items,
            "write": usd(wru), "read": usd(rru), "rate_alone": usd(2 * wru), "place": usd(2 * wru),
            "grouped": None if c["per_group_built"] else {"part": "no_groups"},
            "summary_row": {"part": "cost_row", "totals": totals, "rate_alone": usd(2 * wru),
                            "both": usd(4 * wru)}}

