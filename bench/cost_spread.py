"""Cost per million and per month with the dispatcher's batches as the deployed pipeline forms them.

Lambda's SQS trigger invokes as soon as a receive returns, so due times spread out reach the
dispatcher one or a few at a time, each invocation waiting out its own sub-second remainder. The
scale simulation (``bench.scale``) forms those batches for due times spread as Poisson arrivals;
here its invocations and billed time per timer replace the full batches of the heavy case in the
measured bill of each kind of timer (``costmodel.usage``'s ``formation``). The simulation's two
readings of the mapping's scaling (pollers scaled to the load, pollers at the maximum) bound the
batch formation; each price takes the costlier of the two.
"""

from __future__ import annotations

from . import monthly
from .costmodel import usage
from .pricing import SECONDS_PER_MONTH, bill
from .scale import cost as scale_cost
from .scale import scenarios as scale_scenarios

RATES = (1, 10, 100, 1000)  # due times a second, spread as Poisson arrivals
VOLUMES = (1_000_000, 14_000_000, 100_000_000, 1_000_000_000)  # timers (or occurrences) a month
READINGS = ("scaled", "max")
LONG_LEAD_DAYS = 1.0  # the monthly bill's long timers wait this long as a record and a timer item
FULL_BATCH = 10

# kind: (create scenario, downstream scenario, whether its messages surface early by the periodic arming lead)
KINDS = {
    "short, single creates": ("short/sparse", "short/heavy", False),
    "short, batch creates of 10": ("short/heavy", "short/heavy", False),
    "long, single creates": ("long/sparse", "long/heavy", False),
    "long, batch creates of 10": ("long/heavy", "long/heavy", False),
    "periodic, every minute (within the window)": ("periodic/heavy", "periodic/heavy", True),
    "periodic, daily cron (beyond the window)": ("periodic_long/heavy", "periodic_long/heavy", False),
}
MONTHLY_KINDS = ("short, single creates", "long, single creates", "periodic, every minute (within the window)",
                 "periodic, daily cron (beyond the window)")
OCCURRENCES_PER_MONTH = {"periodic, every minute (within the window)": SECONDS_PER_MONTH / 60,
                         "periodic, daily cron (beyond the window)": 30}


# (target, kind, the columns it is judged in (None: every column), billing mode, USD per million at most)
TARGETS = (
    ("short timers, 10 a second spread out, single creates, HTTP API, on demand", "short, single creates", ("10",),
     "on_demand", 2.00),
    ("short timers, heavy traffic (full batches, batch creates of 10), provisioned with auto scaling (70 %)",
     "short, batch creates of 10", ("heavy",), "provisioned", 1.00),
    ("daily-cron periodic occurrences, on demand", "periodic, daily cron (beyond the window)", None, "on_demand", 2.00),
)


def formations(profile: dict, rates: list[float], arm_lead_s: float) -> list[dict]:
    """The simulated batch formation at each rate, under both readings, for messages that surface a
    random fraction of a second early (one-shots, and occurrences enqueued from a timer item) and
    ``arm_lead_s`` early (occurrences of a periodic timer armed within the window)."""
    return [scale_scenarios.batch_formation(profile, rate, pollers, early_s) for rate in rates for early_s in (None, arm_lead_s)
            for pollers in READINGS]


def dispatcher_usd(f: dict) -> float:
    """USD per timer of what a formation prices: the invocations, their receives and deletes, the billed time."""
    return scale_cost.dispatcher_usd(f["invocations_per_timer"], f["billed_ms_per_timer"], f["invocations_per_timer"])


def costlier(forms: list[dict], rate: float, early: bool) -> dict:
    """The costlier of the two readings at ``rate`` for messages surfacing early by the arming lead or not."""
    at = [f for f in forms if f["rate"] == rate and (f["early_s"] is not None) == early]
    if not at:
        raise LookupError(f"no simulated batch formation at {rate}/s")
    return max(at, key=dispatcher_usd)


def bill_kind(scenarios: dict, kind: str, payload: str, pools: dict, access_log: dict, formation: dict | None) -> dict:
    create, downstream, _ = KINDS[kind]
    u = usage(scenarios[f"{create}/{payload}"], scenarios[f"{downstream}/{payload}"], FULL_BATCH, pools, access_log,
              formation=formation)
    if kind.startswith("periodic"):
        u["create_requests"] = 0.0  # a definition is PUT once; its occurrences make no request
    return {**bill(u, "http"), "durations": u["durations"], "wru": sum(u["wru"].values())}


def stored_bytes(scenarios: dict, payload: str) -> dict:
    """Bytes each item takes in the table (its measured size, plus DynamoDB's 100 bytes an item)."""
    def size(key: str, caller: str, operation: str, item: str) -> float:
        rows = (scenarios.get(f"{key}/{payload}") or {}).get("summary", {}).get("billable", [])
        sizes = [r["item_bytes_mean"] for r in rows if (r["caller"], r["operation"], r["item"]) == (caller, operation, item)
                 and "item_bytes_mean" in r]
        return (sizes[0] + 100) if sizes else 0.0

    return {"record": max(size("short/heavy", "api", "PutItem", "record"),
                          size("short/heavy", "dispatcher", "UpdateItem", "record")),
            "timer": size("long/heavy", "api", "PutItem", "timer"),
            "definition": size("periodic_long/heavy", "dispatcher", "UpdateItem", "definition"),
            "periodic_timer": size("periodic_long/heavy", "dispatcher", "PutItem", "timer")}


def stored_gb(kind: str, timers: float, sizes: dict, retention_s: float) -> float:
    """The table's mean size over a month of ``timers`` of ``kind``: a one-shot's record is kept for the
    history retention after it fires (then TTL deletes it, free); a long timer also waits
    ``LONG_LEAD_DAYS`` as a record and a timer item; a periodic timer is its definition (and, beyond
    the window, its pending timer item) for as long as it runs."""
    month = SECONDS_PER_MONTH
    if kind.startswith("periodic"):
        definitions = timers / OCCURRENCES_PER_MONTH[kind]
        per = sizes["definition"] + (sizes["periodic_timer"] if "beyond" in kind else 0.0)
        return definitions * per / 2**30
    held = timers * sizes["record"] * retention_s / month
    if kind.startswith("long"):
        held += timers * (sizes["record"] + sizes["timer"]) * LONG_LEAD_DAYS * 86400 / month
    return held / 2**30


def price(scenarios: dict, forms: list[dict], pools: dict, access_log: dict, payload: str, floor: dict,
          retention_s: float) -> dict:
    """The per-million table (full batches and each rate) and the monthly bill at each volume."""
    kinds = [k for k, (c, d, _) in KINDS.items() if f"{c}/{payload}" in scenarios and f"{d}/{payload}" in scenarios]
    per_million: dict = {}
    for kind in kinds:
        early = KINDS[kind][2]
        cells = {"heavy": _totals(bill_kind(scenarios, kind, payload, pools, access_log, None))}
        for rate in RATES:
            f = costlier(forms, rate, early)
            b = bill_kind(scenarios, kind, payload, pools, access_log, f)
            cells[str(rate)] = {**_totals(b), "formation": f}
        per_million[kind] = cells
    sizes = stored_bytes(scenarios, payload)
    month: dict = {}
    for kind in (k for k in MONTHLY_KINDS if k in kinds):
        for n in VOLUMES:
            f = costlier(forms, n / SECONDS_PER_MONTH, KINDS[kind][2])
            b = bill_kind(scenarios, kind, payload, pools, access_log, f)
            gb = stored_gb(kind, n, sizes, retention_s)
            month[f"{kind}|{n}"] = {"kind": kind, **monthly.bill_for(n, b, floor, gb), "stored_gb": gb,
                                    "per_million_on_demand": b["total_on_demand"], "formation": f}
    lead = {"gb_per_million": 1e6 * (sizes["record"] + sizes["timer"]) / 2**30}
    lead["usd_per_million"] = lead["gb_per_million"] * monthly.storage_per_gb_month()
    lead["usd_per_million_without_pitr"] = lead["gb_per_million"] * monthly.storage_per_gb_month(pitr=False)
    return {"rates": list(RATES), "volumes": list(VOLUMES), "per_million": per_million, "monthly": month,
            "targets": judge(per_million),
            "stored_bytes": sizes, "lead_month": lead, "long_lead_days": LONG_LEAD_DAYS, "retention_s": retention_s,
            "kms": monthly.kms_key_monthly(), "rest_methods": monthly.api_methods(), "formations": forms}


def _totals(b: dict) -> dict:
    return {"total_on_demand": b["total_on_demand"], "total_provisioned": b["total_provisioned"],
            "groups": b["groups"], "dispatcher_ms": b["durations"].get("dispatcher", (None, ""))[0]}


def judge(per_million: dict) -> list[dict]:
    """Each target against its cells of the per-million table: met only if every cell it names is within
    it. ``cause``: the bill's groups, largest first, and how many of them alone reach the limit."""
    out = []
    for what, kind, columns, mode, limit in TARGETS:
        cells = per_million.get(kind)
        if not cells:
            continue
        judged = {col: cells[col] for col in (columns or cells)}
        key = f"total_{mode}"
        worst_col = max(judged, key=lambda col: judged[col][key])
        usd = "usd_od" if mode == "on_demand" else "usd_prov"
        groups = sorted(((g, v[usd]) for g, v in judged[worst_col]["groups"].items()), key=lambda gv: -gv[1])
        running, alone = 0.0, None
        for i, (_, v) in enumerate(groups):
            running += v
            if running > limit and alone is None:
                alone = i + 1
        out.append({"what": what, "kind": kind, "mode": mode, "limit": limit,
                    "values": {col: c[key] for col, c in judged.items()}, "worst": worst_col,
                    "met": all(c[key] <= limit for c in judged.values()), "groups": groups, "alone": alone})
    return out
