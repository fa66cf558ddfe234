"""From measured scenarios (``bench.cost``) to usage per timer at a traffic level, and to the tables.

A traffic level is a number of timers ``b`` per batch at every batched step. Each billable
quantity is measured in the engine per the unit it scales with, then projected to ``b``:

- **per timer**: every DynamoDB call and its units (from the actual item sizes), a single
  create's SendMessage, the runtime's log lines, the share of sweep time spent claiming;
- **per create request** (``1/b`` per timer with batch create, 1 with single creates): the
  API Gateway request, its access log line, the api invocation and its measured duration, the
  api's SendMessageBatch;
- **per enqueuer / dispatcher invocation** (``1/b`` per timer): the invocation, the
  enqueuer's SendMessageBatch, the SQS mapping's ReceiveMessage and DeleteMessageBatch, the
  dispatcher's EMF line. Durations: the mean billed duration of the measured invocations
  that carried ``b`` messages (all scenarios pooled; ``b ± 1``, then ``b ± 2``, when fewer
  than five did); failing that, a least-squares line in ``b`` through all of them.

Not per timer: the sweeper's invocations, an empty sweep's duration and one Query per shard
per sweep, the SQS mapping's empty long polls, metrics: fixed monthly (``monthly.idle_floor``).
Free: the stream reads of the enqueuer's trigger. **The target's own cost is excluded
everywhere**: the dispatcher's Lambda Invoke of (or SQS send to) the target is billed as the
target's request; the time the dispatcher waits for a synchronous target is in its duration.
"""

from __future__ import annotations

import math
import statistics

from .common import distribution
from .monthly import idle_floor
from .pricing import PRICES, bill

_WRITE_OPS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
_PRICED_CALLERS = ("api", "sweeper", "enqueuer", "dispatcher", "esm:sqs:dispatcher")
_UNIT_OF = {("api", "SendMessageBatch"): "request", ("enqueuer", "SendMessageBatch"): "enqueuer",
            ("esm:sqs:dispatcher", "ReceiveMessage"): "dispatcher",
            ("esm:sqs:dispatcher", "DeleteMessageBatch"): "dispatcher"}
_CREATE_SIDE = ("api",)


def summarise(s: dict) -> dict:
    """Measured figures of one scenario, per timer (per cancel for the cancel scenario) and per unit."""
    n = max(1, s["n"] if s["cancel"] else s["delivered"])
    fns = s["functions"]
    units = {"timer": n, "request": max(1, s["create_requests"]),
             "enqueuer": len(fns.get("enqueuer", {}).get("ms", [])), "dispatcher": len(fns.get("dispatcher", {}).get("ms", []))}
    empty_receives = sum(c["count"] for c in s["calls"] if c["operation"] == "ReceiveMessage" and c["tag"] == "empty")
    count_of = {}
    for c in s["calls"]:
        if c["tag"] != "empty":
            count_of[(c["caller"], c["operation"])] = count_of.get((c["caller"], c["operation"]), 0) + c["count"]
    billable = []
    for c in s["capacity"]:
        if c["caller"] not in _PRICED_CALLERS or c["service"] not in ("dynamodb", "sqs"):
            continue
        unit = _UNIT_OF.get((c["caller"], c["operation"]), "timer")
        per = max(1, units[unit])
        chunks = c.get("chunks", 0) - (empty_receives if c["operation"] == "ReceiveMessage" else 0)
        calls = c["calls"] if c["service"] == "dynamodb" else count_of.get((c["caller"], c["operation"]), 0)
        row = {"caller": c["caller"], "service": c["service"], "operation": c["operation"], "item": c.get("item", ""),
               "unit": unit,
               "calls_per_unit": calls / per, "wru_per_unit": c.get("wru", 0) / per,
               "rru_per_unit": (c.get("rru_marginal", 0) if c["operation"] == "Query" else c.get("rru", 0)) / per,
               "chunks_per_unit": max(0, chunks) / per, "condition_failed_per_timer": c.get("condition_failed", 0) / n}
        if c["service"] == "dynamodb" and c["operation"] in _WRITE_OPS and calls:
            row["item_bytes_mean"] = c.get("item_bytes", 0) / calls
        billable.append(row)
    functions = {}
    for name, f in fns.items():
        functions[name] = {"invocations": len(f["ms"]), "records_mean": statistics.fmean(f["records"]) if f["records"] else 0,
                           "billed_ms_mean": statistics.fmean(math.ceil(x) for x in f["ms"]) if f["ms"] else 0,
                           "ms": distribution(f["ms"])}
    sweeper = fns.get("sweeper")
    if sweeper:
        pairs = list(zip(sweeper["ms"], sweeper["claimed"]))
        empty = [ms for ms, c in pairs if c == 0]
        busy = [ms for ms, c in pairs if c]
        empty_ms = statistics.median(empty) if empty else 0.0
        claims = sum(c or 0 for _, c in pairs)
        functions["sweeper"].update(
            empty_sweeps=len(empty), empty_ms_median=empty_ms, busy_sweeps=len(busy), claims=claims,
            claim_ms=max(0.0, sum(math.ceil(x) for x in busy) - len(busy) * empty_ms) / claims if claims else 0.0)
    writes = {f"{r['operation']} {r['item']} ({r['caller']})": r["calls_per_unit"] * units[r["unit"]] / n
              for r in billable if r["service"] == "dynamodb" and r["operation"] in _WRITE_OPS}
    return {
        "per": "cancel" if s["cancel"] else "timer", "n": n, "units": units,
        "calls_per_timer": [dict(c, per_timer=c["count"] / n) for c in s["calls"] if c["caller"] != "other"],
        "billable": billable, "functions": functions,
        "queries_per_sweep": (count_of.get(("sweeper", "Query"), 0) / len(sweeper["ms"])) if sweeper else None,
        "ddb_write_requests": sum(writes.values()), "ddb_write_requests_by_op": writes,
        "wru": sum(r["wru_per_unit"] * units[r["unit"]] for r in billable) / n,
        "metric_lines_per_dispatch": len(s["metric_lines"]) / units["dispatcher"] if units["dispatcher"] else 0,
        "metric_line_bytes": statistics.fmean(s["metric_lines"]) if s["metric_lines"] else 0,
        "log_bytes_per_timer": {k: v / n for k, v in s["log_bytes"].items()},
        "request_bytes_mean": statistics.fmean(s["request_bytes"]) if s["request_bytes"] else 0,
    }


def duration_pools(scenarios: dict) -> dict:
    """Every measured invocation of the enqueuer and the dispatcher: ``{function: [(records, ms)]}``."""
    pools: dict = {"enqueuer": [], "dispatcher": []}
    for s in scenarios.values():
        for name in pools:
            f = s["functions"].get(name)
            if f:
                pools[name].extend(zip(f["records"], f["ms"]))
    return pools


def one_shot_pools(scenarios: dict) -> dict:
    """:func:`duration_pools` of the one-shot scenarios that delivered (not the cancel's, not periodic ones)."""
    return duration_pools({k: s for k, s in scenarios.items() if not s["cancel"] and not s["path"].startswith("periodic")})


def billed_ms_at(pool: list, b: int, enough: int = 5) -> tuple[float, str]:
    """Mean billed ms of an invocation carrying ``b`` records, and how it was had.

    The invocations that carried exactly ``b``; when fewer than ``enough`` did, those within
    ``b ± 1``, then ``b ± 2``; when still too few, a least-squares line in the batch size.
    """
    for width in (0, 1, 2):
        near = [(r, math.ceil(ms)) for r, ms in pool if abs(r - b) <= width]
        if len(near) >= enough:
            sizes = sorted({r for r, _ in near})
            what = f"{sizes[0]}-{sizes[-1]} messages" if len(sizes) > 1 else f"{b} message{'s' if b != 1 else ''}"
            return statistics.fmean(ms for _, ms in near), f"measured, {len(near)} invocations of {what}"
    if len({r for r, _ in pool}) >= 2:
        xs, ys = [r for r, _ in pool], [math.ceil(ms) for _, ms in pool]
        slope, intercept = statistics.linear_regression(xs, ys)
        return max(1.0, intercept + slope * b), f"line fitted through {len(pool)} invocations of 1-{max(xs)} records"
    exact = [math.ceil(ms) for r, ms in pool if r == b]
    return (statistics.fmean(exact) if exact else 0.0), f"measured, {len(exact)} invocations"


def usage(create: dict, downstream: dict, b: int, pools: dict, access_log: dict, log_level: str = "default",
          formation: dict | None = None) -> dict:
    """Usage per timer for ``pricing.bill`` at ``b`` timers per downstream batch.

    The create side (per create request, ``create``'s own batch size) comes from ``create``, the
    rest from ``downstream``; both may be the same scenario. ``formation`` (a simulated batch
    formation, ``bench.scale.scenarios.batch_formation``) replaces ``b`` for the dispatcher: its
    invocations per timer (each one receive and one delete, and its EMF line) and billed ms.
    """
    cs, ds = create["summary"], downstream["summary"]
    per_unit = {"timer": 1.0, "request": 1.0 / create["per_request"], "enqueuer": 1.0 / b,
                "dispatcher": formation["invocations_per_timer"] if formation else 1.0 / b}
    out: dict = {"create_requests": per_unit["request"], "create_request_bytes": cs["request_bytes_mean"],
                 "access_log_bytes": access_log, "lambda": {}, "sqs": {}, "wru": {}, "rru": {}, "log_bytes": {},
                 "durations": {}}
    for part, create_side in ((cs, True), (ds, False)):
        for r in part["billable"]:
            if (r["caller"] in _CREATE_SIDE) != create_side:
                continue
            label = f"{r['operation']}{' ' + r['item'] if r['item'] else ''} ({r['caller']})"
            k = per_unit[r["unit"]]
            if r["service"] == "sqs" and r["chunks_per_unit"]:
                out["sqs"][label] = r["chunks_per_unit"] * k
            if r["service"] == "dynamodb" and r["wru_per_unit"]:
                out["wru"][label] = r["wru_per_unit"] * k
            if r["service"] == "dynamodb" and r["rru_per_unit"]:
                out["rru"][label + (": the timers' share of the pages" if r["operation"] == "Query" else "")] = \
                    r["rru_per_unit"] * k
        for key, value in part["log_bytes_per_timer"].items():
            caller, level = key.split("|")
            if (caller in _CREATE_SIDE) == create_side and caller in _PRICED_CALLERS and (
                    level == "default" or log_level == "info"):
                label = f"runtime log lines ({caller}, {'WARNING+' if level == 'default' else 'INFO'})"
                out["log_bytes"][label] = out["log_bytes"].get(label, 0) + value
    api = cs["functions"].get("api")
    if api:
        out["lambda"]["api"] = {"invocations": per_unit["request"], "billed_ms": api["billed_ms_mean"] * per_unit["request"]}
        out["durations"]["api"] = (api["billed_ms_mean"], f"measured, {api['invocations']} request{'s' if api['invocations'] != 1 else ''} "
                                              f"of {create['per_request']}")
    for name in ("enqueuer", "dispatcher"):
        if ds["functions"].get(name):
            ms, how = billed_ms_at(pools[name], b)
            if name == "dispatcher" and formation:
                ms, how = formation["billed_ms_per_invocation"], formation_text(formation)
            out["lambda"][name] = {"invocations": per_unit[name], "billed_ms": ms * per_unit[name]}
            out["durations"][name] = (ms, how)
    sweeper = ds["functions"].get("sweeper")
    if sweeper and sweeper.get("claims"):
        out["lambda"]["sweeper"] = {"invocations": 0.0, "billed_ms": sweeper["claim_ms"]}
        out["durations"]["sweeper"] = (sweeper["claim_ms"], f"per claim: busy sweeps minus an empty sweep, "
                                                            f"{sweeper['claims']} claims")
    if ds["metric_lines_per_dispatch"]:
        out["log_bytes"]["dispatcher EMF metric line"] = ds["metric_lines_per_dispatch"] * per_unit["dispatcher"] * (
            ds["metric_line_bytes"] + PRICES["cw_logs_event_overhead_bytes"])
    return out


def formation_text(f: dict) -> str:
    """How a simulated batch formation was had, in words."""
    lead = "a random fraction of a second" if f.get("early_s") is None else f"{f['early_s'] * 1000:.0f} ms"
    return (f"simulated: due times Poisson at {f['rate']:,.3g}/s, messages visible {lead} early, pollers "
            f"{'scaled to the load' if f['pollers'] == 'scaled' else 'at the maximum'}, {f['mean_batch']:.2f} a batch")


def _totals(b: dict) -> dict:
    return {"total_on_demand": b["total_on_demand"], "total_provisioned": b["total_provisioned"], "groups": b["groups"]}


def price_all(scenarios: dict, access_log: dict, levels: dict, headline_payload: str) -> dict:
    """Every published table, from the measured scenarios."""
    one_shots = {k: s for k, s in scenarios.items() if not s["path"].startswith("periodic")}
    pools = one_shot_pools(scenarios)
    grid: dict = {}
    for key, s in one_shots.items():
        if s["cancel"]:
            continue
        path, level, payload = key.split("/")
        u = usage(s, s, levels[level], pools, access_log)
        grid[key] = {"path": path, "level": level, "b": levels[level], "payload": payload, **_totals(bill(u, "http")),
                     "wru": sum(u["wru"].values()), "ddb_write_requests": s["summary"]["ddb_write_requests"],
                     "measured_batch": {n: f["records_mean"] for n, f in s["summary"]["functions"].items()
                                        if n in ("enqueuer", "dispatcher")},
                     "durations": u["durations"]}
    headline, extras, doors, writes = {}, {}, {}, {}
    for path in ("short", "long"):
        heavy = scenarios.get(f"{path}/heavy/{headline_payload}")
        sparse = scenarios.get(f"{path}/sparse/{headline_payload}")
        if heavy is None:
            continue
        b = levels["heavy"]
        u = usage(heavy, heavy, b, pools, access_log)
        headline[path] = {**bill(u, "http"), "durations": u["durations"]}
        extras[path] = {
            "lambda_platform_lines": bill(u, "http", platform_lines=True)["total_on_demand"] - headline[path]["total_on_demand"],
            "log_level_info": bill(usage(heavy, heavy, b, pools, access_log, "info"), "http")["total_on_demand"]
            - headline[path]["total_on_demand"],
            "target_lambda_invoke": PRICES["lambda_per_million_requests"],
            "target_sqs_send": PRICES["sqs_per_million_requests"],
        }
        doors[path] = {}
        for door in ("http", "rest", "direct"):
            for create, source in (("single", sparse), ("batch", heavy)):
                if source is not None:
                    doors[path][f"{door}/{create}"] = _totals(bill(usage(source, heavy, b, pools, access_log), door))
        summary = heavy["summary"]
        writes[path] = {"requests": summary["ddb_write_requests"], "by_op": summary["ddb_write_requests_by_op"],
                        "wru": sum(u["wru"].values())}
    long_heavy = scenarios.get(f"long/heavy/{headline_payload}")
    sw = long_heavy["summary"]["functions"].get("sweeper", {}) if long_heavy else {}
    sweep = {"empty_ms": sw.get("empty_ms_median", 0.0),
             "queries": (long_heavy["summary"]["queries_per_sweep"] if long_heavy else None) or 16}
    fixed = {door: idle_floor(sweep, door) for door in ("http", "rest", "direct")}
    cancel_bill = None
    if "cancel" in scenarios:
        c = scenarios["cancel"]
        u = usage(c, c, 1, pools, access_log)
        cancel_bill = {**_totals(bill(u, "http")), "wru": sum(u["wru"].values()),
                       "writes": c["summary"]["ddb_write_requests_by_op"]}
    targets = []
    for path, od_max, prov_max in (("short", 2.00, 1.00), ("long", 3.00, 1.50)):
        if path in headline:
            h = headline[path]
            targets.append({"path": path, "on_demand": h["total_on_demand"], "provisioned": h["total_provisioned"],
                            "on_demand_max": od_max, "provisioned_max": prov_max,
                            "writes": writes[path]["requests"], "writes_target": 2 if path == "short" else 4})
    return {"grid": grid, "headline": headline, "headline_extras": extras, "doors": doors, "writes_per_timer": writes,
            "periodic": periodic_bill(scenarios.get(f"periodic/heavy/{headline_payload}"), access_log),
            "periodic_long": periodic_bill(scenarios.get(f"periodic_long/heavy/{headline_payload}"), access_log),
            "fixed_monthly": fixed, "cancel": cancel_bill, "targets": targets, "access_log_bytes": access_log,
            "duration_pools": {k: {str(r): sum(1 for x, _ in v if x == r) for r in sorted({x for x, _ in v})}
                               for k, v in pools.items()},
            "anchors": {"eventbridge_scheduler": PRICES["eventbridge_scheduler_per_million"],
                        "eventbridge_scheduler_free_per_month": PRICES["eventbridge_scheduler_free_per_month"],
                        "stepfunctions_standard": PRICES["stepfunctions_standard_per_million_transitions"]
                        * PRICES["stepfunctions_transitions_per_timer"]}}


def periodic_bill(s: dict | None, access_log: dict) -> dict | None:
    """Per million occurrences of periodic timers (no create per occurrence, so no API charge), from
    the periodic scenario's own dispatcher durations, calls and units, at the batch size measured
    (occurrences armed at different moments surface one or two at a time, even when due together)."""
    if s is None:
        return None
    b = max(1, round(s["summary"]["functions"]["dispatcher"]["records_mean"]))
    u = usage(s, s, b, duration_pools({"periodic": s}), access_log)
    u["create_requests"] = 0.0
    summary = s["summary"]
    reads = {f"{r['operation']} {r['item']} ({r['caller']})": r["calls_per_unit"] for r in summary["billable"]
             if r["service"] == "dynamodb" and r["operation"] in ("GetItem", "Query", "BatchGetItem")}
    b = bill(u, "direct")
    return {**_totals(b), "writes": summary["ddb_write_requests_by_op"], "reads": reads,
            "emf_usd": sum(r["usd_od"] for r in b["rows"] if r["item"] == "dispatcher EMF metric line"),
            "wru": sum(u["wru"].values()), "rru": sum(u["rru"].values()), "sqs": u["sqs"],
            "durations": u["durations"], "occurrences": s["delivered"], "lateness_ms": s.get("lateness_ms"),
            "batch": s["summary"]["functions"]["dispatcher"]["records_mean"]}


INDEX_ENTRY_WRU = 1.0
"""A listing index entry is keys only (four short string attributes, about 100 bytes): one write unit."""


def listing_addon(cost: dict) -> dict:
    """What ``listing=True`` adds per million timers, from the measured record writes of each path.

    Each write of a record changes its listing keys (the create adds them, the delivery start
    removes them), and DynamoDB bills each change of a keys-only index entry as one index write.
    """
    out = {}
    for target in cost.get("targets", []):
        by_op = cost["writes_per_timer"][target["path"]]["by_op"]
        index_writes = sum(v for k, v in by_op.items() if k.startswith(("PutItem record", "UpdateItem record")))
        wru = index_writes * INDEX_ENTRY_WRU
        on_demand = wru * PRICES["ddb_od_per_million_wru"]
        provisioned = wru * 1e6 * PRICES["ddb_prov_wcu_hour"] / 3600 / PRICES["ddb_prov_utilisation"]
        out[target["path"]] = {"index_writes": index_writes, "on_demand": on_demand, "provisioned": provisioned,
                               "total_on_demand": target["on_demand"] + on_demand,
                               "total_provisioned": target["provisioned"] + provisioned}
    return out
