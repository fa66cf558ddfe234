"""What a month costs: the idle floor, storage and point-in-time recovery, a customer managed KMS key,
and the monthly bill at a volume, beside EventBridge Scheduler's.

Nothing here measures anything: the per-timer bills come from ``bench.costmodel`` (measured in the
engine, the dispatcher's batches simulated), the prices from ``bench.pricing.PRICES``, and the
construct's choices that set a fixed cost (its routes, its metrics, its provisioned capacity) from the
runtime's contract and the construct's source.
"""

from __future__ import annotations

import ast
from typing import Any

from .common import ROOT
from .pricing import PRICES, SECONDS_PER_MONTH

from scheduler_runtime.core import contract  # noqa: E402  (bench.common puts lambda/ on the path)

IDLE_POLLERS = 5  # the SQS mapping's pollers while the queue is empty (its start concurrency)
LONG_POLL_S = 20  # each idle poller's ReceiveMessage waits this long (the mapping's long polling)
REST_METRICS_PER_METHOD = ("Count", "4XXError", "5XXError", "Latency", "IntegrationLatency")
SQS_KEY_PRINCIPALS = ("api", "enqueuer", "dispatcher")
"""The roles that send to or receive from the delayer queue: each asks KMS for a data key (and SQS
decrypts it) at most once per reuse period while it keeps using the queue."""


def construct_constant(module: str, name: str) -> Any:
    """A module-level constant of the construct's source, read without importing it (no CDK load)."""
    tree = ast.parse((ROOT / "src" / "cdk_delayed_scheduler" / module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not found in {module}")


def api_methods() -> int:
    """Methods the REST API deploys: one per route of the runtime's contract."""
    return len(contract.ROUTES)


def idle_floor(sweep: dict, door: str = "http", shard_count: int = 16) -> dict:
    """What runs or exists whatever the volume, per month (30 days), itemised with its assumption.

    ``sweep``: ``empty_ms`` (billed ms of a sweep that claims nothing, measured) and ``queries``
    (Query calls per sweep, measured; one per shard when nothing is due). Items marked on demand or
    provisioned apply to that billing mode only.
    """
    p = PRICES
    sweeps = SECONDS_PER_MONTH // 60  # one sweep a minute
    queries = int(round(sweeps * sweep.get("queries", shard_count)))
    idle_receives = IDLE_POLLERS * (60 // LONG_POLL_S) * 60 * 24 * 30
    pings = SECONDS_PER_MONTH // (contract.DISPATCHER_KEEP_WARM_EVERY_MINUTES * 60)
    u = p["ddb_prov_utilisation"]
    items = [
        ("sweeper invocations", f"{sweeps:,} a month (one a minute)", sweeps * p["lambda_per_million_requests"] / 1e6),
        ("sweeper duration", f"{sweep.get('empty_ms', 0):.0f} ms per empty sweep (measured), "
         f"{p['lambda_memory_mb']['sweeper']} MB",
         sweeps * sweep.get("empty_ms", 0) / 1000 * p["lambda_memory_mb"]["sweeper"] / 1024 * p["lambda_arm_per_gb_second"]),
        ("sweeper Queries, on demand", f"{queries:,} (one per shard per sweep, 0.5 RRU each)",
         queries * 0.5 * p["ddb_od_per_million_rru"] / 1e6),
        ("sweeper Queries, provisioned", f"about {queries * 0.5 / SECONDS_PER_MONTH:.2f} RCU at {u * 100:.0f} %",
         queries * 0.5 * p["ddb_prov_rcu_hour"] / 3600 / u),
        ("dispatcher keep-warm pings", f"{pings:,} a month (one every {contract.DISPATCHER_KEEP_WARM_EVERY_MINUTES} "
         f"minutes, the construct's dispatcher_keep_warm), 1 ms billed each (answered at once), "
         f"{p['lambda_memory_mb']['dispatcher']} MB",
         pings * (p["lambda_per_million_requests"] / 1e6
                  + 0.001 * p["lambda_memory_mb"]["dispatcher"] / 1024 * p["lambda_arm_per_gb_second"])),
        ("SQS mapping idle long polls", f"about {idle_receives:,} empty receives ({IDLE_POLLERS} pollers, "
         f"{LONG_POLL_S} s polls)", idle_receives * p["sqs_per_million_requests"] / 1e6),
        (f"custom metric {contract.LATENESS_METRIC} (EMF)", "1 metric (dimensions Service, FunctionName), in any month "
         f"with a delivery; {contract.FAILED_ATTEMPTS_METRIC} and {contract.SWEEPS_STOPPED_EARLY_METRIC} bill only in "
         "a month they are emitted", p["cw_metric_month"]),
    ]
    if door == "rest":
        n = api_methods() * len(REST_METRICS_PER_METHOD)
        items.append(("REST API detailed metrics", f"{n} metrics: {api_methods()} methods (the contract's routes) x "
                      f"{len(REST_METRICS_PER_METHOD)} ({', '.join(REST_METRICS_PER_METHOD)}); the construct sets "
                      "metricsEnabled", n * p["cw_metric_month"]))
    elif door == "http":
        items.append(("HTTP API detailed metrics", "off by default (the API-level metrics are free)", 0.0))
    od = sum(v for k, _, v in items if "provisioned" not in k)
    prov = sum(v for k, _, v in items if "on demand" not in k)
    return {"door": door, "items": [{"item": k, "assumption": a, "usd": v} for k, a, v in items],
            "total_on_demand": od, "total_provisioned": prov}


def kms_key_monthly(principals: tuple = SQS_KEY_PRINCIPALS) -> dict:
    """A customer managed key (the construct's ``encryption_key``, for the table and both queues): the
    key, and the SQS data-key requests of a queue in use all month, at most one GenerateDataKey or
    Decrypt per principal and reuse period. DynamoDB's own requests for the table key are not counted:
    AWS does not publish how many it makes (it caches the key; not a request per item)."""
    p = PRICES
    requests = len(principals) * SECONDS_PER_MONTH / p["sqs_kms_data_key_reuse_s"]
    return {"key": p["kms_key_month"], "requests": requests,
            "requests_usd": requests / 10_000 * p["kms_per_10k_requests"],
            "total": p["kms_key_month"] + requests / 10_000 * p["kms_per_10k_requests"]}


def storage_per_gb_month(pitr: bool = True) -> float:
    """USD per GB stored for a month: the table's storage, plus continuous backups when ``pitr`` (the
    construct's default)."""
    return PRICES["ddb_storage_gb_month"] + (PRICES["ddb_pitr_gb_month"] if pitr else 0.0)


INDEXES_ALWAYS_THERE = 1
"""The table's indexes whatever its props: the sparse group index (``listing=True`` adds another, not priced here)."""


def eventbridge_scheduler_monthly(invocations: float) -> float:
    """EventBridge Scheduler's bill for a month of ``invocations``: the first free, the rest at its price."""
    billed = max(0.0, invocations - PRICES["eventbridge_scheduler_free_per_month"])
    return billed * PRICES["eventbridge_scheduler_per_million"] / 1e6


def provisioned_units(per_million: dict, floor: dict, timers: float) -> dict:
    """Provisioned DynamoDB for a month of ``timers``: each capacity (write, read) is what the timers and
    the sweeps consume at the stated utilisation, or the construct's capacity, whichever is higher
    (``DEFAULT_CAPACITY_UNITS``: auto scaling is taken to keep it as its minimum), plus the same minimum for
    the group index every table has (``INDEXES_ALWAYS_THERE``): ungrouped timers never use it, but a provisioned
    index is paid for all the same."""
    p = PRICES
    least = float(construct_constant("_wiring.py", "DEFAULT_CAPACITY_UNITS"))
    hours = SECONDS_PER_MONTH / 3600
    out = {}
    for unit, hour_price in (("WRU", p["ddb_prov_wcu_hour"]), ("RRU", p["ddb_prov_rcu_hour"])):
        used = sum(r["usd_prov"] for r in per_million["rows"] if r["unit"] == unit) * timers / 1e6
        if unit == "RRU":
            used += next(i["usd"] for i in floor["items"] if i["item"] == "sweeper Queries, provisioned")
        out[unit] = max(used, least * hour_price * hours) + INDEXES_ALWAYS_THERE * least * hour_price * hours
    return out


def bill_for(timers: float, per_million: dict, floor: dict, stored_gb: float, pitr: bool = True) -> dict:
    """The month's bill for ``timers`` (or occurrences): ``per_million`` a ``pricing.bill`` result at the
    batch formation of that volume's rate, ``floor`` an :func:`idle_floor`, ``stored_gb`` the table's
    mean size over the month. On demand: the per-timer bill, the floor and storage. Provisioned: the
    same with DynamoDB's capacity from :func:`provisioned_units` in place of its per-timer lines."""
    k = timers / 1e6
    storage = stored_gb * storage_per_gb_month(pitr)
    on_demand = per_million["total_on_demand"] * k + floor["total_on_demand"] + storage
    ddb_prov = sum(r["usd_prov"] for r in per_million["rows"] if r["unit"] in ("WRU", "RRU")) * k
    floor_prov = floor["total_provisioned"] - next(
        i["usd"] for i in floor["items"] if i["item"] == "sweeper Queries, provisioned")
    units = provisioned_units(per_million, floor, timers)
    provisioned = per_million["total_provisioned"] * k - ddb_prov + floor_prov + sum(units.values()) + storage
    return {"timers": timers, "on_demand": on_demand, "provisioned": provisioned, "storage": storage,
            "floor_on_demand": floor["total_on_demand"], "provisioned_units": units,
            "eventbridge_scheduler": eventbridge_scheduler_monthly(timers)}
